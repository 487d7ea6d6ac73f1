"""One streamed Messages API call, turned into pi's assistant message and its stream events.

Mirrors pi-ai's streamAnthropic: blocks text / thinking (with thinkingSignature) /
toolCall, usage and cost from message_start/message_delta, pi's stop reason
mapping, and on failure stopReason "error" (or "aborted") with errorMessage.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pi_server.llm.client import error_text, redact, stream_events
from pi_server.llm.cost import calculate_cost
from pi_server.llm.models import ANTHROPIC, Cost

Emit = Callable[[dict[str, Any]], Awaitable[None]]

_STOP = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "sensitive": "error",
}


def empty_message(model_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model_id,
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0, "totalFromProvider": False},
            "cacheWrite1h": 0,  # pi-ai 1.6.0 splits out one-hour cache writes
        },
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }


def _usage(out: dict[str, Any], u: Any, model_id: str, start: bool = False) -> None:
    usage = out["usage"]
    for src, dst in (
        ("input_tokens", "input"),
        ("output_tokens", "output"),
        ("cache_read_input_tokens", "cacheRead"),
        ("cache_creation_input_tokens", "cacheWrite"),
    ):
        v = getattr(u, src, None)
        if v is not None:
            usage[dst] = v
    # message_start always says how many writes were one-hour ones; a delta only when it knows
    long_write = getattr(getattr(u, "cache_creation", None), "ephemeral_1h_input_tokens", None)
    if long_write is not None or start:
        usage["cacheWrite1h"] = long_write or 0
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    # an unknown model costs nothing
    calculate_cost(ANTHROPIC[model_id].cost if model_id in ANTHROPIC else Cost(), usage)


def _parse_json(s: str) -> Any:
    # pi's parseStreamingJson: a partial object reads as far as it parses, else {}
    if not s:
        return {}
    try:
        # `1e400` as null, as pi writes the call (JSON.stringify): never an infinity that no
        # later line or request body can carry
        return json.loads(s, parse_float=_finite_float, parse_constant=_not_json)
    except ValueError:
        return {}


def _finite_float(text: str) -> float | None:
    v = float(text)
    return v if math.isfinite(v) else None


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")  # NaN, Infinity: JSON.parse refuses them


def strip_scratch(out: dict[str, Any]) -> None:
    for b in out["content"]:
        b.pop("index", None)
        b.pop("partialJson", None)


async def call_model(
    body: Callable[[], dict[str, Any]], key: str, out: dict[str, Any], emit: Emit, timeout: float = 600.0
) -> None:
    """Stream the request `body()` builds into `out` (pi's AssistantMessage, filled in place so an
    abort keeps the partial). As in pi-ai, a request refused while being built is a failed answer."""
    try:
        params = body()
        # no SDK retries: the turn retries as pi's AgentSession does
        async with stream_events(params, key, timeout=timeout, max_retries=0) as stream:
            await emit({"type": "start", "partial": out})
            async for ev in stream:
                await _on_event(ev, out, emit)
        if out["stopReason"] == "error":
            raise RuntimeError("An unknown error occurred")
        await emit({"type": "done", "reason": out["stopReason"], "message": out})
    except Exception as e:
        strip_scratch(out)
        out["stopReason"] = "error"
        out["errorMessage"] = redact(error_text(e), key)
        await emit({"type": "error", "reason": "error", "error": out})


async def _on_event(ev: Any, out: dict[str, Any], emit: Emit) -> None:
    t = ev.type
    if t == "message_start":
        out["responseId"] = ev.message.id
        _usage(out, ev.message.usage, out["model"], start=True)
    elif t == "content_block_start":
        await _block_start(ev, out, emit)
    elif t == "content_block_delta":
        await _block_delta(ev, out, emit)
    elif t == "content_block_stop":
        await _block_stop(ev, out, emit)
    elif t == "message_delta":
        if ev.delta.stop_reason:
            out["rawStopReason"] = ev.delta.stop_reason
            out["stopReason"] = _STOP.get(ev.delta.stop_reason, "error")
        _usage(out, ev.usage, out["model"])


async def _block_start(ev: Any, out: dict[str, Any], emit: Emit) -> None:
    blocks, cb = out["content"], ev.content_block
    if cb.type == "text":
        blocks.append({"type": "text", "text": "", "index": ev.index})
        kind = "text_start"
    elif cb.type == "thinking":
        blocks.append({"type": "thinking", "thinking": "", "thinkingSignature": "", "index": ev.index})
        kind = "thinking_start"
    elif cb.type == "redacted_thinking":
        blocks.append(
            {
                "type": "thinking",
                "thinking": "[Reasoning redacted]",
                "thinkingSignature": cb.data,
                "redacted": True,
                "index": ev.index,
            }
        )
        kind = "thinking_start"
    elif cb.type == "tool_use":
        blocks.append(
            {
                "type": "toolCall",
                "id": cb.id,
                "name": cb.name,
                "arguments": cb.input or {},
                "partialJson": "",
                "index": ev.index,
            }
        )
        kind = "toolcall_start"
    else:
        return
    await emit({"type": kind, "contentIndex": len(blocks) - 1, "partial": out})


def _block_at(blocks: list[dict[str, Any]], index: int) -> int:
    return next((n for n, b in enumerate(blocks) if b.get("index") == index), -1)


async def _block_delta(ev: Any, out: dict[str, Any], emit: Emit) -> None:
    blocks = out["content"]
    i = _block_at(blocks, ev.index)
    if i < 0:
        return
    b, d = blocks[i], ev.delta
    if d.type == "text_delta" and b["type"] == "text":
        b["text"] += d.text
        await emit({"type": "text_delta", "contentIndex": i, "delta": d.text, "partial": out})
    elif d.type == "thinking_delta" and b["type"] == "thinking":
        b["thinking"] += d.thinking
        await emit({"type": "thinking_delta", "contentIndex": i, "delta": d.thinking, "partial": out})
    elif d.type == "input_json_delta" and b["type"] == "toolCall":
        b["partialJson"] += d.partial_json
        b["arguments"] = _parse_json(b["partialJson"])
        await emit({"type": "toolcall_delta", "contentIndex": i, "delta": d.partial_json, "partial": out})
    elif d.type == "signature_delta" and b["type"] == "thinking":
        b["thinkingSignature"] = (b.get("thinkingSignature") or "") + d.signature


async def _block_stop(ev: Any, out: dict[str, Any], emit: Emit) -> None:
    blocks = out["content"]
    i = _block_at(blocks, ev.index)
    if i < 0:
        return
    b = blocks[i]
    b.pop("index", None)
    if b["type"] == "text":
        await emit({"type": "text_end", "contentIndex": i, "content": b["text"], "partial": out})
    elif b["type"] == "thinking":
        await emit({"type": "thinking_end", "contentIndex": i, "content": b["thinking"], "partial": out})
    elif b["type"] == "toolCall":
        b["arguments"] = _parse_json(b.pop("partialJson", ""))
        await emit({"type": "toolcall_end", "contentIndex": i, "toolCall": b, "partial": out})
