"""Live sessions with the real pi 1.6.0: pi in RPC mode with pi-server's extension (editors/pi),
the loopback fake Anthropic API, the daemon started by real connectors, a real LSP client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _have_pi16, node22
from fake_anthropic import FakeAnthropic, sse_blocks
from live_pi import Pi, live_env, stop_daemon
from lsp_client import Client, server

from pi_server.llm.convert import BRANCH_PREFIX
from pi_server.summaries.prompts import BRANCH_SUMMARY_PROMPT, SUMMARIZATION_SYSTEM_PROMPT

pytestmark = pytest.mark.skipif(not _have_pi16(), reason="pi 1.6.0 is not installed (npm ci)")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with FakeAnthropic() as fake:
        fake.default = ("text", "Hello from the fake.")
        env = live_env(tmp_path, fake.url)
        pis: list[Pi] = []

        def start_pi() -> Pi:
            pi = Pi(node22(), env, tmp_path / "project", tmp_path / "pi.log")
            pis.append(pi)
            return pi

        yield {"env": env, "fake": fake, "start_pi": start_pi, "tmp": tmp_path}
        for pi in pis:
            pi.close()
        stop_daemon(env)


@pytest.fixture
async def editor(world: dict[str, Any]) -> AsyncIterator[Client]:
    async with server(env=world["env"]) as c:
        yield c


async def live_session(c: Client, pi: Pi, timeout: float = 20.0) -> dict[str, Any]:
    """The SessionInfo of pi's session once the daemon lists it live."""
    deadline = time.monotonic() + timeout
    while True:
        for info in (await c.call("pi/listSessions", {}))["sessions"]:
            if info.get("live", {}).get("pid") == pi.pid:
                return info
        assert time.monotonic() < deadline, "pi's session never listed live"
        await asyncio.sleep(0.05)


def entries(session: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(session).read_text().splitlines()[1:] if line.strip()]


def node_of(tree: list[dict[str, Any]], entry_id: str) -> dict[str, Any] | None:
    stack = list(tree)
    while stack:
        n = stack.pop()
        if n["entry"]["id"] == entry_id:
            return n
        stack.extend(n["children"])
    return None


