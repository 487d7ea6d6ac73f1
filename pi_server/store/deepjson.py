"""A JSON reader without recursion, for lines nested deeper than orjson reads (1,024 levels).

pi's `JSON.parse` reads any depth, so such a line is an entry to pi. It is read here with an
explicit stack; below `KEEP_DEPTH` levels a value is kept as its JSON text (`msgspec.Raw`),
which answers write out as it is, so no value held in memory is deeper than that and the
code that walks values (recursively, as JSON encoders do) stays within its limits.
Strings are read by the json module's scanner, which keeps lone surrogates as pi does.
"""

from __future__ import annotations

import re
from json.decoder import JSONDecodeError, scanstring
from typing import Any

import msgspec

KEEP_DEPTH = 1_000
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"null": None, "true": True, "false": False}


class _Frame:
    __slots__ = ("value", "key", "start")

    def __init__(self, value: Any, start: int) -> None:
        self.value = value  # the list or dict being built
        self.key: str | None = None
        self.start = start


def loads_deep(s: str) -> Any:
    """`s` parsed as JSON.parse would (no NaN/Infinity, nothing after the value); raises
    JSONDecodeError."""
    stack: list[_Frame] = []
    pos = _WS.match(s, 0).end()  # type: ignore[union-attr]
    while True:
        value, pos, opened = _value(s, pos, stack)
        if opened:
            continue
        while True:  # a value is complete: put it in its container, close containers that end
            if not stack:
                end = _WS.match(s, pos).end()  # type: ignore[union-attr]
                if end != len(s):
                    raise JSONDecodeError("Extra data", s, end)
                return value
            top = stack[-1]
            if isinstance(top.value, list):
                top.value.append(value)
            else:
                top.value[top.key] = value
            pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
            ch = s[pos : pos + 1]
            close = "]" if s[top.start] == "[" else "}"
            if ch == ",":
                pos = _WS.match(s, pos + 1).end()  # type: ignore[union-attr]
                if close == "}":
                    top.key, pos = _key(s, pos)
                break
            if ch != close:
                raise JSONDecodeError(f"Expecting ',' or '{close}'", s, pos)
            pos += 1
            stack.pop()
            value = top.value


_TOKEN = re.compile(
    r'[ \t\n\r]*(?:([\[{])|([\]}])|(,)|(:)|("(?:[^"\\\x00-\x1f]|\\["\\/bfnrtu])*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![0-9])|true|false|null))"
)
_ESCAPE_U = re.compile(r"\\u(?![0-9a-fA-F]{4})")


def _skip(s: str, pos: int) -> int:
    """The end of the container at `pos`, checked as JSON.parse checks it, without building it."""
    closers: list[str] = []
    state, fresh = "value", False  # value | key | colon | after (a value, before `,` or a close)
    while True:
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise JSONDecodeError("Unexpected token", s, pos)
        at, pos = m.start(), m.end()
        opened, closed, comma, colon, string, scalar = m.groups()
        if opened and state == "value":
            closers.append("]" if opened == "[" else "}")
            state, fresh = ("key" if opened == "{" else "value"), True
            continue
        if closed and closers and closed == closers[-1] and (state == "after" or fresh and state != "colon"):
            closers.pop()
            if not closers:
                return pos
            state = "after"
        elif comma and state == "after":
            state = "key" if closers[-1] == "}" else "value"
        elif colon and state == "colon":
            state = "value"
        elif (string or scalar) and state in ("key", "value") and (string or state == "value"):
            if string and _ESCAPE_U.search(string):
                raise JSONDecodeError("Bad Unicode escape", s, at)
            state = "colon" if state == "key" else "after"
        else:
            raise JSONDecodeError("Unexpected token", s, at)
        fresh = False


def _value(s: str, pos: int, stack: list[_Frame]) -> tuple[Any, int, bool]:
    """The scalar at `pos` (value, end, False), or a container opened onto `stack` (.., True)."""
    ch = s[pos : pos + 1]
    if ch in ("[", "{"):
        if len(stack) >= KEEP_DEPTH:
            end = _skip(s, pos)
            return msgspec.Raw(s[pos:end].encode("utf-8")), end, False
        frame = _Frame([] if ch == "[" else {}, pos)
        stack.append(frame)
        pos = _WS.match(s, pos + 1).end()  # type: ignore[union-attr]
        empty = s[pos : pos + 1] == ("]" if ch == "[" else "}")
        if empty:
            stack.pop()
            return frame.value, pos + 1, False
        if ch == "{":
            frame.key, pos = _key(s, pos)
        return None, pos, True
    if ch == '"':
        return (*scanstring(s, pos + 1, True), False)
    m = _NUMBER.match(s, pos)
    if m and m.end() > pos:
        text = m.group()
        return (float(text) if m.group(1) or m.group(2) else int(text)), m.end(), False
    for word, v in _LITERALS.items():
        if s.startswith(word, pos):
            return v, pos + len(word), False
    raise JSONDecodeError("Expecting value", s, pos)


def _key(s: str, pos: int) -> tuple[str, int]:
    if s[pos : pos + 1] != '"':
        raise JSONDecodeError("Expecting property name enclosed in double quotes", s, pos)
    key, pos = scanstring(s, pos + 1, True)
    pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
    if s[pos : pos + 1] != ":":
        raise JSONDecodeError("Expecting ':' delimiter", s, pos)
    return key, _WS.match(s, pos + 1).end()  # type: ignore[union-attr]
