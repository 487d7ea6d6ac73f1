"""pi's estimateTokens: characters / 4, rounded up, per message."""

from __future__ import annotations

import math
from typing import Any

from pi_server.jsutil import js_stringify, u16len


def _len(v: Any) -> int:
    return u16len(v) if isinstance(v, str) else 0


def estimate_tokens(m: dict[str, Any]) -> int:
    role = m.get("role")
    chars = 0
    content = m.get("content")
    if role == "user":
        if isinstance(content, str):
            chars = u16len(content)
        elif isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "text" and b.get("text"):
                    chars += _len(b["text"])
        return math.ceil(chars / 4)
    if role == "assistant":
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                chars += _len(b.get("text"))
            elif t == "thinking":
                chars += _len(b.get("thinking"))
            elif t == "toolCall":
                chars += _len(b.get("name")) + (u16len(js_stringify(b["arguments"])) if "arguments" in b else 0)
        return math.ceil(chars / 4)
    if role in ("custom", "toolResult"):
        if isinstance(content, str):
            chars = u16len(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and b.get("text"):
                    chars += _len(b["text"])
                if b.get("type") == "image":
                    chars += 4800
        return math.ceil(chars / 4)
    if role == "bashExecution":
        return math.ceil((_len(m.get("command")) + _len(m.get("output"))) / 4)
    if role in ("branchSummary", "compactionSummary"):
        return math.ceil(_len(m.get("summary")) / 4)
    return 0


def estimate_total(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m) for m in messages)
