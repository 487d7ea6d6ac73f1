"""pi's output truncation (core/tools/truncate.js): head truncation by lines and UTF-8 bytes."""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"


def _bytes(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
    total_bytes = _bytes(content)
    # counted as pi 1.6 counts them: no lines in "", none after a final newline
    lines = content.split("\n") if content else []
    if content.endswith("\n"):
        lines.pop()
    base = {"totalLines": len(lines), "totalBytes": total_bytes, "lastLinePartial": False}
    limits = {"maxLines": max_lines, "maxBytes": max_bytes}
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return {
            "content": content,
            "truncated": False,
            "truncatedBy": None,
            **base,
            "outputLines": len(lines),
            "outputBytes": total_bytes,
            "firstLineExceedsLimit": False,
            **limits,
        }
    if _bytes(lines[0]) > max_bytes:
        return {
            "content": "",
            "truncated": True,
            "truncatedBy": "bytes",
            **base,
            "outputLines": 0,
            "outputBytes": 0,
            "firstLineExceedsLimit": True,
            **limits,
        }
    out: list[str] = []
    used = 0
    by = "lines"
    for i, line in enumerate(lines[:max_lines]):
        n = _bytes(line) + (1 if i > 0 else 0)
        if used + n > max_bytes:
            by = "bytes"
            break
        out.append(line)
        used += n
    if len(out) >= max_lines and used <= max_bytes:
        by = "lines"
    text = "\n".join(out)
    return {
        "content": text,
        "truncated": True,
        "truncatedBy": by,
        **base,
        "outputLines": len(out),
        "outputBytes": _bytes(text),
        "firstLineExceedsLimit": False,
        **limits,
    }


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True
