"""Hostile input beyond the store's files: names that are not UTF-8, lone surrogates, numbers
JSON cannot hold. Each case drives real pi-server processes, across a restart where the
index cache is involved."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsp_client import server
from lsprotocol import types as lsp

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _sample() -> bytes:
    return max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size).read_bytes()


async def test_a_name_that_is_not_utf8_is_listed_and_served(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    folder = root / "--home-x--"
    folder.mkdir(parents=True)
    (folder / "good.jsonl").write_bytes(_sample())
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as f:
        f.write(_sample())
    uri = (folder / "caf").as_uri() + "%E9.jsonl"
    for _run in range(2):  # the second run starts from the index and listing caches
        async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
            for params in ({}, {"query": "orders"}):
                got = await c.call("pi/listSessions", params)
                by = {s["session"]: s for s in got["sessions"]}
                assert set(by) == {str(folder / "good.jsonl"), uri}, params
                assert by[uri]["displayPath"] == str(folder / "caf\ufffd.jsonl")
                assert "displayPath" not in by[str(folder / "good.jsonl")]
            tree = await c.call("pi/getTree", {"session": uri})
            assert tree["total"] > 1
            params = lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
            symbols = await c.lc.text_document_document_symbol_async(params)
            assert symbols and symbols[0].range.start.line == 1
            label = await c.call("pi/setLabel", {"session": uri, "targetId": tree["leafId"], "label": "L"})
            named = await c.call("pi/setSessionName", {"session": uri, "name": "café"})
            switched = await c.call("pi/switchBranch", {"session": uri, "targetId": tree["rows"][0]["id"]})
            assert switched["leafId"] != named["entryId"]
            eid = named["entryId"]
            note = await c.wait_for("pi/sessionUpdated", lambda p, eid=eid: eid in p["appended"])
            assert note["session"] == uri
        with open(raw, "rb") as f:
            ids = {json.loads(line).get("id") for line in f}
        assert {label["entryId"], named["entryId"]} <= ids


async def test_a_lone_surrogate_in_the_first_message_is_served_and_cached(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--home-x--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    msg = {"role": "user", "content": [{"type": "text", "text": "X"}], "timestamp": 1}
    entry = {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
    line = json.dumps({**entry, "message": msg}).replace('"X"', '"cut \\ud83d"')
    session = folder / "s.jsonl"
    session.write_text(json.dumps(header) + "\n" + line + "\n")
    state = tmp_path / "state"
    for _run in range(2):
        async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(state)) as c:
            tree = await c.call("pi/getTree", {"session": str(session)})  # the run's first request
            assert [r["id"] for r in tree["rows"]] == ["a0000001"]
            for params in ({}, {"query": "cut"}):
                got = await c.call("pi/listSessions", params)
                assert [s["firstMessage"] for s in got["sessions"]] == ["cut \ud83d"], params
        assert len(list((state / "index").iterdir())) == 1  # the file's index is cached


def _strict(line: str) -> dict:
    def refuse(token: str) -> None:
        raise ValueError(f"{token} is not JSON")

    return json.loads(line, parse_constant=refuse)


def _raw_tool_use(partial_json: str) -> tuple[str, list[bytes]]:
    """A tool call streamed with the model's own argument text (`1e400` stays `1e400`)."""
    from fake_anthropic import _ev, sse_blocks

    head, *_rest = sse_blocks([{"type": "text", "text": "x"}], stop="tool_use")
    block = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": partial_json}
    stop = {"delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 3}}
    return (
        "sse",
        [
            head,
            _ev("content_block_start", {"index": 0, "content_block": block}),
            _ev("content_block_delta", {"index": 0, "delta": delta}),
            _ev("content_block_stop", {"index": 0}),
            _ev("message_delta", stop),
            _ev("message_stop", {}),
        ],
    )


async def test_numbers_json_cannot_hold_are_written_as_null_or_refused(env) -> None:
    from conftest import run_oracle
    from fake_anthropic import FakeAnthropic
    from pygls.exceptions import JsonRpcException
    from test_agent import answer, args, envvars, finished

    replies = [_raw_tool_use('{"path": "notes.txt", "limit": 1e400, "offset": -1e400}'), answer("read it")]
    with FakeAnthropic([*replies, answer("second turn")]) as fake:
        async with server(*args(env), env=envvars(env, fake.url)) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "read notes"})
            evs = await finished(c, r["turnId"])
            assert evs[-1]["type"] == "agent_end"
            session = r["session"]
            r2 = await c.call("pi/prompt", {"session": session, "text": "again"})
            evs2 = await finished(c, r2["turnId"])
            assert evs2[-1]["messages"][-1]["stopReason"] == "stop"
            tree = await c.call("pi/getTree", {"session": session, "filter": "all"})
            target = next(r["id"] for r in tree["rows"] if r.get("role") == "user")
            bad = {"session": session, "targetId": target, "replacement": {"content": [{"type": "text", "n": 1e400}]}}
            try:
                await c.call("pi/editContext", bad)
                raise AssertionError("accepted")
            except JsonRpcException as e:
                assert e.code == -32602 and "replacement.content.0.n" in str(e), e
        for req in fake.requests:
            assert b"Infinity" not in req["raw"] and b"NaN" not in req["raw"]
        lines = [_strict(x) for x in Path(session).read_text().splitlines()]  # every line strict JSON
    call = next(e["message"] for e in lines if e.get("message", {}).get("stopReason") == "toolUse")
    assert call["content"][0]["arguments"] == {"path": "notes.txt", "limit": None, "offset": None}
    # pi reads every line: the tool result follows its call, and the second turn follows
    pi = run_oracle("agent_open.mjs", session)
    roles = [m["role"] for m in pi["messages"]]
    assert roles == ["system", "user", "assistant", "toolResult", "assistant", "user", "assistant"], roles


async def test_a_rewritten_file_keeps_every_line_strict_json(tmp_path: Path) -> None:
    """A v2 file migrated before its first append: `1e400` read from it is written back as null."""
    from conftest import run_oracle

    folder = tmp_path / "sessions" / "--x--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 2, "id": "s2", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    # an assistant reply last: the session is not busy, so the label is appended at once
    call = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"limit": 7}}
    msg = {"role": "assistant", "content": [call], "stopReason": "stop", "timestamp": 1}
    entry = {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
    line = json.dumps({**entry, "message": msg, "big": 7}).replace(": 7", ": 1e400")
    session = folder / "s.jsonl"
    session.write_text(json.dumps(header) + "\n" + line + "\n")
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        got = await c.call("pi/setLabel", {"session": str(session), "targetId": "a0000001", "label": "L"})
        assert got["queued"] is False
        got = await c.call("pi/getEntry", {"session": str(session), "id": "a0000001"})
        assert got["entry"]["big"] is None and got["entry"]["message"]["content"][0]["arguments"] == {"limit": None}
    lines = [_strict(x) for x in session.read_text().splitlines()]
    assert lines[0]["version"] == 3 and lines[2]["type"] == "label"
    assert lines[1]["big"] is None and lines[1]["message"]["content"][0]["arguments"] == {"limit": None}
    pi = run_oracle("agent_open.mjs", str(session))
    assert pi["entries"] == 2
