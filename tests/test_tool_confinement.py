"""The server's own tools stay inside the session's cwd, never block, and never stall the server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic
from lsp_client import server
from tcp_peer import Peer, Server
from test_agent import answer, args, entries, envvars, finished, tool_use

from pi_server.agent.tools import run_local, run_tool
from pi_server.redact import RedactSecrets

SECRET = "TOP-SECRET-OUTSIDE-0451"


@pytest.fixture
def box(tmp_path: Path) -> Path:
    """A cwd with every trap: symlinks out, a FIFO, a socket-free device link, ignored files."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    cwd = tmp_path / "cwd"
    (cwd / "src").mkdir(parents=True)
    (cwd / "src" / "ok.txt").write_text("fine line\n")
    (cwd / "link-file.txt").symlink_to(outside / "secret.txt")
    (cwd / "link-dir").symlink_to(outside)
    (cwd / "src" / "deep-link").symlink_to("../../outside")
    (cwd / "proc-link").symlink_to("/proc/self/environ")
    (cwd / "zero").symlink_to("/dev/zero")
    os.mkfifo(cwd / "pipe")
    os.mkfifo(cwd / "src" / "pipe.txt")
    return cwd


def _text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


def _run(name: str, a: dict[str, Any], cwd: Path) -> tuple[str, bool, float]:
    start = time.monotonic()
    result, is_error = run_local(name, a, str(cwd), timeout=10)
    return _text(result), is_error, time.monotonic() - start


ESCAPES = [
    ("read", {"path": "link-file.txt"}),
    ("read", {"path": "link-dir/secret.txt"}),
    ("read", {"path": "../outside/secret.txt"}),
    ("read", {"path": "src/../../outside/secret.txt"}),
    ("read", {"path": "SECRET_ABS"}),
    ("read", {"path": "/proc/self/environ"}),
    ("read", {"path": "proc-link"}),
    ("read", {"path": "/etc/passwd"}),
    ("read", {"path": "~/.bashrc"}),
    ("ls", {"path": "link-dir"}),
    ("ls", {"path": ".."}),
    ("ls", {"path": "/proc/self"}),
    ("ls", {"path": "src/deep-link"}),
    ("grep", {"pattern": "SECRET", "path": "link-file.txt"}),
    ("grep", {"pattern": "SECRET", "path": "link-dir"}),
    ("grep", {"pattern": "SECRET", "path": ".."}),
    ("grep", {"pattern": "SECRET", "path": "SECRET_ABS"}),
    ("grep", {"pattern": "HOME", "path": "/proc/self/environ"}),
    ("find", {"pattern": "*", "path": "link-dir"}),
    ("find", {"pattern": "*", "path": "../outside"}),
    ("find", {"pattern": "*", "path": "/proc"}),
]


def test_every_tool_refuses_paths_out_of_the_cwd(box: Path) -> None:
    secret_abs = str(box.parent / "outside" / "secret.txt")
    for name, a in ESCAPES:
        a = {k: (secret_abs if v == "SECRET_ABS" else v) for k, v in a.items()}
        text, is_error, _ = _run(name, a, box)
        assert is_error and "outside the session's working directory" in text, (name, a, text)
        assert SECRET not in text


def test_searches_do_not_follow_symlinks_out(box: Path) -> None:
    for pattern in ("SECRET", "TOP", "."):
        text, is_error, _ = _run("grep", {"pattern": pattern}, box)
        assert SECRET not in text and "HOME=" not in text, text
    text, is_error, _ = _run("grep", {"pattern": "fine"}, box)
    assert not is_error and text == "src/ok.txt:1: fine line"
    text, _, _ = _run("grep", {"pattern": "fine", "context": 2}, box)
    assert text == "src/ok.txt:1: fine line\nsrc/ok.txt-2- "  # pi splits the text, final newline included
    text, is_error, _ = _run("find", {"pattern": "*"}, box)
    assert not is_error and text == "src/ok.txt", text  # no links, no FIFOs, nothing outside
    text, _, _ = _run("find", {"pattern": "secret.txt"}, box)
    assert text == "No files found matching pattern"


