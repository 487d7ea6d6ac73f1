"""The command line, run as a user runs it: a real process, real files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import load_json

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_server", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_ls_uses_bundled_samples_without_a_store(tmp_path: Path) -> None:
    r = run("ls", "--json", env={"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": ""})
    assert r.returncode == 0, r.stderr
    assert "bundled samples" in r.stderr
    sessions = json.loads(r.stdout)["sessions"]
    assert len(sessions) == 3 and all(s["session"].startswith(str(SAMPLES)) for s in sessions)
    names = [s.get("name") for s in sessions]
    assert "orders repository refactor" in names


def test_ls_reads_pi_coding_agent_dir(oracle: dict[str, Any], tmp_path: Path) -> None:
    sessions_root = Path(oracle["files"][0]["file"]).parent.parent
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "sessions").symlink_to(sessions_root)
    r = run("ls", "--json", env={"PI_CODING_AGENT_DIR": str(agent)})
    assert r.returncode == 0 and "bundled" not in r.stderr
    assert len(json.loads(r.stdout)["sessions"]) == sum(1 for f in oracle["files"] if f["kind"] != "fixture")
    text = run("ls", "--sessions-dir", str(sessions_root))
    assert text.returncode == 0 and "msgs" in text.stdout


def test_tree_text_draws_pi_rows(oracle: dict[str, Any], pi16_answers) -> None:
    f = next(f for f in oracle["files"] if f["kind"] == "generated")
    exp = load_json(f["expected"])
    # the same case answered by pi 1.6.0 (it titles some tool results otherwise)
    case = next(
        c16
        for c, c16 in zip(exp["outlines"], pi16_answers(f)["outlines"], strict=True)
        if c["filter"] == "no-tools" and not c["search"] and not c["folded"] and c["leafId"] == exp["leafId"]
    )
    r = run("tree", f["file"], "--filter", "no-tools", env={"HOME": "/home/oracle"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]  # \n only: titles hold U+2028/U+2029
    assert lines[:-1] == [re.sub("[\ud800-\udfff]", "\ufffd", row["line"]) for row in case["rows"]]
    js = json.loads(run("tree", f["file"], "--filter", "no-tools", "--json", "--offset", "2", "--limit", "3").stdout)
    assert js["total"] == len(case["rows"]) and js["offset"] == 2
    assert [row["id"] for row in js["rows"]] == [row["id"] for row in case["rows"][2:5]]


def test_tree_without_file_shows_a_sample(tmp_path: Path) -> None:
    r = run("tree", env={"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": ""})
    assert r.returncode == 0 and "bundled sample" in r.stderr and "• " in r.stdout


def test_context_formats(oracle: dict[str, Any], pi16_answers) -> None:
    f = next(f for f in oracle["files"] if f["kind"] == "generated")
    exp = load_json(f["expected"])
    n, ctx = next(
        (n, c) for n, c in enumerate(exp["contexts"]) if c["leafId"] not in ("__default__", None, "__missing__")
    )
    tokens16 = pi16_answers(f)["contexts"][n]["tokens"]  # pi 1.6.0 counts images in user messages
    out = json.loads(run("context", f["file"], "--leaf", ctx["leafId"]).stdout)
    assert out["messages"] == ctx["agent"] and out["tokens"] == tokens16 and out["leafId"] == ctx["leafId"]
    assert (
        json.loads(run("context", f["file"], "--leaf", ctx["leafId"], "--format", "llm").stdout)["messages"]
        == ctx["llm"]
    )
    anth = json.loads(run("context", f["file"], "--format", "anthropic").stdout)
    assert anth["request"]["model"].startswith("claude") and anth["messages"] == anth["request"]["messages"]
    assert json.loads(run("context", f["file"], "--format", "openai").stdout)["messages"] is not None
    empty = json.loads(run("context", f["file"], "--before-first").stdout)
    assert empty["messages"] == [] and empty["leafId"] is None and empty["thinkingLevel"] == "off"


def test_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    sample = next(SAMPLES.rglob("*.jsonl"))
    cases = [
        ("tree", str(tmp_path / "missing.jsonl")),
        ("context", str(tmp_path / "missing.jsonl")),
        ("tree", str(notes)),
        ("context", str(notes)),
        ("tree", str(tmp_path)),
        ("tree", str(sample), "--leaf", "nope"),
        ("context", str(sample), "--leaf", "nope"),
    ]
    for args in cases:
        r = run(*args)
        assert r.returncode == 2, args
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_no_subcommand_serves_lsp_over_stdio(tmp_path: Path) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "capabilities": {},
                "initializationOptions": {"sessionDirs": [str(SAMPLES)], "stateDir": str(tmp_path)},
            },
        }
    )
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    data = "".join(f"Content-Length: {len(b.encode())}\r\n\r\n{b}" for b in (body, exit_))
    r = subprocess.run([sys.executable, "-m", "pi_server"], input=data.encode(), capture_output=True, timeout=60)
    assert r.returncode == 0
    header, _, payload = r.stdout.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", header).group(1))
    reply = json.loads(payload[:length])
    assert reply["id"] == 1 and reply["result"]["capabilities"]["experimental"]["piSessions"]["protocolVersion"] == 1


def test_stdio_flag_of_language_clients_is_accepted(tmp_path: Path) -> None:
    # vscode-languageclient appends --stdio (and --clientProcessId for some transports) to the command
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    data = "".join(f"Content-Length: {len(b.encode())}\r\n\r\n{b}" for b in (body, exit_))
    for args in (
        ["--sessions-dir", str(SAMPLES), "--state-dir", str(tmp_path), "--stdio"],
        ["serve", "--stdio", f"--clientProcessId={os.getpid()}", "--sessions-dir", str(SAMPLES)],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "pi_server", *args], input=data.encode(), capture_output=True, timeout=60
        )
        assert r.returncode == 0, (args, r.stderr.decode())
        assert b'"protocolVersion": 1' in r.stdout.replace(b'"protocolVersion":1', b'"protocolVersion": 1'), args



def _home(tmp_path: Path, pi: bool) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if pi:
        (home / ".pi").mkdir(exist_ok=True)
    return {"HOME": str(home), "PI_CODING_AGENT_DIR": ""}


def test_agent_dir_that_points_at_nothing_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-agent"
    a_file = tmp_path / "agent.txt"
    a_file.write_text("x")
    sessions = tmp_path / "agent" / "sessions"
    shutil.copytree(SAMPLES, sessions)
    for var, named in [
        (str(missing), str(missing)),
        (str(a_file), str(a_file)),
        (str(sessions), f"PI_CODING_AGENT_DIR={tmp_path / 'agent'}"),  # the sessions folder, not its parent
    ]:
        for cmd in (["ls"], ["ls", "--json"], ["tree"]):
            r = run(*cmd, env={**_home(tmp_path, pi=False), "PI_CODING_AGENT_DIR": var})
            assert r.returncode == 2, (var, cmd, r.stderr)
            assert r.stdout == "" and "bundled" not in r.stderr, r.stderr
            assert r.stderr.startswith("pi-server: ") and len(r.stderr.splitlines()) == 1
            assert named in r.stderr, r.stderr
    # its parent is what pi reads: that works
    ok = run("ls", "--json", env={**_home(tmp_path, pi=False), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")})
    assert ok.returncode == 0 and len(json.loads(ok.stdout)["sessions"]) == 3 and ok.stderr == ""


def test_samples_only_when_nothing_points_anywhere(tmp_path: Path) -> None:
    empty_agent = tmp_path / "fresh-agent"
    empty_agent.mkdir()  # pi's agent folder before its first session
    for env in (
        {**_home(tmp_path, pi=False), "PI_CODING_AGENT_DIR": str(empty_agent)},
        _home(tmp_path, pi=True),  # ~/.pi without sessions
    ):
        r = run("ls", env=env)
        assert r.returncode == 0 and r.stdout == "", r.stderr
        assert "bundled" not in r.stderr and r.stderr.startswith("pi-server: no sessions under "), r.stderr
        assert "sessions" in r.stderr.split("under ", 1)[1]
        t = run("tree", env=env)
        assert t.returncode == 2 and "bundled" not in t.stderr and t.stderr.startswith("pi-server: no sessions")
    bare = tmp_path / "bare"
    bare.mkdir()
    r = run("ls", env=_home(bare, pi=False))
    assert r.returncode == 0 and "bundled samples" in r.stderr and "no ~/.pi" in r.stderr


def test_tree_ids_are_what_leaf_and_fold_take(tmp_path: Path) -> None:
    sample = str(next(SAMPLES.rglob("*.jsonl")))
    rows = json.loads(run("tree", sample, "--json", "--filter", "all").stdout)["rows"]
    plain = run("tree", sample, "--filter", "all").stdout.splitlines()
    with_ids = run("tree", sample, "--filter", "all", "--ids").stdout.splitlines()
    assert len(with_ids) == len(plain) == len(rows) + 1
    for row, a, b in zip(rows, plain, with_ids, strict=False):
        # the id sits before the row's text, where pi puts a label
        cut = len(a) - len(row["title"]) - (len(f"[{row['label']}] ") if "label" in row else 0)
        assert b == a[:cut] + row["id"] + " " + a[cut:], (a, b)
    foldable = next(r["id"] for r in rows if r["foldable"])
    folded = run("tree", sample, "--filter", "all", "--fold", foldable)
    assert folded.returncode == 0 and len(folded.stdout.splitlines()) < len(plain)
    bad = run("tree", sample, "--fold", "nope")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("pi-server: no entry with id nope") and "--fold" in bad.stderr


def test_every_message_names_its_problem(tmp_path: Path) -> None:
    sample = str(next(SAMPLES.rglob("*.jsonl")))
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    nothing = run("ls", "--sessions-dir", str(SAMPLES), "--query", "zzqx nothing like this")
    assert nothing.returncode == 0 and nothing.stdout == ""
    assert nothing.stderr.startswith("pi-server: no session under ") and "matched the query" in nothing.stderr
    none = run("ls", "--sessions-dir", str(SAMPLES), "--limit", "0")
    assert none.returncode == 0 and none.stdout == "" and none.stderr == ""
    assert json.loads(run("ls", "--sessions-dir", str(SAMPLES), "--limit", "0", "--json").stdout) == {"sessions": []}
    cases = {
        ("ls", "--sessions-dir", str(a_file)): "not a directory",
        ("ls", "--sessions-dir", str(tmp_path / "missing")): "no such directory",
        ("tree", sample, "--leaf", ""): "--leaf is empty",
        ("context", sample, "--leaf", ""): "--leaf is empty",
        ("tree", sample, "--fold", ""): "--fold is empty",
        ("tree", sample, "--filter", "nope"): "invalid choice",
        ("ls", "--limit", "-1"): "must be 0 or more",
    }
    for args, says in cases.items():
        r = run(*args)
        assert r.returncode == 2 and r.stdout == "", (args, r.stderr)
        assert r.stderr.startswith("pi-server: ") and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert says in r.stderr, (args, r.stderr)


def _on_a_terminal(args: list[str], columns: int) -> str:
    """pi-server run with its stdout on a pseudo-terminal `columns` wide; what it printed."""
    import fcntl
    import pty
    import struct
    import termios

    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attrs = termios.tcgetattr(sub_fd)
    attrs[1] &= ~termios.ONLCR  # keep the \n the program wrote
    termios.tcsetattr(sub_fd, termios.TCSANOW, attrs)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.Popen([sys.executable, "-m", "pi_server", *args], stdout=sub_fd, stderr=subprocess.PIPE, env=env)
    os.close(sub_fd)
    out = bytearray()
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the terminal closed: the program is done
            break
        if not chunk:
            break
        out += chunk
    os.close(main_fd)
    assert p.wait(60) == 0, p.stderr.read() if p.stderr else ""
    return out.decode()


def test_long_rows_fit_the_terminal(tmp_path: Path) -> None:
    f = tmp_path / "long.jsonl"
    head = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    lines = [head]
    parent = None
    for i, text in enumerate(["short", "x" * 700, "漢字" * 300, "ok"]):
        e = {"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": f"2026-01-01T00:00:0{i}.000Z"}
        e["message"] = {"role": "user", "content": text, "timestamp": 0}
        lines.append(e)
        parent = e["id"]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    piped = run("tree", str(f), "--ids").stdout.splitlines()
    assert max(len(line) for line in piped) > 200  # a pipe gets whole rows
    shown = _on_a_terminal(["tree", str(f), "--ids"], 50).splitlines()
    assert len(shown) == len(piped)
    for full, cut in zip(piped, shown, strict=True):
        assert full.startswith(cut)
        width = sum(2 if "\u4e00" <= c <= "\u9fff" else 1 for c in cut)
        assert width <= 50 and (width >= 49 or cut == full), (cut, width)
