"""Message content as pi stores it: a string, or a list of typed blocks."""

from __future__ import annotations

from typing import Any


def block_fields(c: Any) -> tuple[Any, Any]:
    if isinstance(c, dict):
        return c.get("type"), c.get("text")
    return getattr(c, "type", None), getattr(c, "text", None)


def join_text(content: Any, sep: str) -> str:
    """Text blocks joined (the session list's extractTextContent uses " ")."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for c in content:
        t, text = block_fields(c)
        if t == "text":
            parts.append(text if isinstance(text, str) else "")
    return sep.join(parts)
