"""pi 1.6.0's interactive TUI under tmux, against the loopback fake Anthropic API, seen by pi-server
through a real connector (tests/pi_tui.py drives the pane)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import node22
from fake_anthropic import FakeAnthropic
from live_pi import EXTENSION, live_env, stop_daemon
from lsp_client import server
from pi_tui import TmuxPi, agent_dir

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _entries(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def _session_files(agent: Path) -> list[Path]:
    return sorted((agent / "sessions").rglob("*.jsonl"))


@pytest.fixture
def box(tmp_path: Path) -> Any:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    state = tmp_path / "state"
    yield {"home": home, "project": project, "state": state}
    args = ["--sessions-dir", str(home / "agent" / "sessions"), "--state-dir", str(state)]
    subprocess.run([sys.executable, "-m", "pi_server", "daemon", "stop", *args], capture_output=True, timeout=60)


async def test_a_prompt_typed_in_pi_tui_is_answered_on_screen_and_listed_by_the_server(box) -> None:
    replies = [("text", "Hello from the fake, first answer."), ("text", "Second answer, on the same branch.")]
    with FakeAnthropic(replies) as fake:
        agent = agent_dir(box["home"], fake.url)
        with TmuxPi(node22(), box["home"], box["project"]) as pi:
            pi.wait_text("claude-sonnet-4-5")  # the footer: pi is up with the fake's model
            pi.submit("Say hi, please.")
            pi.wait_text("Hello from the fake, first answer.")
            pi.submit("And once more.")
            screen = pi.wait_text("Second answer, on the same branch.")
            assert screen.index("Say hi, please.") < screen.index("And once more.")
            (file,) = _session_files(agent)
            entries = _entries(file)
            assert pi.alive()
        assert [m["body"]["messages"][-1]["content"][0]["text"] for m in fake.requests] == [
            "Say hi, please.",
            "And once more.",
        ]
    # the file pi wrote, as pi-server reads it through a connector and its daemon
    argv = ["--sessions-dir", str(agent / "sessions"), "--state-dir", str(box["state"])]
    async with server(*argv) as c:
        listed = (await c.call("pi/listSessions", {}))["sessions"]
        assert [s["session"] for s in listed] == [str(file)]
        assert listed[0]["leafId"] == entries[-1]["id"]
        assert listed[0]["firstMessage"] == "Say hi, please."
        tree = await c.call("pi/getTree", {"session": str(file)})
        assert [r["title"] for r in tree["rows"] if r.get("role") in ("user", "assistant")] == [
            "user: Say hi, please.",
            "assistant: Hello from the fake, first answer.",
            "user: And once more.",
            "assistant: Second answer, on the same branch.",
        ]


def test_closing_the_harness_ends_pi(box, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        agent_dir(box["home"], fake.url)
        pi = TmuxPi(node22(), box["home"], box["project"])
        try:
            pi.wait_text("claude-sonnet-4-5")
            pid = pi.pid
            # pi's node, which names its process "pi"
            assert Path(f"/proc/{pid}/exe").resolve() == Path(node22()).resolve()
            assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == b"pi"
        finally:
            pi.close()
        assert not pi.alive()
        _wait_gone(pid)


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and b"zombie" not in _state(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"pi ({pid}) still runs after the tmux server ended")
        time.sleep(0.05)


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/status").read_bytes().lower()
    except OSError:
        return b"zombie"


async def test_a_branch_switch_from_an_editor_shows_in_pi_tui_and_pis_next_turn_continues_there(tmp_path: Path) -> None:
    replies = [
        ("text", "First answer, on the first branch."),
        ("text", "Second answer, the branch we leave."),
        ("text", "## Goal\nSummary of the branch left behind."),
        ("text", "Third answer, after the switch."),
    ]
    with FakeAnthropic(replies) as fake:
        env = live_env(tmp_path, fake.url)
        home = Path(env["HOME"])
        pi = TmuxPi(node22(), home, tmp_path / "project", args=["-e", str(EXTENSION)], env=env)
        try:
            pi.wait_text("claude-sonnet-4-5")
            pi.submit("First.")
            pi.wait_text("First answer, on the first branch.")
            pi.submit("Second.")
            pi.wait_text("Second answer, the branch we leave.")
            async with server(env=env) as c:
                info = await _live(c, pi.pid)
                session = info["session"]
                first_answer = next(
                    e["id"] for e in _entries(Path(session)) if e.get("message", {}).get("role") == "assistant"
                )
                res = await c.call("pi/switchBranch", {"session": session, "targetId": first_answer, "summarize": True})
                assert res["queued"] is False and res["summaryEntryId"]
                # pi's screen: the branch left is gone, pi's summary of it is there
                screen = pi.wait_screen(
                    lambda s: "Second answer" not in s and "Branch summary" in s, what="pi's screen on the new branch"
                )
                assert screen.index("First answer, on the first branch.") < screen.index("Branch summary")
                pi.submit("Third.")
                pi.wait_text("Third answer, after the switch.")
                updated = await _live(c, pi.pid, lambda live: live["leafId"] != res["summaryEntryId"])
            # pi's next turn sent the new branch's context: the first exchange, the summary, the new prompt
            texts = [_text(m) for m in fake.requests[-1]["body"]["messages"]]
            assert "Second." not in texts and texts[0] == "First." and texts[-1] == "Third.", texts
            entries = {e["id"]: e for e in _entries(Path(session))}
            third = entries[updated["live"]["leafId"]]
            question = entries[third["parentId"]]
            assert question["message"]["content"][0]["text"] == "Third."
            assert question["parentId"] == res["summaryEntryId"]
            assert entries[res["summaryEntryId"]]["parentId"] == first_answer
        finally:
            pi.close()
            stop_daemon(env)


async def _live(c: Any, pid: int, pred: Any = lambda live: True, timeout: float = 20.0) -> dict[str, Any]:
    """pi's session as pi-server lists it, once it is live with `pid` and `pred` holds."""
    deadline = time.monotonic() + timeout
    while True:
        for info in (await c.call("pi/listSessions", {}))["sessions"]:
            live = info.get("live")
            if live and live["pid"] == pid and pred(live):
                return info
        assert time.monotonic() < deadline, "pi's session never listed live"
        await asyncio.sleep(0.05)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")
