"""The one Anthropic client: reused across calls, real HTTP to the loopback fake."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, sse_blocks

from pi_server.agent.stream import call_model, empty_message
from pi_server.llm import encode
from pi_server.llm.anthropic import request_body as turn_body
from pi_server.llm.client import client_for, stream_text
from pi_server.llm.encode import LONG_LIST, SLICE, Pieces, json_bytes, put
from pi_server.llm.models import ANTHROPIC
from pi_server.summaries.client import complete, request_body

KEY = "sk-ant-test-client-reuse-0000"


def test_summaries_reuse_one_client() -> None:
    body = request_body(ANTHROPIC["claude-sonnet-4-5"], "hello")

    async def two_calls(url: str) -> tuple[Any, Any, list[str]]:
        first = await complete(body, KEY, base_url=url)
        client = await client_for(KEY, url, max_retries=2)
        second = await complete(body, KEY, base_url=url)
        return client, await client_for(KEY, url, max_retries=2), [first, second]

    with FakeAnthropic() as fake:
        before, after, answers = asyncio.run(two_calls(fake.url))
        assert len(fake.requests) == 2
    assert answers == ["## Goal\nA canned summary."] * 2
    assert after is before and not before.is_closed()


def test_the_harness_reuses_one_client(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    user = {"role": "user", "content": "hi", "timestamp": 1}
    body, _ = turn_body([user], ["u1"], model, "off")
    reply = ("sse", sse_blocks([{"type": "text", "text": "hello there"}]))

    async def two_calls() -> tuple[Any, Any, list[dict[str, Any]]]:
        async def emit(ev: dict[str, Any]) -> None:
            pass

        outs = [empty_message(model.id), empty_message(model.id)]
        await call_model(lambda: body, KEY, outs[0], emit)
        client = await client_for(KEY)
        await call_model(lambda: body, KEY, outs[1], emit)
        return client, await client_for(KEY), outs

    with FakeAnthropic([reply, reply]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        before, after, outs = asyncio.run(two_calls())
        assert len(fake.requests) == 2
    assert [o["stopReason"] for o in outs] == ["stop", "stop"]
    assert [o["content"] for o in outs] == [[{"type": "text", "text": "hello there"}]] * 2
    assert after is before and not before.is_closed()


# ---------------------------------------------------------------- the request body's encoder


def _plain(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_the_body_is_the_json_text_of_the_params() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": 'déjà vu 😀 \u2028 \x01 "q" \\'}]}],
        "max_tokens": 64000,
        "stream": True,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "tools": [],
        "thinking": {},
        "n": None,
    }
    assert json_bytes(body) == _plain(body)


def test_a_huge_body_is_encoded_in_pieces_with_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "message déjà vu 😀 " * 200_000  # 3.8 M characters: four slices
    messages = [{"role": "user", "content": f"m {i} é"} for i in range(50_000)]  # runs of items
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}], "more": messages}
    calls: list[int] = []
    plain_encode = encode._encode

    def counted(value: Any) -> bytes:
        calls.append(len(value) if isinstance(value, str | list) else 0)
        return plain_encode(value)

    monkeypatch.setattr(encode, "_encode", counted)
    out = Pieces()
    put(body, out)
    parts = out.done()
    assert b"".join(parts) == _plain(body)
    # no encoder call over the whole text or list: each is short
    assert max(calls) <= SLICE and sum(1 for n in calls if n > 1000) >= 4 + 50_000 // LONG_LIST
    assert len(parts) >= 6 and max(map(len, parts)) <= 2 * SLICE


def test_a_lone_surrogate_is_escaped_as_json_stringify_writes_it() -> None:
    body = {"input": {"cmd": "a\ud800b é"}, "text": ("x" * SLICE) + "\udc00" + "é" * 10, "list": ["\ud83d"] * 5000}
    raw = json_bytes(body)
    raw.decode("utf-8")  # valid UTF-8: no surrogate written as it is
    assert b"\\ud800" in raw and b"\\udc00" in raw
    assert json.loads(raw) == body


def test_the_client_sends_the_encoded_body_and_betas_as_a_header() -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    body, _ = turn_body([{"role": "user", "content": "hi \ud800 é", "timestamp": 1}], ["u1"], model, "high")
    reply = ("sse", sse_blocks([{"type": "text", "text": "ok"}]))

    async def one(url: str) -> None:
        await stream_text(body, KEY, url=url, timeout=30, max_retries=0)

    with FakeAnthropic([reply]) as fake:
        asyncio.run(one(fake.url))
        (got,) = fake.requests
    assert got["path"] == "/v1/messages?beta=true"
    assert got["headers"].get("anthropic-beta") == ",".join(body["betas"])
    assert got["headers"].get("x-stainless-helper-method") == "stream"
    want = {k: v for k, v in body.items() if k != "betas"}
    assert got["raw"] == _plain(want) and got["body"]["stream"] is True
