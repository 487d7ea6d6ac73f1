"""pi's estimateTokens: characters / 4, rounded up, per message."""

from __future__ import annotations

import math
from typing import Any

from pi_server.jsutil import js_stringify, u16len


def _len(v: Any) -> int:
    return u16len(v) if isinstance(v, str) else 0


def _content_chars(content: Any) -> int:
    """Text length, and 4800 characters per image (pi's ESTIMATED_IMAGE_CHARS)."""
    if isinstance(content, str):
        return u16len(content)
    chars = 0
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text" and b.get("text"):
            chars += _len(b["text"])
        elif b.get("type") == "image":
            chars += 4800
    return chars


def _system_chars(m: dict[str, Any]) -> int:
    """pi 1.6.0: content, every section's text, and the declared tools as JSON."""
    chars = _content_chars(m.get("content"))
    sections = m.get("sections")
    if isinstance(sections, dict):
        chars += sum(_len(v) for v in sections.values())
    added = m.get("toolsAdded")
    if added:
        chars += u16len(js_stringify(added))
    return chars


def estimate_tokens(m: dict[str, Any]) -> int:
    role = m.get("role")
    chars = 0
    content = m.get("content")
    if role == "system":
        return math.ceil(_system_chars(m) / 4)
    if role in ("user", "custom", "toolResult"):
        # pi 1.6.0 counts images in user messages too (0.73.1 counted only text there)
        return math.ceil(_content_chars(content) / 4)
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
    if role == "bashExecution":
        return math.ceil((_len(m.get("command")) + _len(m.get("output"))) / 4)
    if role in ("branchSummary", "compactionSummary"):
        return math.ceil(_len(m.get("summary")) / 4)
    return 0


def estimate_total(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m) for m in messages)

