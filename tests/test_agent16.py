"""The harness writes what pi 1.6.0's AgentSession writes: a real server, the loopback Anthropic
fake replaying the replies of the recorded pi 1.6.0 run, pi 1.6.0's SessionManager as judge."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import run_oracle
from fake_anthropic import FakeAnthropic, sse_blocks
from lsp_client import Client, server
from test_agent import args, entries, envvars, finished

RECORDED = Path(__file__).resolve().parent / "fixtures" / "pi16" / "recorded"


def _replies() -> list[tuple[str, list[bytes]]]:
    """The recorded run's scripted replies as streamed answers."""
    out = []
    for n, r in enumerate(json.loads((RECORDED / "fake-replies.json").read_text())):
        blocks: list[dict[str, Any]] = []
        if "thinking" in r:
            blocks.append({"type": "thinking", "thinking": r["thinking"], "signature": f"sig{n}"})
        if "text" in r:
            blocks.append({"type": "text", "text": r["text"]})
        if "tool_use" in r:
            blocks.append({"type": "tool_use", "id": f"toolu_fake_{n}", **r["tool_use"]})
        out.append(("sse", sse_blocks(blocks, stop="tool_use" if "tool_use" in r else "end_turn")))
    return out


def _same_run(body: dict[str, Any], cwd: str) -> Any:
    """A request body with what differs between two runs of the same turns made neutral:
    the working folder and the fake's tool call ids."""
    text = json.dumps(body).replace(json.dumps(cwd)[1:-1], "<cwd>")
    return json.loads(re.sub(r"toolu_fake_[0-9_]+", "toolu_fake", text))


def _kinds(lines: list[dict[str, Any]]) -> list[str]:
    return [e.get("message", {}).get("role") or e["type"] for e in lines if e["type"] != "session"]


async def _prompt(c: Client, params: dict[str, Any]) -> dict[str, Any]:
    r = await c.call("pi/prompt", params)
    await finished(c, r["turnId"], timeout=90)  # the SDK's first import can take long on a busy machine
    return r


async def _judge(c: Client, session: str) -> None:
    """pi 1.6.0 loads every line, and its context at the leaf is ours."""
    pi = run_oracle("agent16_open.mjs", session, pi16=True)
    lines = entries(session)
    assert pi["entries"] == len(lines) - 1 and pi["types"] == _kinds(lines)
    ours = await c.call("pi/buildContext", {"session": session})
    assert ours["leafId"] == pi["leafId"] and ours["messages"] == pi["messages"]


