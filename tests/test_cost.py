"""An answer's usage and cost equal pi-ai 1.6.0's (calculateCost) on every model, for agent turns
and summaries alike: pi-ai's completeSimple and pi-server's two readers of a streamed answer take
the same reply from the loopback fake, one that wrote to the cache for five minutes and for an hour."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic

from pi_server.agent.stream import call_model, empty_message
from pi_server.llm.cost import calculate_cost
from pi_server.llm.models import ANTHROPIC, Cost
from pi_server.summaries.client import complete_with_usage, request_body

KEY = "sk-ant-test-0123456789abcdef"
MODELS = sorted(ANTHROPIC)
# each model answers twice: a small request, then one past claude-haiku-5-5's price tier
ANSWERS = [(m, big) for m in MODELS for big in (False, True)]
START_USAGE = {
    "input_tokens": 100,
    "output_tokens": 1,
    "cache_read_input_tokens": 20,
    "cache_creation_input_tokens": 1000,
    "cache_creation": {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600},
}


def _ev(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _reply(model_id: str, big: bool) -> tuple[str, list[bytes]]:
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": model_id, "content": []}
    usage = {**START_USAGE, "input_tokens": 150000} if big else START_USAGE
    start |= {"stop_reason": None, "stop_sequence": None, "usage": usage}
    text = {"type": "text_delta", "text": "## Goal\nA canned answer."}
    return (
        "sse",
        [
            _ev("message_start", {"message": start}),
            _ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            _ev("content_block_delta", {"index": 0, "delta": text}),
            _ev("content_block_stop", {"index": 0}),
            _ev(
                "message_delta",
                {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 42}},
            ),
            _ev("message_stop", {}),
        ],
    )


@pytest.fixture(scope="module")
def pi_usage() -> dict[str, Any]:
    with FakeAnthropic([_reply(*a) for a in ANSWERS]) as fake:
        got = run_oracle("cost16.mjs", fake.url, [m for m, _ in ANSWERS], pi16=True)
    assert [g["model"] for g in got] == [m for m, _ in ANSWERS] and all(g["stopReason"] == "stop" for g in got)
    return {a: g["usage"] for a, g in zip(ANSWERS, got, strict=True)}


def test_turn_usage_equals_pi16(pi_usage: dict[str, Any], monkeypatch) -> None:
    async def emit(_: dict[str, Any]) -> None:
        pass

    async def turns(url: str) -> dict[str, Any]:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        out = {}
        for m, big in ANSWERS:
            msg = empty_message(m)
            body = {"model": m, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10}
            await call_model(lambda b=body: b, KEY, msg, emit)
            assert msg["stopReason"] == "stop", msg.get("errorMessage")
            out[(m, big)] = msg["usage"]
        return out

    with FakeAnthropic([_reply(*a) for a in ANSWERS]) as fake:
        ours = asyncio.run(turns(fake.url))
    assert ours == pi_usage
    # the hour-long writes cost twice the input price, the rest the cache-write price
    opus = ANTHROPIC["claude-opus-5"].cost
    assert ours[("claude-opus-5", False)]["cost"]["cacheWrite"] == (opus.cache_write * 400 + opus.input * 2 * 600) / 1e6


def test_summary_usage_equals_pi16(pi_usage: dict[str, Any]) -> None:
    async def summaries(url: str) -> dict[str, Any]:
        out = {}
        for m, big in ANSWERS:
            model = ANTHROPIC[m]
            _, out[(m, big)] = await complete_with_usage(request_body(model, "hi"), KEY, model=model, base_url=url)
        return out

    with FakeAnthropic([_reply(*a) for a in ANSWERS]) as fake:
        assert asyncio.run(summaries(fake.url)) == pi_usage
    tiered = pi_usage[("claude-haiku-5-5", True)]["cost"]["input"]
    assert tiered == 0.5 * 150000 / 1e6  # past 100,000 input tokens claude-haiku-5-5 costs more


def test_cost_without_hour_long_writes() -> None:
    usage = {"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40, "cost": {}}
    cost = calculate_cost(Cost(1, 2, 3, 4), usage)
    want = {"input": 1e-5, "output": 4e-5, "cacheRead": 9e-5, "cacheWrite": 16e-5, "total": 30e-5}
    assert cost == {**{k: pytest.approx(v) for k, v in want.items()}, "totalFromProvider": False}
    assert usage["cost"] is cost
