"""System messages in a transcript, as pi-ai 1.6.0 replays them (utils/transcript, utils/text).

pi 1.6.0 stores its system prompt and tool set as `role: "system"` messages: a
first one with every section and tool, then patches (sections by name, `null`
removing one; tools removed, then added). The current prompt is their replay.
"""

from __future__ import annotations

from typing import Any

from pi_server.jsutil import js_key


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai's contentText: a string as is, else the text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def _sections(m: dict[str, Any]) -> dict[str, Any]:
    s = m.get("sections")
    return s if isinstance(s, dict) else {}


def _tool_list(m: dict[str, Any], key: str) -> list[dict[str, Any]]:
    tools = m.get(key)
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def _system_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """The system messages (a context may hold messages that are no objects: pi passes them on)."""
    return [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]


def current_tools(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools after every system message's removals then additions, in declaration order."""
    tools: dict[Any, dict[str, Any]] = {}
    for m in _system_messages(messages):
        for t in _tool_list(m, "toolsRemoved"):
            tools.pop(js_key(t.get("name")), None)
        for t in _tool_list(m, "toolsAdded"):
            tools[js_key(t.get("name"))] = t
    return list(tools.values())


def current_system_message(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """pi-ai's getCurrentSystemMessage: every system message replayed into one (None: there is none)."""
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = None
    seen = False
    for m in _system_messages(messages):
        if not seen:
            seen, timestamp = True, m.get("timestamp")
        text = content_text(m.get("content"))
        if text:
            content.append(text)
        for name, value in _sections(m).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
    tools = current_tools(messages)
    if not seen and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = tools
    out["timestamp"] = timestamp if timestamp is not None else 0
    return out


def system_message_text(message: dict[str, Any]) -> str:
    """pi-ai's getSystemMessageText: the content, then each section, joined by blank lines."""
    parts = [content_text(message.get("content"))]
    parts += [v for v in _sections(message).values() if v is not None]
    return "\n\n".join(p for p in parts if isinstance(p, str) and p)


def render_system_update(message: dict[str, Any]) -> str:
    """pi-ai's renderSystemMessageUpdate: a later system message as sent mid-conversation."""
    parts = []
    text = content_text(message.get("content"))
    if text:
        parts.append(text)
    for name, value in _sections(message).items():
        if value is None:
            parts.append(f'Removed system prompt section "{name}".')
        else:
            parts.append(f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(parts)


def collapse_system_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For models without mid-conversation system messages: the replayed one leads, the rest go."""
    head = current_system_message(messages)
    rest = [m for m in messages if m.get("role") != "system"]
    return [head, *rest] if head else rest


def system_at(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The `system` field of pi/buildContext: the replayed prompt text, sections and tools."""
    head = current_system_message(messages)
    if head is None:
        return None
    return {
        "text": system_message_text(head),
        "sections": head.get("sections", {}),
        "tools": head.get("toolsAdded", []),
    }