def test_fifos_and_devices_never_block(box: Path) -> None:
    for name, a in [
        ("read", {"path": "pipe"}),
        ("read", {"path": "src/pipe.txt"}),
        ("grep", {"pattern": "x", "path": "pipe"}),
        ("grep", {"pattern": "x", "path": "src/pipe.txt"}),
        ("ls", {"path": "pipe"}),
        ("find", {"pattern": "*", "path": "pipe"}),
    ]:
        text, is_error, took = _run(name, a, box)
        assert is_error and took < 5, (name, a, text, took)
    text, is_error, took = _run("grep", {"pattern": "x", "glob": "*.txt"}, box)
    assert not is_error and text == "No matches found" and took < 5
    text, _, _ = _run("ls", {}, box)
    assert "pipe" in text.split("\n")  # listed by name, never opened


def test_gitignore_is_honoured(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.js").write_text("needle\n")
    (tmp_path / "debug.log").write_text("needle\n")
    (tmp_path / "main.js").write_text("needle\n")
    text, _, _ = _run("find", {"pattern": "*.js"}, tmp_path)  # pi's fd: --no-require-git
    assert text == "main.js"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # pi's rg: inside a repository
    text, _, _ = _run("grep", {"pattern": "needle"}, tmp_path)
    assert text == "main.js:1: needle"


def test_a_header_without_cwd_gets_no_tools_anywhere() -> None:
    for name in ("read", "ls", "grep", "find"):
        result, is_error = run_local(name, {"path": "/etc/passwd", "pattern": "root"}, "")
        assert is_error and "no working directory" in _text(result)
        assert "root:" not in _text(result)


def _rg_children() -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                st = (d / "stat").read_text()
            except OSError:
                continue
            comm, rest = st[st.index("(") + 1 : st.rindex(")")], st[st.rindex(")") + 2 :].split()
            if comm == "rg" and int(rest[1]) == os.getpid() and rest[0] != "Z":
                out.append(int(d.name))
    return out


def test_a_search_is_bounded_in_time_and_killed_when_cancelled(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(("a" * 60 + "b\n") * 400_000)
    result, is_error = run_local("grep", {"pattern": r"(\w+\s*){1,30}\d"}, str(tmp_path), timeout=0.001)
    assert is_error and "timed out" in _text(result)

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(run_tool("grep", {"pattern": r"(\w+\s*){1,30}\d"}, str(tmp_path)))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    time.sleep(0.5)
    assert _rg_children() == []


def test_secrets_are_redacted_from_every_record() -> None:
    key = "sk-ant-api03-abcdefgh\nTAIL-OF-KEY-1234"
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    h = Keep()
    h.addFilter(RedactSecrets([key]))
    log = logging.getLogger("httpcore.test-redaction")
    log.addHandler(h)
    log.propagate = False
    try:
        log.warning("Illegal header value %r", b"Bearer " + key.encode())
        try:
            raise ValueError(f"bad header {key!r}")
        except ValueError:
            log.exception("request failed")
    finally:
        log.removeHandler(h)
    assert len(records) == 2
    for r in records:
        assert "abcdefgh" not in r and "TAIL-OF-KEY" not in r and "[redacted]" in r, r


def _no_cwd_session(root: Path) -> Path:
    d = root / "--nowhere--"
    d.mkdir(parents=True)
    f = d / "2026-11-30T09-00-00-000Z_01a22bae-b680-72e6-9bd0-000000000001.jsonl"
    header = {"type": "session", "version": 3, "id": "01a22bae-b680-72e6-9bd0-000000000001", "timestamp": "2026-11-30T09:00:00.000Z"}
    f.write_text(json.dumps(header) + "\n")
    return f


async def test_a_session_without_cwd_runs_its_turn_with_no_tools(tmp_path: Path, env: dict[str, Any]) -> None:  # noqa: F811
    session = _no_cwd_session(Path(env["root"]))
    with FakeAnthropic([tool_use("read", {"path": "/etc/passwd"}), answer("done")]) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"session": str(session), "text": "read /etc/passwd"})
            await finished(c, r["turnId"])
    assert "tools" not in fake.requests[0]["body"] or fake.requests[0]["body"]["tools"] == []
    results = [e["message"] for e in entries(str(session)) if e.get("message", {}).get("role") == "toolResult"]
    assert len(results) == 1 and results[0]["isError"] is True
    assert "root:" not in json.dumps(results)


