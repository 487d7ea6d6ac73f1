"""What every server-side tool shares: the cwd fence, safe opens, pi's result shapes."""

from __future__ import annotations

import os
import stat
from typing import Any

from pi_server.agent.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head
from pi_server.store import beneath


class ToolError(Exception):
    """The tool failed; pi turns the message into an error tool result."""


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "details": {}}


def resolve_in_cwd(path: str, cwd: str) -> str:
    """pi's resolveToCwd, then refuse anything whose real path leaves the cwd."""
    p = path[1:] if path.startswith("@") else path
    if p == "~" or p.startswith("~/"):
        p = os.path.expanduser(p)
    full = os.path.normpath(p if os.path.isabs(p) else os.path.join(cwd, p))
    real, root = os.path.realpath(full), os.path.realpath(cwd)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise ToolError(f"Path is outside the session's working directory ({cwd}): {path}")
    return full


def kind(path: str) -> str:
    """'dir', 'file', 'missing' or 'special' (FIFO, socket, device: never opened, it could block)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "special"


def open_in_cwd(path: str, cwd: str, flags: int = os.O_RDONLY) -> int:
    """A descriptor on `path` (as `resolve_in_cwd` gave it) that cannot be anything outside the
    cwd, whatever is swapped for a symlink after the check (store/beneath.py). Opened
    non-blocking: a FIFO swapped in cannot hang the caller."""
    try:
        return beneath.open_beneath(path, [cwd], flags | os.O_NONBLOCK | os.O_NOCTTY)
    except beneath.Escapes:
        raise ToolError(f"Path is outside the session's working directory ({cwd}): {path}") from None


def read_regular(path: str, max_bytes: int | None = None, cwd: str | None = None) -> bytes:
    """A regular file's bytes. Opened non-blocking and checked after opening, so a FIFO
    swapped in after the check cannot hang the reader; with `cwd`, opened within it
    (`open_in_cwd`)."""
    if cwd is None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    else:
        fd = open_in_cwd(path, cwd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"Not a regular file: {path}")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while max_bytes is None or total < max_bytes:
            chunk = os.read(fd, 1 << 20 if max_bytes is None else min(1 << 20, max_bytes - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def with_notices(
    lines: list[str], notices: list[str], details: dict[str, Any], after: tuple[str, ...] = ()
) -> dict[str, Any]:
    """pi's result for ls/grep/find: the lines cut at 50KB, notices in brackets (the size
    notice between `notices` and `after`, as pi orders them), details if any."""
    t = truncate_head("\n".join(lines), max_lines=2**53 - 1)
    out = t["content"]
    if t["truncated"]:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = t
    notices += after
    if notices:
        out += f"\n\n[{'. '.join(notices)}]"
    result: dict[str, Any] = {"content": [{"type": "text", "text": out}]}
    if details:
        result["details"] = details
    return result
