"""One streamed Messages API call, turned into pi's assistant message and its stream events.

Mirrors pi-ai's streamAnthropic: blocks text / thinking (with thinkingSignature) /
toolCall, usage and cost from message_start/message_delta, pi's stop reason
mapping, and on failure stopReason "error" (or "aborted") with errorMessage.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pi_server.agent.costs import COSTS

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
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }


def _cost(model_id: str, usage: dict[str, Any]) -> None:
    c = COSTS.get(model_id, {})
    cost = usage["cost"]
    for k in ("input", "output", "cacheRead", "cacheWrite"):
        cost[k] = c.get(k, 0) / 1_000_000 * usage[k]
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]


def _usage(out: dict[str, Any], u: Any, model_id: str) -> None:
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
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    _cost(model_id, usage)


def _parse_json(s: str) -> Any:
    # pi's parseStreamingJson: a partial object reads as far as it parses, else {}
    if not s:
        return {}
    try:
        return json.loads(s)
    except ValueError:
        return {}


def strip_scratch(out: dict[str, Any]) -> None:
    for b in out["content"]:
        b.pop("index", None)
        b.pop("partialJson", None)


def error_text(e: Exception) -> str:
    """The message pi's JS SDK would give (`<status> <body>`), so its retry rules see the same words."""
    import anthropic

    if isinstance(e, anthropic.APIStatusError):
        body = e.body if e.body is not None else e.message
        return f"{e.status_code} {json.dumps(body) if not isinstance(body, str) else body}"
    if isinstance(e, anthropic.APITimeoutError):
        return "Request timed out."
    if isinstance(e, anthropic.APIConnectionError):
        return "Connection error."
    return str(e) or type(e).__name__


async def _client(key: str, timeout: float) -> Any:
    """The SDK client, made off the event loop: the SDK's first import takes seconds and
    the client loads the CA bundle, and every other client of the server would wait."""
    anthropic = await asyncio.to_thread(importlib.import_module, "anthropic")
    return await asyncio.to_thread(
        anthropic.AsyncAnthropic,
        api_key=key,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=timeout,
        max_retries=0,
    )


async def call_model(body: dict[str, Any], key: str, out: dict[str, Any], emit: Emit, timeout: float = 600.0) -> None:
    """Stream `body` into `out` (pi's AssistantMessage, filled in place so an abort keeps the partial)."""
    client = await _client(key, timeout)
    model_id = out["model"]
    blocks = out["content"]
    try:
        params = {k: v for k, v in body.items() if k != "stream"}
        stream = await client.messages.create(**params, stream=True)
        await emit({"type": "start", "partial": out})
        async for ev in stream:
            t = ev.type
            if t == "message_start":
                out["responseId"] = ev.message.id
                _usage(out, ev.message.usage, model_id)
            elif t == "content_block_start":
                cb = ev.content_block
                if cb.type == "text":
                    blocks.append({"type": "text", "text": "", "index": ev.index})
                    await emit({"type": "text_start", "contentIndex": len(blocks) - 1, "partial": out})
                elif cb.type == "thinking":
                    blocks.append({"type": "thinking", "thinking": "", "thinkingSignature": "", "index": ev.index})
                    await emit({"type": "thinking_start", "contentIndex": len(blocks) - 1, "partial": out})
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
                    await emit({"type": "thinking_start", "contentIndex": len(blocks) - 1, "partial": out})
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
                    await emit({"type": "toolcall_start", "contentIndex": len(blocks) - 1, "partial": out})
            elif t == "content_block_delta":
                i = next((n for n, b in enumerate(blocks) if b.get("index") == ev.index), -1)
                if i < 0:
                    continue
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
            elif t == "content_block_stop":
                i = next((n for n, b in enumerate(blocks) if b.get("index") == ev.index), -1)
                if i < 0:
                    continue
                b = blocks[i]
                b.pop("index", None)
                if b["type"] == "text":
                    await emit({"type": "text_end", "contentIndex": i, "content": b["text"], "partial": out})
                elif b["type"] == "thinking":
                    await emit({"type": "thinking_end", "contentIndex": i, "content": b["thinking"], "partial": out})
                elif b["type"] == "toolCall":
                    b["arguments"] = _parse_json(b.pop("partialJson", ""))
                    await emit({"type": "toolcall_end", "contentIndex": i, "toolCall": b, "partial": out})
            elif t == "message_delta":
                if ev.delta.stop_reason:
                    out["stopReason"] = _STOP.get(ev.delta.stop_reason, "error")
                _usage(out, ev.usage, model_id)
        if out["stopReason"] == "error":
            raise RuntimeError("An unknown error occurred")
        await emit({"type": "done", "reason": out["stopReason"], "message": out})
    except Exception as e:
        strip_scratch(out)
        out["stopReason"] = "error"
        out["errorMessage"] = error_text(e).replace(key, "[key]") if key else error_text(e)
        await emit({"type": "error", "reason": "error", "error": out})
    finally:
        await client.close()