async def test_new_session_as_recorded(env) -> None:
    Path(env["cwd"], "README.md").write_text("# Demo\n\nA demo project used to record a pi turn.\n")
    # the recording's pi ran with these global settings: a new session takes its model and level from them
    Path(env["home"], "agent").mkdir(parents=True)
    settings = {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5", "defaultThinkingLevel": "off"}
    Path(env["home"], "agent", "settings.json").write_text(json.dumps(settings))
    with FakeAnthropic(_replies()) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await _prompt(c, {"cwd": env["cwd"], "text": "Read README.md and tell me what it says."})
            session = r["session"]
            await _judge(c, session)
            await _prompt(c, {"session": session, "text": "Thanks. One more sentence please."})
            await c.call("pi/setThinkingLevel", {"session": session, "level": "high"})
            await _prompt(c, {"session": session, "text": "And now think hard about it."})
            system_id = next(e["id"] for e in entries(session) if e.get("message", {}).get("role") == "system")
            await c.call("pi/switchBranch", {"session": session, "targetId": system_id})
            await _prompt(c, {"session": session, "text": "Read README.md again, but only the first line."})
            await _judge(c, session)
        bodies = [q["body"] for q in fake.requests]
        betas = [q["headers"].get("anthropic-beta") for q in fake.requests]
    # the requests of the three prompts before the branch switch are pi 1.6.0's, header and body
    sent = [json.loads(x) for x in (RECORDED / "requests-1.6.0.jsonl").read_text().splitlines()][:4]
    assert betas[:4] == [q["headers"].get("anthropic-beta") for q in sent]
    assert [q["path"] for q in fake.requests[:4]] == [q["path"] for q in sent]
    for ours, theirs in zip(bodies, sent, strict=False):
        assert _same_run(ours, env["cwd"]) == _same_run(theirs["body"], "/home/dev/project")
    lines = entries(session)
    recorded = [json.loads(x) for x in (RECORDED / "agent-turns-1.6.0.jsonl").read_text().splitlines()]
    first_compaction = next(i for i, e in enumerate(recorded) if e["type"] == "compaction")
    assert _kinds(lines) == _kinds(recorded[:first_compaction])
    # pi's system message: the sections and tool declarations, before the first user message only
    systems = [e["message"] for e in lines if e.get("message", {}).get("role") == "system"]
    want = recorded[3]["message"]
    assert len(systems) == 1 and list(systems[0]) == list(want)
    assert systems[0]["sections"]["preamble"] == want["sections"]["preamble"]
    assert systems[0]["sections"]["cwd"] == f"<cwd>\n{env['cwd']}\n</cwd>"
    # the branch re-records the level in use after the jump above the thinking change
    assert lines[13]["type"] == "thinking_level_change" and lines[13]["parentId"] == system_id
    assert lines[13]["thinkingLevel"] == "high"
    for ours, theirs in zip(lines, recorded[:first_compaction], strict=True):
        if ours["type"] == "message":
            assert list(ours["message"]) == list(theirs["message"]), ours["message"]["role"]
    last = lines[-1]["message"]
    assert last["thinkingLevel"] == "high" and last["rawStopReason"] == "end_turn"
    assert isinstance(last["durationMs"], int) and isinstance(lines[-2]["message"]["durationMs"], int)
    # the request carries the prompt and the tools replayed from the transcript
    assert bodies[0]["system"][0]["text"].startswith(want["sections"]["preamble"] + "\n\n<tools>")
    assert [t["name"] for t in bodies[0]["tools"]] == [t["name"] for t in systems[0]["toolsAdded"]]


async def test_pi073_session_gets_its_first_system_message(env) -> None:
    recorded = (RECORDED / "0.73.1-file-resumed-by-1.6.0.jsonl").read_text().splitlines()
    first_system = next(i for i, x in enumerate(recorded) if '"role":"system"' in x)
    cwd = json.loads(recorded[0])["cwd"]
    folder = Path(env["root"]) / "--home-dev-project--"
    folder.mkdir()
    session = str(folder / "old.jsonl")
    Path(session).write_text("\n".join(recorded[:first_system]) + "\n")
    text = json.loads(recorded[first_system + 1])["message"]["content"][0]["text"]
    with FakeAnthropic(_replies()[-1:]) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            await _prompt(c, {"session": session, "text": text})
            await _judge(c, session)
    lines = entries(session)
    assert _kinds(lines) == _kinds([json.loads(x) for x in recorded])
    system = lines[first_system]["message"]
    assert list(system) == list(json.loads(recorded[first_system])["message"])
    assert system["sections"]["cwd"] == f"<cwd>\n{cwd}\n</cwd>"
    assert lines[first_system]["parentId"] == json.loads(recorded[first_system - 1])["id"]
    assert fake.requests[0]["body"]["system"][0]["text"].startswith("You are a coding assistant running inside pi")


async def test_editor_tools_declared_and_withdrawn(env) -> None:
    """A client that declares editor tools gets a system patch adding them (and the prompt
    sections that name them); a later client without them gets their removal."""
    answers = [("sse", sse_blocks([{"type": "text", "text": f"answer {n}"}])) for n in range(3)]
    with FakeAnthropic(answers) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            session = (await _prompt(c, {"cwd": env["cwd"], "text": "first"}))["session"]
        tools = {"piTools": {"tools": ["edit", "write", "bash"]}}
        async with server(*args(env), env=envvars(env, fake.url), experimental=tools) as c:
            await _prompt(c, {"session": session, "text": "second"})
            await _judge(c, session)
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            await _prompt(c, {"session": session, "text": "third"})
            await _judge(c, session)
        bodies = [q["body"] for q in fake.requests]
    lines = entries(session)
    systems = [e["message"] for e in lines if e.get("message", {}).get("role") == "system"]
    assert _kinds(lines)[2:] == ["system", "user", "assistant"] * 3
    added, removed = systems[1], systems[2]
    assert [t["name"] for t in added["toolsAdded"]] == ["bash", "edit", "write"] and "toolsRemoved" not in added
    assert set(added["sections"]) == {"tools", "rules"} and "- edit: " in added["sections"]["tools"]
    assert removed["toolsRemoved"] == [{"name": "bash"}, {"name": "edit"}, {"name": "write"}]
    assert removed["sections"]["tools"] == systems[0]["sections"]["tools"] and "toolsAdded" not in removed
    assert [t["name"] for t in bodies[1]["tools"]] == ["read", "ls", "grep", "find", "bash", "edit", "write"]
    assert [t["name"] for t in bodies[2]["tools"]] == ["read", "ls", "grep", "find"]
