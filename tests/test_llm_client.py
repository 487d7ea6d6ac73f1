"""The one Anthropic client: reused across calls, real HTTP to the loopback fake."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, sse_blocks

from pi_server.agent.stream import call_model, empty_message
from pi_server.llm.anthropic import request_body as turn_body
from pi_server.llm.client import client_for
from pi_server.llm.models import ANTHROPIC
from pi_server.summaries.client import complete, request_body

KEY = "sk-ant-test-client-reuse-0000"


def test_summaries_reuse_one_client() -> None:
    body = request_body(ANTHROPIC["claude-sonnet-4-5"], "hello")

    async def two_calls(url: str) -> tuple[Any, Any, list[str]]:
        first = await complete(body, KEY, base_url=url)
        client = client_for(KEY, url, max_retries=2)
        second = await complete(body, KEY, base_url=url)
        return client, client_for(KEY, url, max_retries=2), [first, second]

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
        client = client_for(KEY)
        await call_model(lambda: body, KEY, outs[1], emit)
        return client, client_for(KEY), outs

    with FakeAnthropic([reply, reply]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        before, after, outs = asyncio.run(two_calls())
        assert len(fake.requests) == 2
    assert [o["stopReason"] for o in outs] == ["stop", "stop"]
    assert [o["content"] for o in outs] == [[{"type": "text", "text": "hello there"}]] * 2
    assert after is before and not before.is_closed()
