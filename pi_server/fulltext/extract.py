"""The text pi shows for an entry, as the full-text index holds it (never images or
thinking signatures). A tool call is its name and its arguments' values, one a line:
strings as written (the code of an edit, a command, a path: found by a phrase across
its lines, as a user would look for it), other values as JSON."""

from __future__ import annotations

from typing import Any

import orjson

from pi_server.jsutil import js_date_ms
from pi_server.store import entry_types as et
from pi_server.store.content import join_text


def argument_values(args: Any) -> list[str]:
    """The values of a tool call's arguments in order, depth first (a walk of its own: the
    nesting of a hostile file is no recursion)."""
    out, todo = [], [args]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(reversed(v.values()))
        elif isinstance(v, list):
            todo.extend(reversed(v))
        elif isinstance(v, str):
            out.append(v)
        elif v is not None:
            out.append(orjson.dumps(v).decode())
    return out


def _tool_calls(content: Any) -> list[str]:
    out = []
    for c in content if isinstance(content, list) else []:
        if isinstance(c, dict) and c.get("type") == "toolCall":
            name = c.get("name")
            out.append("\n".join([name if isinstance(name, str) else "", *argument_values(c.get("arguments"))]))
    return out


def _message_texts(msg: dict[str, Any]) -> tuple[str, str]:
    role = msg.get("role")
    lead = join_text(msg.get("content"), " ")
    parts = [lead]
    if role == "assistant":
        parts += _tool_calls(msg.get("content"))
    elif role == "bashExecution":
        parts += [str(msg.get("command") or ""), str(msg.get("output") or "")]
    return lead, "\n".join(p for p in parts if p)


def entry_texts(entry: dict[str, Any]) -> tuple[str, str]:
    """What a search looks in for one entry, and the part of it that is a message's
    content (its lead: what a searched listing looks in, for a user or assistant)."""
    t = entry.get("type")
    if t == et.MESSAGE:
        msg = entry.get("message")
        return _message_texts(msg) if isinstance(msg, dict) else ("", "")
    if t == et.CUSTOM_MESSAGE:
        return "", join_text(entry.get("content"), " ")
    if t in (et.COMPACTION, et.BRANCH_SUMMARY):
        v = entry.get("summary")
    elif t == et.LABEL:
        v = entry.get("label")
    elif t == et.SESSION_INFO:
        v = entry.get("name")
    else:
        return "", ""
    return "", v if isinstance(v, str) else ""


def entry_text(entry: dict[str, Any]) -> str:
    """What a search looks in for one entry."""
    return entry_texts(entry)[1]


def entry_role(entry: dict[str, Any]) -> str | None:
    msg = entry.get("message")
    if entry.get("type") == et.MESSAGE and isinstance(msg, dict) and isinstance(msg.get("role"), str):
        return msg["role"]
    return None


def entry_ms(entry: dict[str, Any]) -> int:
    ms = js_date_ms(entry.get("timestamp"))
    return int(ms) if ms == ms else 0


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One line of a session file as an entry (None: not an entry, or unreadable)."""
    try:
        e = orjson.loads(line)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return e if isinstance(e, dict) and isinstance(e.get("id"), str) else None
