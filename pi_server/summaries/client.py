"""Asking Anthropic for a summary: the official SDK, streaming, with pi 1.6.0's request shape.

The key, the SDK client and the error wording are the model layer's
(`pi_server.llm.client`); this module adds the summary request, its output
budget (pi's model default fitted into the context window), the usage pi
records and the summary errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pi_server.jsutil import u16len
from pi_server.llm.anthropic import sanitize
from pi_server.llm.client import plain_error, redact, stream_text
from pi_server.llm.models import ModelInfo
from pi_server.summaries.prompts import SUMMARIZATION_SYSTEM_PROMPT

_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_ADAPTIVE = ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


class SummaryError(Exception):
    """The model could not give a summary; the message says why (never the key)."""


def _input_tokens(prompt: str) -> int:
    """pi-ai's estimateContextTokens of the summary context: 3.5 characters a token."""
    return math.ceil(u16len(SUMMARIZATION_SYSTEM_PROMPT) / 3.5) + math.ceil(u16len(prompt) / 3.5)


def _fit(model: ModelInfo, input_tokens: int, max_tokens: int) -> int:
    """pi-ai's clampMaxTokensToContext: leave room for an input counted higher than estimated."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    room = model.context_window - input_tokens - max(4096, math.ceil(input_tokens * 0.15))
    if room < 32768:
        room = min(32768, model.context_window - input_tokens - 4096)
    return min(max_tokens, max(1, room))


def thinking_fields(model: ModelInfo, prompt: str, level: Any) -> dict[str, Any]:
    """max_tokens, thinking and output_config as pi-ai 1.6.0's streamSimple sets them for a
    request with no output cap of its own (pi's summaries pass none since #9512)."""
    inputs = _input_tokens(prompt)
    base = _fit(model, inputs, model.max_tokens)
    reasoning = level if model.reasoning and isinstance(level, str) and level not in ("", "off") else None
    if reasoning is None:
        return {"max_tokens": base, **({"thinking": {"type": "disabled"}} if model.reasoning else {})}
    if any(s in model.id for s in _ADAPTIVE):
        effort = model.thinking_level_map.get(reasoning) or _EFFORT.get(reasoning, "high")
        return {
            "max_tokens": base,
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": effort},
        }
    budget = _BUDGETS.get("high" if reasoning in ("xhigh", "max") else reasoning, 0)
    adjusted = min(base + budget, model.max_tokens)
    if adjusted <= budget:
        budget = min(budget, max(0, adjusted - 1024))
    max_tokens = _fit(model, inputs, adjusted)
    budget = min(budget, max(0, max_tokens - 1024))
    return {
        "max_tokens": max_tokens,
        "thinking": {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"},
    }


def request_body(model: ModelInfo, prompt: str, thinking: Any = None) -> dict[str, Any]:
    """The body pi's completeSummarization sends: no cache_control (cacheRetention "none"),
    the model's output budget, the session's thinking level."""
    opts = thinking_fields(model, prompt, thinking)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": [{"role": "user", "content": [{"type": "text", "text": sanitize(prompt)}]}],
        "max_tokens": opts["max_tokens"],
        "stream": True,
        "system": [{"type": "text", "text": SUMMARIZATION_SYSTEM_PROMPT}],
    }
    for k in ("thinking", "output_config"):
        if k in opts:
            body[k] = opts[k]
    return body


def usage_of(model: ModelInfo, u: Any) -> dict[str, Any]:
    """pi-ai's usage of an answer, with its cost (calculateCost: 1h cache writes at twice the input)."""
    usage: dict[str, Any] = {
        "input": getattr(u, "input_tokens", 0) or 0,
        "output": getattr(u, "output_tokens", 0) or 0,
        "cacheRead": getattr(u, "cache_read_input_tokens", 0) or 0,
        "cacheWrite": getattr(u, "cache_creation_input_tokens", 0) or 0,
    }
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    creation = getattr(u, "cache_creation", None)
    long_write = getattr(creation, "ephemeral_1h_input_tokens", 0) or 0
    rate = model.cost.per_million
    cost = {
        "input": rate("input") / 1000000 * usage["input"],
        "output": rate("output") / 1000000 * usage["output"],
        "cacheRead": rate("cacheRead") / 1000000 * usage["cacheRead"],
        "cacheWrite": (rate("cacheWrite") * (usage["cacheWrite"] - long_write) + rate("input") * 2 * long_write)
        / 1000000,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    cost["totalFromProvider"] = False
    usage["cost"] = cost
    usage["cacheWrite1h"] = long_write
    return usage


async def complete(
    body: dict[str, Any],
    key: str,
    *,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """The answer's text (see `complete_with_usage`)."""
    text, _ = await complete_with_usage(body, key, base_url=base_url, timeout=timeout, on_text=on_text)
    return text


async def complete_with_usage(
    body: dict[str, Any],
    key: str,
    *,
    model: ModelInfo | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """Stream the request (the SDK retries twice); returns the answer's text and pi's usage of it
    (priced for `model`). As pi 1.6.0, a cut-off answer or a tool call is a failed summary."""
    try:
        final = await stream_text(body, key, url=base_url, timeout=timeout, max_retries=2, on_text=on_text)
    except Exception as e:
        message = plain_error(e, timeout)
        if message is None:
            raise
        raise SummaryError(redact(message, key)) from None
    if final.stop_reason == "max_tokens":
        raise SummaryError("generation hit the token cap and the summary is incomplete")
    if final.stop_reason == "tool_use" or any(getattr(b, "type", None) == "tool_use" for b in final.content):
        raise SummaryError("the model attempted to call a tool")
    if final.stop_reason not in ("end_turn", "stop_sequence", "pause_turn", None):
        raise SummaryError(f"the model stopped with {final.stop_reason}")
    text = "\n".join(b.text for b in final.content if getattr(b, "type", None) == "text")
    return text, usage_of(model, final.usage) if model is not None else None