def _timed_get_tree(port: int, session: str, stop: threading.Event, samples: list[tuple[float, float]]) -> None:
    b = Peer(port)
    assert "result" in (b.initialize() or {})
    i = 0
    while not stop.is_set():
        i += 1
        t0 = time.monotonic()
        b.request(100 + i, "pi/getTree", {"session": session})
        assert "result" in (b.reply(100 + i) or {})
        samples.append((t0, time.monotonic() - t0))
    b.close()


def _turn_events(a: Peer, turn: str) -> list[tuple[float, dict[str, Any]]]:
    """Agent events of one turn, each with the time it arrived, up to agent_end."""
    out: list[tuple[float, dict[str, Any]]] = []
    while True:
        msg = a.read()
        assert msg is not None
        p = msg.get("params") or {}
        if msg.get("method") == "pi/agentEvent" and p.get("turnId") == turn:
            out.append((time.monotonic(), p["event"]))
            if p["event"]["type"] == "agent_end":
                return out


def test_a_catastrophic_regex_does_not_stall_another_client(tmp_path: Path, env: dict[str, Any]) -> None:  # noqa: F811
    Path(env["cwd"], "bomb.txt").write_text(("a" * 28 + "!\n") * 700_000)
    bombs = [tool_use("grep", {"pattern": "(a+)+$"}), tool_use("grep", {"pattern": "(a|aa)+$"}, "toolu_2")]
    with FakeAnthropic([answer("warm"), *bombs, answer("none")]) as fake:
        srv = Server(tmp_path, env=envvars(env, fake.url))
        try:
            a = Peer(srv.port, timeout=60)
            assert "result" in (a.initialize() or {})
            a.request(2, "pi/listSessions", {})
            session = (a.reply(2) or {})["result"]["sessions"][0]["session"]
            a.request(3, "pi/prompt", {"cwd": env["cwd"], "text": "warm up"})
            _turn_events(a, (a.reply(3) or {})["result"]["turnId"])
            stop, samples = threading.Event(), []
            timer = threading.Thread(target=_timed_get_tree, args=(srv.port, session, stop, samples))
            timer.start()
            time.sleep(0.5)
            a.request(4, "pi/prompt", {"cwd": env["cwd"], "text": "find it"})
            evs = _turn_events(a, (a.reply(4) or {})["result"]["turnId"])
            stop.set()
            timer.join(30)
        finally:
            srv.close()
    starts = [t for t, e in evs if e["type"] == "tool_execution_start"]
    ends = [(t, e) for t, e in evs if e["type"] == "tool_execution_end"]
    assert len(starts) == len(ends) == 2
    assert [e["isError"] for _, e in ends] == [False, False]
    # "alpha" ends in a+; no line of the bomb does (each ends in "!")
    assert ends[0][1]["result"]["content"][0]["text"] == "notes.txt:1: alpha\nnotes.txt:2: beta"
    during = [lat for t0, lat in samples for s, (e, _) in zip(starts, ends, strict=True) if s <= t0 <= e]
    print(f"getTree during the greps: {len(during)} answers, max {max(during or [0]) * 1000:.1f} ms")
    assert during, "no getTree answered while the greps ran"
    assert max(during) < 0.1


async def test_an_api_key_with_a_newline_stays_out_of_the_verbose_log(env: dict[str, Any]) -> None:  # noqa: F811
    key = "sk-ant-api03-abcdefgh\nTAIL-OF-KEY-1234"
    with FakeAnthropic([answer("never")]) as fake:
        async with server(*args(env), "-v", env={**envvars(env, fake.url), "ANTHROPIC_API_KEY": key}) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "hi"})
            await finished(c, r["turnId"])
    log = Path(env["log"]).read_text()
    assert "DEBUG" in log  # the verbose log was written
    assert "abcdefgh" not in log and "TAIL-OF-KEY" not in log
