"""msgpack for the index cache, the listing cache and the worker pipes, strings with surrogates included.

A Python string may hold a lone surrogate: a `\\ud83d` escape pi's JSON.parse keeps, or a
file name byte that is not UTF-8 (`os.fsdecode` gives `\\udce9`). msgpack strings are UTF-8,
so such a string travels as an extension (its UTF-8 bytes with surrogates passed through)
and comes back as the same string. Values without one take msgpack's own fast path.
"""

from __future__ import annotations

from typing import Any

import msgspec

SURROGATE_STR, TAGGED_MAP = 1, 2  # extension codes (an Ext cannot be a map key: such a map is its pairs)


def _ext(s: str) -> Any:
    try:
        s.encode()
        return s
    except UnicodeEncodeError:
        return msgspec.msgpack.Ext(SURROGATE_STR, s.encode("utf-8", "surrogatepass"))


def _tag(obj: Any) -> Any:
    if isinstance(obj, str):
        return _ext(obj)
    if isinstance(obj, dict):
        pairs = [(_tag(k), _tag(v)) for k, v in obj.items()]
        if any(not isinstance(k, str | int | float | bool | None) for k, _ in pairs):
            return msgspec.msgpack.Ext(TAGGED_MAP, msgspec.msgpack.encode(pairs))
        return dict(pairs)
    if isinstance(obj, list | tuple):
        return [_tag(v) for v in obj]
    return obj


def _untag(code: int, data: memoryview) -> Any:
    if code == SURROGATE_STR:
        return bytes(data).decode("utf-8", "surrogatepass")
    if code == TAGGED_MAP:
        return dict(_decoder.decode(data))
    return msgspec.msgpack.Ext(code, bytes(data))


_decoder = msgspec.msgpack.Decoder(ext_hook=_untag)


def pack(obj: Any) -> bytes:
    try:
        return msgspec.msgpack.encode(obj)
    except UnicodeEncodeError:  # rare: walk the value once more, tagging what UTF-8 cannot hold
        return msgspec.msgpack.encode(_tag(obj))


def unpack(data: bytes | memoryview) -> Any:
    return _decoder.decode(data)
