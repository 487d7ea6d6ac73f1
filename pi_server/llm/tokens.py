"""pi's estimateTokens: characters / 4, rounded up, per message; and the coding agent's
estimateProjectedContextTokens built on it."""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
import orjson

from pi_server.jsutil import SLICE, js_stringify, u16len
from pi_server.llm.context_estimate import context_tokens
from pi_server.llm.transcript import current_system_message
from pi_server.store import entry_types as et
from pi_server.store.decode import DECODE_ERRORS, loads

# orjson writes what JSON.stringify writes, but for floats: `100.0` (JS: `100`) and
# exponents (`1e+16`, JS: `10000000000000000`; orjson always signs them). A match,
# even inside a string, takes the exact path.
_FLOAT_FORMS = re.compile(rb"[0-9](?:\.0(?:[,\]}]|$)|[eE][-+0-9])")


def stringify_len(value: Any) -> int:
    """`JSON.stringify(value).length`, through orjson when its text is JS's."""
    try:
        b = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate, a huge int
        return _js_len(value)
    if _FLOAT_FORMS.search(b):
        return _js_len(value)
    return _utf16_units(b)


def _js_len(value: Any) -> int:
    """The exact path: JSON.stringify escapes a lone surrogate as `\\udXXX` (6 units) where
    js_stringify keeps the character (any surrogate left in a Python string is a lone one)."""
    s = js_stringify(value)
    find = _SURROGATE.findall  # a slice at a time, as u16len
    return u16len(s) + 5 * sum(len(find(s, i, i + SLICE)) for i in range(0, len(s), SLICE))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf16_units(b: bytes) -> int:
    """UTF-16 units of UTF-8 text: one per lead byte, two for a 4-byte sequence."""
    if b.isascii():
        return len(b)
    return len(b.translate(None, _CONTINUATION)) + len(b) - len(b.translate(None, _LEAD4))


_CONTINUATION = bytes(range(0x80, 0xC0))
_LEAD4 = bytes(range(0xF0, 0xF8))


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
        chars += stringify_len(added)
    return chars


def estimate_tokens(m: dict[str, Any]) -> int:
    if not isinstance(m, dict):
        return 0  # pi's switch on `message.role` falls through: a message that is no object counts 0
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
                chars += _len(b.get("name")) + (stringify_len(b["arguments"]) if "arguments" in b else 0)
        return math.ceil(chars / 4)
    if role == "bashExecution":
        return math.ceil((_len(m.get("command")) + _len(m.get("output"))) / 4)
    if role in ("branchSummary", "compactionSummary"):
        return math.ceil(_len(m.get("summary")) / 4)
    return 0


def estimate_total(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def usable_usage(m: dict[str, Any]) -> bool:
    """pi's getAssistantUsage: a finished assistant reply whose usage counts some tokens (a
    message or usage that is no object counts none: its fields read as undefined in pi)."""
    return (
        isinstance(m, dict)
        and m.get("role") == "assistant"
        and m.get("stopReason") not in ("aborted", "error")
        and isinstance(m.get("usage"), dict)
        and context_tokens(m["usage"]) > 0
    )


def projected_context_tokens(messages: list[dict[str, Any]], ids: list[Any], path: list[dict[str, Any]]) -> float:
    """pi's estimateProjectedContextTokens over a projection's messages (`ids`: the source entry
    of each) at the leaf ending `path`: the last usable usage plus estimates of what follows,
    unless a later context edit or compaction made that usage stale; then an estimate of it all
    (the system message in force counted once)."""
    last = next((i for i in range(len(messages) - 1, -1, -1) if usable_usage(messages[i])), None)
    if last is not None:
        where = next((i for i, e in enumerate(path) if e.get("id") == ids[last]), -1) if ids[last] else -1
        stale = next(
            (i for i in range(len(path) - 1, -1, -1) if path[i].get("type") in (et.CONTEXT_EDIT, et.COMPACTION)), -1
        )
        if where > stale:
            return context_tokens(messages[last]["usage"]) + estimate_total(messages[last + 1 :])
    system = current_system_message(messages)
    tokens = estimate_tokens(system) if system else 0
    return tokens + sum(estimate_tokens(m) for m in messages if not isinstance(m, dict) or m.get("role") != "system")


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    thinking: Any = None
    name: Any = None
    arguments: msgspec.Raw = msgspec.Raw(b"")  # empty: absent


class _Msg(msgspec.Struct, gc=False):
    role: Any = None
    content: list[_Block] | str | None = None
    command: Any = None
    output: Any = None
    summary: Any = None


_msg_decoder = msgspec.json.Decoder(_Msg)


def estimate_raw(raw: msgspec.Raw) -> int:
    """estimate_tokens of a message given as JSON bytes, decoding only the counted fields."""
    try:
        m = _msg_decoder.decode(raw)
    except DECODE_ERRORS:
        return estimate_tokens(loads(bytes(raw)))  # blocks of other shapes: the general path
    role, content = m.role, m.content
    if role == "toolResult" or role == "user" or role == "custom":
        if type(content) is str:
            return -(-_slen(content) // 4)
        chars = 0
        for b in content or ():
            t = b.type
            if t == "text" and b.text:
                chars += _slen(b.text)
            elif t == "image":
                chars += 4800
        return -(-chars // 4)
    if role == "assistant":
        return -(-_assistant_chars(content) // 4) if type(content) is list else 0
    if role == "bashExecution":
        return math.ceil((_len(m.command) + _len(m.output)) / 4)
    if role in ("branchSummary", "compactionSummary"):
        return math.ceil(_len(m.summary) / 4)
    if role == "system":
        return estimate_tokens(loads(bytes(raw)))
    return 0


def _slen(v: Any) -> int:
    """_len, inline-cheap for the common ASCII text."""
    if type(v) is str:
        return len(v) if v.isascii() else u16len(v)
    return 0


def _assistant_chars(content: list[_Block]) -> int:
    chars = 0
    for b in content:
        t = b.type
        if t == "text":
            chars += _slen(b.text)
        elif t == "thinking":
            chars += _slen(b.thinking)
        elif t == "toolCall":
            chars += _slen(b.name)
            if len(b.arguments):
                chars += _raw_stringify_len(b.arguments)
    return chars


def _no_float(_text: str) -> Any:
    raise ValueError("a float")


_float_free = msgspec.json.Decoder(float_hook=_no_float)


def _raw_stringify_len(raw: msgspec.Raw) -> int:
    """stringify_len of JSON bytes: without a float, orjson's text is JS's (no pattern scan)."""
    try:
        value = _float_free.decode(raw)
    except DECODE_ERRORS:
        return stringify_len(loads(bytes(raw)))
    try:
        b = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate; an int JS would read as a float
        return stringify_len(loads(bytes(raw)))
    return _utf16_units(b)
