"""The agent harness end to end: a real server, the loopback Anthropic fake, pi's SessionManager as judge."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic, sse_blocks
from lsp_client import Client, server
from pygls.exceptions import JsonRpcException

from pi_server.llm.anthropic import request_body
from pi_server.llm.models import ANTHROPIC

KEY = "sk-ant-api03-secret-test-key-0000"
# seconds until a turn's first model call streams: the SDK's first import can take 15 s on a busy machine
FIRST_CALL = 60.0


def args(e: dict[str, Any]) -> list[str]:
    return ["--sessions-dir", e["root"], "--state-dir", e["state"], "--log-file", e["log"]]


def envvars(e: dict[str, Any], url: str) -> dict[str, str]:
    return {
        "HOME": e["home"],
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": url,
        "PI_CODING_AGENT_DIR": e["home"] + "/agent",
        "PI_SERVER_RETRY_BASE_MS": "10",
    }


def tool_use(name: str, inp: dict[str, Any], tid: str = "toolu_1") -> tuple[str, list[bytes]]:
    return ("sse", sse_blocks([{"type": "tool_use", "id": tid, "name": name, "input": inp}], stop="tool_use"))


def answer(text: str) -> tuple[str, list[bytes]]:
    return ("sse", sse_blocks([{"type": "text", "text": text}]))


def events(c: Client, turn_id: str) -> list[dict[str, Any]]:
    return [p["event"] for m, p in c.notes if m == "pi/agentEvent" and p["turnId"] == turn_id]


async def finished(c: Client, turn_id: str, timeout: float = FIRST_CALL) -> list[dict[str, Any]]:
    """Wait for the run's last agent_end (after any retries) and the turn's release."""

    def done(p: Any) -> bool:
        if p["turnId"] != turn_id or p["event"]["type"] != "agent_end":
            return False
        last = p["event"]["messages"][-1] if p["event"]["messages"] else {}
        return last.get("stopReason") != "error" or "overloaded" not in (last.get("errorMessage") or "")

    await c.wait_for("pi/agentEvent", done, timeout)
    await asyncio.sleep(1.0)  # the turn writes its settings and lets go of the session right after agent_end
    return events(c, turn_id)


def entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


async def test_tool_turn_end_to_end(env, monkeypatch) -> None:
    with FakeAnthropic([tool_use("read", {"path": "notes.txt"}), answer("It says alpha and beta.")]) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "What is in notes.txt?"})
            evs = await finished(c, r["turnId"])
            session = r["session"]
    # pi's layout, asked of pi's SessionManager.create with the same sessions folder
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(env["tmp"]))
    made = run_oracle("agent_open.mjs", "--new", env["cwd"])
    assert Path(session).parent == Path(made["dir"])
    pattern = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.jsonl"
    assert re.fullmatch(pattern, Path(session).name) and re.fullmatch(pattern, Path(made["file"]).name)
    lines = entries(session)
    assert list(lines[0]) == list(made["header"]) and lines[0]["cwd"] == made["header"]["cwd"] == env["cwd"]
    assert lines[0]["id"] == Path(session).stem.split("_")[1]
    kinds = [e.get("message", {}).get("role") or e["type"] for e in lines[1:]]
    # pi 1.6.0 records its system prompt and tool declarations before the first user message
    assert kinds == ["model_change", "thinking_level_change", "system", "user", "assistant", "toolResult", "assistant"]
    lines = lines[:3] + lines[4:]  # the messages after the system message, where pi 0.73.1 had them
    call = lines[4]["message"]
    assert call["stopReason"] == "toolUse" and call["api"] == "anthropic-messages" and call["provider"] == "anthropic"
    assert call["content"] == [
        {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "notes.txt"}}
    ]
    assert call["usage"]["input"] == 100 and call["usage"]["output"] == 42 and call["usage"]["cacheRead"] == 20
    result = lines[5]["message"]
    assert result["toolName"] == "read" and result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "alpha\nbeta\n"}]
    final = lines[6]["message"]
    assert final["stopReason"] == "stop" and final["content"] == [{"type": "text", "text": "It says alpha and beta."}]
    # the second request carries the tool round trip; both carry pi's system prompt and tools
    second = fake.requests[1]["body"]
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"
    assert second["messages"][-1]["content"][0]["content"] == "alpha\nbeta\n"
    sys_text = second["system"][0]["text"]
    assert sys_text.startswith("You are a coding assistant running inside pi, a coding agent harness.")
    assert sys_text.endswith(f"<cwd>\n{env['cwd']}\n</cwd>")
    assert [t["name"] for t in second["tools"]] == ["read", "ls", "grep", "find"]  # the recorded pi 1.6.0 run's order
    assert second["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    # pi's event sequence
    types = [e["type"] for e in evs]
    assert types[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert "tool_execution_start" in types and "tool_execution_end" in types
    assert types.count("turn_end") == 2 and types[-1] == "agent_end"
    deltas = [e for e in evs if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert "".join(d["assistantMessageEvent"]["delta"] for d in deltas) == "It says alpha and beta."
    # pi's own SessionManager reads it and builds the context our next turn sends
    pi = run_oracle("agent_open.mjs", session)
    assert pi["entries"] == len(lines)  # the system message entry was left out of `lines` above
    assert [m["role"] for m in pi["messages"]] == ["system", "user", "assistant", "toolResult", "assistant"]
    assert pi["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"} and pi["thinkingLevel"] == "medium"


def first_delta(turn_id: str):
    def pred(p: Any) -> bool:
        ev = p["event"]
        return (
            p["turnId"] == turn_id
            and ev["type"] == "message_update"
            and ev["assistantMessageEvent"]["type"] == "text_delta"
        )

    return pred


async def test_mid_turn_settings_and_queued_writes(env) -> None:
    long = [
        {"type": "thinking", "thinking": "Let me think.", "signature": "c2lnbmF0dXJl"},
        {"type": "text", "text": "word " * 40},
    ]
    with FakeAnthropic([("sse", sse_blocks(long)), answer("second answer")]) as fake:
        fake.chunk_delay = 0.03
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "first"})
            session, tid = r["session"], r["turnId"]
            await c.wait_for("pi/agentEvent", first_delta(tid), FIRST_CALL)
            user_id = entries(session)[-1]["id"]
            m = await c.call(
                "pi/setModel", {"session": session, "provider": "anthropic", "modelId": "claude-haiku-4-5"}
            )
            t = await c.call("pi/setThinkingLevel", {"session": session, "level": "low"})
            lab = await c.call("pi/setLabel", {"session": session, "targetId": user_id, "label": "start"})
            name = await c.call("pi/setSessionName", {"session": session, "name": "my run"})
            assert m["queued"] and t["queued"] and lab["queued"] and name["queued"]
            with pytest.raises(JsonRpcException) as busy:
                await c.call("pi/prompt", {"session": session, "text": "again"})
            assert busy.value.code == -32006
            await finished(c, tid)
            sp = await c.wait_for("pi/savePoint", lambda p: p["session"] == session)
            lines = entries(session)
            kinds = [e.get("message", {}).get("role") or e["type"] for e in lines[-6:]]
            assert kinds == ["user", "assistant", "label", "session_info", "model_change", "thinking_level_change"]
            assert sp["flushed"] == [lines[-4]["id"], lines[-3]["id"]]
            assert lines[-2]["modelId"] == "claude-haiku-4-5" and lines[-1]["thinkingLevel"] == "low"
            assert lines[-2]["parentId"] == lines[-3]["id"]  # causal order: each parent resolved when written
            assert fake.requests[0]["body"]["model"] == "claude-sonnet-4-5"
            thought = lines[-5]["message"]["content"][0]
            assert thought == {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "c2lnbmF0dXJl"}
            # the next turn uses the new model and exactly the context pi itself builds from the file
            r2 = await c.call("pi/prompt", {"session": session, "text": "and now?"})
            await finished(c, r2["turnId"])
    sent = fake.requests[1]["body"]
    assert sent["model"] == "claude-haiku-4-5" and sent["thinking"]["budget_tokens"] == 2048
    pi = run_oracle("agent_open.mjs", session)
    assert pi["model"] == {"provider": "anthropic", "modelId": "claude-haiku-4-5"}
    before = pi["llm"][:-1]  # without the second turn's answer: the context as it was sent
    body, _ = request_body(before, [""] * len(before), ANTHROPIC["claude-haiku-4-5"], "low")
    assert sent["messages"] == body["messages"]
    # another model now: pi-ai 1.6.0's transformMessages drops the old model's thinking
    # (0.73.1 turned it into text)
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "word " * 40}]
    assert pi["entries"] == len(entries(session)) - 1


async def test_abort_mid_stream(env) -> None:
    with FakeAnthropic([answer("slowly " * 60)]) as fake:
        fake.chunk_delay = 0.05
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "go"})
            await c.wait_for("pi/agentEvent", first_delta(r["turnId"]), FIRST_CALL)
            assert (await c.call("pi/abort", {"session": r["session"]}))["aborted"] is True
            evs = await finished(c, r["turnId"])
    last = entries(r["session"])[-1]["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert last["errorMessage"] == "Request was aborted"
    assert last["content"][0]["text"].startswith("slowly")
    assert evs[-1]["type"] == "agent_end"
    assert run_oracle("agent_open.mjs", r["session"])["messages"][-1]["stopReason"] == "aborted"


async def test_kill_mid_turn_leaves_a_valid_file(env) -> None:
    with FakeAnthropic([tool_use("ls", {}), answer("done " * 80)]) as fake:
        fake.chunk_delay = 0.05
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "list"})
            await c.wait_for("pi/agentEvent", lambda p: p["event"]["type"] == "tool_execution_end", FIRST_CALL)
            await c.wait_for(
                "pi/agentEvent", lambda p: len(fake.requests) == 2 and p["event"]["type"] == "message_update"
            )
            os.kill(c.serving_pid(), signal.SIGKILL)  # the process that writes the turn
            await asyncio.sleep(0.2)
    lines = entries(r["session"])
    assert [e.get("message", {}).get("role") for e in lines[-3:]] == ["user", "assistant", "toolResult"]
    assert "notes.txt" in lines[-1]["message"]["content"][0]["text"]
    pi = run_oracle("agent_open.mjs", r["session"])
    assert pi["entries"] == len(lines) - 1


async def test_path_outside_cwd_is_refused(env) -> None:
    outside = str(env["tmp"] / "secret.txt")
    replies = [
        tool_use("read", {"path": "../secret.txt"}),
        tool_use("read", {"path": outside}, "toolu_2"),
        answer("ok"),
    ]
    with FakeAnthropic(replies) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "read the secret"})
            await finished(c, r["turnId"])
    results = [e["message"] for e in entries(r["session"]) if e.get("message", {}).get("role") == "toolResult"]
    assert len(results) == 2
    for res in results:
        assert res["isError"] is True and "outside" in res["content"][0]["text"]
        assert "do not read" not in json.dumps(res)
    assert "do not read" not in json.dumps(fake.requests[-1]["body"])


async def test_client_tools_need_the_capability(env) -> None:
    asked: list[Any] = []

    def execute(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {
            "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in notes.txt."}],
            "details": {"diff": "-alpha\n+ALPHA"},
        }

    edit = {"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}
    replies = [tool_use("edit", edit), tool_use("edit", {**edit, "path": "/etc/hosts"}, "toolu_2"), answer("edited")]
    with FakeAnthropic(replies) as fake:
        async with server(
            *args(env),
            env=envvars(env, fake.url),
            experimental={"piTools": {"tools": ["edit", "write", "bash"]}},
            on_request={"pi/executeTool": execute},
        ) as c:
            assert "pi/prompt" in c.init.capabilities.experimental["piSessions"]["methods"]
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "capitalize alpha"})
            await finished(c, r["turnId"])
    # pi 1.6.0 declares tools in the order it is given; the order of its recorded run (ls, grep, find)
    assert [t["name"] for t in fake.requests[0]["body"]["tools"]] == [
        "read",
        "bash",
        "edit",
        "write",
        "ls",
        "grep",
        "find",
    ]
    assert len(asked) == 1  # the /etc/hosts edit never reached the client
    p = asked[0] if isinstance(asked[0], dict) else vars(asked[0])
    assert p["session"] == r["session"] and p["toolCallId"] == "toolu_1" and p["name"] == "edit"
    results = [e["message"] for e in entries(r["session"]) if e.get("message", {}).get("role") == "toolResult"]
    assert results[0]["toolName"] == "edit" and results[0]["isError"] is False
    assert results[0]["details"] == {"diff": "-alpha\n+ALPHA"}
    assert results[1]["isError"] is True and "outside" in results[1]["content"][0]["text"]


async def test_edit_not_offered_without_capability_and_busy_pi_session(env) -> None:
    # a pi process mid-turn: its last entry is a user message written just now
    folder = Path(env["root"]) / "--x--"
    folder.mkdir()
    busy = folder / "2026-01-01T00-00-00-000Z_0000.jsonl"
    ts = "2026-01-01T00:00:00.000Z"
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": ts, "cwd": env["cwd"]}
    user = {"role": "user", "content": "hi", "timestamp": 1}
    entry = {"type": "message", "id": "a1", "parentId": None, "timestamp": ts, "message": user}
    busy.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    with FakeAnthropic([tool_use("edit", {"path": "notes.txt", "edits": []}), answer("no edit tool")]) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            with pytest.raises(JsonRpcException) as e:
                await c.call("pi/prompt", {"session": str(busy), "text": "hello"})
            assert e.value.code == -32006
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "edit it"})
            await finished(c, r["turnId"])
    assert "edit" not in [t["name"] for t in fake.requests[0]["body"]["tools"]]
    res = [e["message"] for e in entries(r["session"]) if e.get("message", {}).get("role") == "toolResult"][0]
    assert res["isError"] is True and res["content"][0]["text"] == "Tool edit not found"
    assert Path(env["cwd"], "notes.txt").read_text() == "alpha\nbeta\n"


async def test_overload_is_retried(env) -> None:
    replies = [(529, "Overloaded"), answer("after retry")]
    with FakeAnthropic(replies) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            t0 = time.monotonic()
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "hi"})
            evs = await finished(c, r["turnId"])
            assert time.monotonic() - t0 < 10
    lines = entries(r["session"])
    msgs = [e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] != "system"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant"]
    # as pi 1.6.0: the failed attempt stays in the file, omitted from later contexts by a context_edit
    failed = next(e for e in lines if e.get("message", {}).get("stopReason") == "error")
    edit = lines[lines.index(failed) + 1]
    assert edit["type"] == "context_edit" and edit["targetId"] == failed["id"] and edit["replacement"] is None
    assert lines[-1]["parentId"] == edit["id"]
    pi = run_oracle("agent16_open.mjs", r["session"], pi16=True)
    assert [m["role"] for m in pi["messages"]] == ["system", "user", "assistant"]
    assert msgs[1]["stopReason"] == "error" and "529" in msgs[1]["errorMessage"]
    assert KEY not in json.dumps(msgs)
    assert msgs[2]["stopReason"] == "stop" and msgs[2]["content"][0]["text"] == "after retry"
    types = [e["type"] for e in evs]
    assert "auto_retry_start" in types and types[-1] == "auto_retry_end"
    # the retry resends the context without the failed message
    assert fake.requests[1]["body"]["messages"] == fake.requests[0]["body"]["messages"]