def user_texts(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


async def two_branches(c: Client, pi: Pi) -> tuple[str, str, str]:
    """pi answered "First." then "Second."; (session, the first answer's id, pi's leaf)."""
    pi.prompt("First.")
    pi.prompt("Second.")
    info = await live_session(c, pi)
    first_answer = next(
        e["id"] for e in entries(info["session"]) if e["type"] == "message" and e["message"]["role"] == "assistant"
    )
    return info["session"], first_answer, pi.leaf()


async def test_a_prompt_in_pi_is_listed_live(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    pi.prompt("Say hi.")
    info = await live_session(editor, pi)
    leaf = pi.leaf()
    assert info["live"] == {
        "pid": pi.pid,
        "leafId": leaf,
        "streaming": False,
        "model": "anthropic/claude-sonnet-4-5",
        "thinkingLevel": "off",
    }
    assert info["leafId"] == leaf
    tree = await editor.call("pi/getTree", {"session": info["session"]})
    assert tree["live"]["pid"] == pi.pid and tree["leafId"] == leaf


async def test_switch_with_summary_is_made_by_pi(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    fake = world["fake"]
    session, first_answer, _ = await two_branches(editor, pi)
    sent_before = len(fake.requests)
    r = await editor.call("pi/switchBranch", {"session": session, "targetId": first_answer, "summarize": True})
    assert r["queued"] is False and r["leafId"] == pi.leaf()
    written = entries(session)
    summary = next(e for e in written if e["type"] == "branch_summary")
    assert r["summaryEntryId"] == summary["id"] and summary["parentId"] == first_answer
    # the summary was asked for by pi's process (pi's JS SDK sends x-api-key; pi-server's sends a bearer)
    (ask,) = fake.requests[sent_before:]
    assert ask["headers"].get("x-api-key") == "sk-ant-test-live" and "authorization" not in {
        k.lower() for k in ask["headers"]
    }
    assert ask["body"]["system"][0]["text"] == SUMMARIZATION_SYSTEM_PROMPT
    asked = user_texts(ask["body"])[-1]
    assert "Second." in asked and BRANCH_SUMMARY_PROMPT.strip()[:60] in asked
    # pi's next turn continues on the new branch, with the summary and without "Second."
    pi.prompt("Third.")
    turn = fake.requests[-1]["body"]
    texts = user_texts(turn)
    assert any(t.startswith(BRANCH_PREFIX) for t in texts)
    assert "First." in texts and "Second." not in texts and texts[-1] == "Third."


async def test_set_label_is_in_pis_tree(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    session, first_answer, _ = await two_branches(editor, pi)
    r = await editor.call("pi/setLabel", {"session": session, "targetId": first_answer, "label": "checkpoint"})
    assert r["queued"] is False and r["entryId"] == pi.leaf()
    node = node_of(pi.call("get_tree")["tree"], first_answer)
    assert node is not None and node.get("label") == "checkpoint"
    unknown = editor.call("pi/setLabel", {"session": session, "targetId": "nosuchid", "label": "x"})
    with pytest.raises(Exception, match="nosuchid"):
        await unknown


async def test_writes_while_pi_streams_land_after_the_turn_in_order(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    fake = world["fake"]
    session, first_answer, _ = await two_branches(editor, pi)
    fake.replies = [("sse", sse_blocks([{"type": "text", "text": "A slow answer. " * 20}]))]
    fake.chunk_delay = 0.03  # ~1.3 s of streaming
    pi.call("prompt", message="Slowly.")
    await editor.wait_for("pi/sessionUpdated", lambda p: (p.get("live") or {}).get("streaming") is True, 20)
    switch = asyncio.ensure_future(
        editor.call("pi/switchBranch", {"session": session, "targetId": first_answer, "label": "back"})
    )
    await asyncio.sleep(0.05)  # the switch is asked for first
    name = asyncio.ensure_future(editor.call("pi/setSessionName", {"session": session, "name": "steered"}))
    r, n = await switch, await name
    assert r["queued"] is True and n["queued"] is True
    written = entries(session)
    kinds = [(e["type"], e.get("message", {}).get("role")) for e in written]
    slow = max(i for i, k in enumerate(kinds) if k == ("message", "assistant"))
    label = next(i for i, e in enumerate(written) if e["type"] == "label" and e.get("label") == "back")
    info = next(i for i, e in enumerate(written) if e["type"] == "session_info")
    assert slow < label < info  # after the turn, in the order asked
    assert written[label]["targetId"] == first_answer
    assert written[info]["parentId"] == written[label]["id"] == r["leafId"]
    assert n["entryId"] == written[info]["id"] == pi.leaf()


async def test_pis_own_move_reaches_the_editor(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    session, first_answer, _ = await two_branches(editor, pi)
    moved = asyncio.ensure_future(asyncio.to_thread(pi.call, "prompt", message=f"/test-goto {first_answer}"))
    got = await editor.wait_for("pi/sessionUpdated", lambda p: p.get("leafId") == first_answer, 10)
    await moved
    assert got["live"]["leafId"] == first_answer and got["appended"] == []
    assert pi.leaf() == first_answer
    tree = await editor.call("pi/getTree", {"session": session})
    assert tree["leafId"] == first_answer  # the editor's reads follow pi's leaf


async def test_pi_killed_then_writes_go_to_the_file(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    session, first_answer, _ = await two_branches(editor, pi)
    pi.proc.kill()
    pi.proc.wait()
    await editor.wait_for("pi/sessionUpdated", lambda p: "live" in p and p["live"] is None, 10)
    info = next(s for s in (await editor.call("pi/listSessions", {}))["sessions"] if s["session"] == session)
    assert "live" not in info
    r = await editor.call("pi/setLabel", {"session": session, "targetId": first_answer, "label": "by-file"})
    last = entries(session)[-1]
    assert r["entryId"] == last["id"] and last["type"] == "label" and last["label"] == "by-file"


async def test_context_edits_are_refused_on_a_live_session(world: dict[str, Any], editor: Client) -> None:
    pi = world["start_pi"]()
    session, first_answer, _ = await two_branches(editor, pi)
    size = Path(session).stat().st_size
    call = editor.call("pi/editContext", {"session": session, "targetId": first_answer, "replacement": None})
    with pytest.raises(Exception, match="open in pi"):
        await call
    assert Path(session).stat().st_size == size


async def test_a_restarted_daemon_gets_the_registration_again(world: dict[str, Any]) -> None:
    pi = world["start_pi"]()
    async with server(env=world["env"]) as c:
        pi.prompt("Say hi.")
        await live_session(c, pi)
    env = {**os.environ, **world["env"]}
    stop = [sys.executable, "-m", "pi_server", "daemon", "stop"]
    assert subprocess.run(stop, env=env, capture_output=True, timeout=60).returncode == 0
    async with server(env=world["env"]) as c:  # a new daemon; pi's extension finds it by itself
        info = await live_session(c, pi)
        assert info["live"]["leafId"] == pi.leaf()
