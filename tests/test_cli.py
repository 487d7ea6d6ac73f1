"""The command line, run as a user runs it: a real process, real files."""

from __future__ import annotations

import json
import os
import re
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
