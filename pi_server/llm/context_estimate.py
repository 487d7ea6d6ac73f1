"""pi-ai 1.6.0's estimateContextTokens (utils/estimate) and the max_tokens clamp built on it
(api/simple-options clampMaxTokensToContext).

Unlike the coding agent's estimateTokens (4 characters a token), pi-ai counts 3.5
characters a token and starts from the usage of the last assistant reply that still
describes the prefix. JS arithmetic is kept: a missing number is NaN, null is 0.
"""

from __future__ import annotations

import math
from typing import Any

from pi_server.jsutil import js_stringify, u16len
from pi_server.llm.models import ModelInfo
from pi_server.llm.transcript import system_message_text

NAN = float("nan")
_CHARS_PER_TOKEN = 3.5
_IMAGE_CHARS = 4800
_SAFETY_TOKENS = 4096
_SAFETY_RATIO = 0.15
_MIN_OUTPUT_WITH_RATIO = 32768


def js_num(v: Any, missing: bool = False) -> float:
    """JS ToNumber of a JSON value (`missing`: the field was absent, i.e. undefined)."""
    if missing:
        return NAN
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return v  # an int stays one: a count written back to JSON reads as pi writes it
    if isinstance(v, str):
        t = v.strip()
        if not t:
            return 0.0
        try:
            return float(t)
        except ValueError:
            return NAN
    return NAN


def js_max(*xs: float) -> float:
    return NAN if any(math.isnan(x) for x in xs) else max(xs)


def js_min(*xs: float) -> float:
    return NAN if any(math.isnan(x) for x in xs) else min(xs)


def _tokens(chars: float) -> int:
    return math.ceil(chars / _CHARS_PER_TOKEN)


def _text_len(b: dict[str, Any]) -> int:
    t = b.get("text")
    return u16len(t) if isinstance(t, str) else 0


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return _tokens(u16len(content))
    blocks = content if isinstance(content, list) else []
    chars = 0
    for b in blocks:
        if isinstance(b, dict):
            chars += _text_len(b) if b.get("type") == "text" else _IMAGE_CHARS
    return _tokens(chars)


def _tools_tokens(tools: Any) -> int:
    return _tokens(u16len(js_stringify(tools))) if isinstance(tools, list) and tools else 0


def message_tokens(m: dict[str, Any]) -> int:
    """estimateMessageTokens of one LLM message."""
    role = m.get("role")
    if role == "system":
        return (
            _tokens(u16len(system_message_text(m)))
            + _tools_tokens(m.get("toolsAdded"))
            + _tools_tokens(m.get("toolsRemoved"))
        )
    if role in ("user", "toolResult"):
        return _content_tokens(m.get("content"))
    chars = 0
    content = m.get("content")
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            chars += _text_len(b)
        elif t == "thinking":
            th = b.get("thinking")
            chars += u16len(th) if isinstance(th, str) else 0
        else:
            name = b.get("name")
            args = js_stringify(b["arguments"]) if "arguments" in b else "undefined"
            chars += (u16len(name) if isinstance(name, str) else 0) + u16len(args)
    return _tokens(chars)


def context_tokens(usage: Any) -> float:
    """pi's calculateContextTokens (the same in pi-ai and the coding agent): totalTokens, else
    the sum of the four counts; a count that is missing makes it NaN, which is never > 0."""
    if not isinstance(usage, dict):
        return NAN
    total = js_num(usage.get("totalTokens"), "totalTokens" not in usage)
    if total and not math.isnan(total):
        return total
    return sum(js_num(usage.get(k), k not in usage) for k in ("input", "output", "cacheRead", "cacheWrite"))


def _ts(m: dict[str, Any]) -> float:
    return js_num(m.get("timestamp"), "timestamp" not in m)


def _last_usage(messages: list[dict[str, Any]]) -> tuple[float, int] | None:
    latest = -math.inf
    found = None
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            ts = _ts(m)
            applies = not math.isnan(ts) and not math.isnan(latest) and ts >= latest
            if applies and m.get("stopReason") not in ("aborted", "error"):
                used = context_tokens(m.get("usage"))
                if used > 0:  # NaN compares false, as in JS
                    found = (used, i)
        latest = js_max(latest, _ts(m))
    return found


def estimate_context_tokens(messages: list[dict[str, Any]]) -> float:
    usage = _last_usage(messages)
    if usage is None:
        return float(sum(message_tokens(m) for m in messages))
    used, index = usage
    return used + sum(message_tokens(m) for m in messages[index + 1 :])


def clamp_max_tokens(model: ModelInfo, messages: list[dict[str, Any]], max_tokens: float) -> float:
    """clampMaxTokensToContext: room for the output after the input and a safety margin."""
    if model.context_window <= 0:
        return js_max(1, max_tokens)
    inp = estimate_context_tokens(messages)
    margin = js_max(_SAFETY_TOKENS, math.ceil(inp * _SAFETY_RATIO) if not math.isnan(inp) else NAN)
    room = model.context_window - inp - margin
    if room < _MIN_OUTPUT_WITH_RATIO:
        room = js_min(_MIN_OUTPUT_WITH_RATIO, model.context_window - inp - _SAFETY_TOKENS)
    return js_min(max_tokens, js_max(1, room))
