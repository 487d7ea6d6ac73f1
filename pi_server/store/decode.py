"""Decoding session lines: the msgspec shapes the index and the entry reader decode into.

Only the fields navigation, titles and listings need are decoded on the hot
path; anything that does not fit these shapes falls back to a full parse.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import orjson

from pi_server.jsutil import js_finite
from pi_server.store import entry_types as et
from pi_server.store.deepjson import loads_deep

# values are held up to ~1,024 levels deep (orjson's limit; deeper is kept as text), and JSON
# encoders recurse once a level: room for that on top of the stack already in use
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


class Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    id: Any = None
    name: Any = None
    arguments: msgspec.Raw = msgspec.Raw(b"null")


class Msg(msgspec.Struct, gc=False):
    role: Any = None
    content: msgspec.Raw = msgspec.Raw(b"")
    stopReason: Any = None  # noqa: N815 - pi's field name
    errorMessage: Any = None  # noqa: N815
    timestamp: Any = None


class Nav(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    parentId: Any = None  # noqa: N815
    timestamp: Any = None
    message: Msg | None = None
    targetId: Any = None  # noqa: N815
    label: Any = None
    name: Any = None
    version: Any = None


nav_decoder = msgspec.json.Decoder(Nav)

ABSENT: Any = msgspec.UNSET


class TextBlock(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None


class TitleMsg(msgspec.Struct, gc=False):
    role: Any = ABSENT
    content: msgspec.Raw = msgspec.Raw(b"")
    stopReason: Any = ABSENT  # noqa: N815
    errorMessage: Any = ABSENT  # noqa: N815
    toolCallId: Any = ABSENT  # noqa: N815
    toolName: Any = ABSENT  # noqa: N815
    command: Any = ABSENT


class TitleEntry(msgspec.Struct, gc=False):
    type: Any = ABSENT
    id: Any = ABSENT
    timestamp: Any = ABSENT
    message: TitleMsg | None = None
    customType: Any = ABSENT  # noqa: N815
    content: Any = ABSENT
    tokensBefore: Any = ABSENT  # noqa: N815
    summary: Any = ABSENT
    modelId: Any = ABSENT  # noqa: N815
    thinkingLevel: Any = ABSENT  # noqa: N815
    label: Any = ABSENT
    name: Any = ABSENT
    targetId: Any = ABSENT  # noqa: N815
    replacement: Any = ABSENT  # a context edit's; small in practice
    kind: Any = ABSENT  # a usage entry's
    model: Any = ABSENT


TITLE_FIELDS = [f for f in TitleEntry.__struct_fields__ if f != "message"]
TITLE_MSG_FIELDS = [f for f in TitleMsg.__struct_fields__ if f != "content"]
title_decoder = msgspec.json.Decoder(TitleEntry)
text_blocks_decoder = msgspec.json.Decoder(list[TextBlock] | str)
_blocks_decoder = msgspec.json.Decoder(list[Block] | str | None)
interned: dict[Any, Any] = {}


def canon(s: Any) -> Any:
    """Share one object per type/role/stopReason string across all entries."""
    if not isinstance(s, str):
        return s if s is None else None
    return interned.setdefault(s, s)


def loads(raw: bytes) -> Any:
    """Parse one line as pi's JSON.parse of a UTF-8-decoded file would.

    Raises orjson.JSONDecodeError for anything unreadable, nesting too deep included.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        err = e
    # pi reads files as UTF-8 with replacement characters, then parses
    text = raw.decode("utf-8", "replace")
    fixed = text.encode("utf-8")
    if fixed != raw:
        try:
            return orjson.loads(fixed)
        except orjson.JSONDecodeError as e:
            err = e
    if b"\\u" not in raw and "depth" not in str(err) and "infinity" not in str(err):
        raise err  # no lone surrogate, deep nesting or huge number: JSON.parse refuses it too
    # pi's JSON.parse keeps lone surrogates (`\ud83d`), reads any depth and reads `1e400` (as
    # infinity, which every writer turns into null as JSON.stringify does); orjson does none
    try:
        return loads_deep(text)
    except json.JSONDecodeError as e:
        raise orjson.JSONDecodeError(e.msg, e.doc, e.pos) from None


def jdumps(obj: Any) -> bytes:
    """Compact JSON bytes of a parsed value; lone surrogates written as `\\uXXXX` escapes,
    values kept as text (`msgspec.Raw`, store/deepjson.py) as they are."""
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return msgspec.json.encode(obj)  # writes a Raw as it is, and nests as deep as values are held
    except UnicodeEncodeError:
        return _json_with_raws(obj)


def _with_marks(v: Any, raws: list[bytes]) -> Any:
    """`v` with each Raw replaced by a numbered mark string (json.dumps cannot write a Raw)."""
    if type(v) is msgspec.Raw:
        raws.append(bytes(v))
        return f"\x00raw{len(raws) - 1}\x00"
    if isinstance(v, list):
        return [_with_marks(x, raws) for x in v]
    if isinstance(v, dict):
        return {k: _with_marks(x, raws) for k, x in v.items()}
    return v


def _json_with_raws(obj: Any) -> bytes:
    raws: list[bytes] = []
    text = json.dumps(_with_marks(js_finite(obj), raws), separators=(",", ":"), allow_nan=False).encode()
    for i, raw in enumerate(raws):
        text = text.replace(b'"\\u0000raw%d\\u0000"' % i, raw, 1)
    return text


DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)
UNSET: Any = object()
MAX_RUN = 8 << 20  # bytes read in one call
SLOW_TYPES = frozenset((et.LABEL, et.SESSION_INFO, et.SESSION))


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building many small objects that are all kept.

    Parsing thousands of entries otherwise triggers collections that scan
    everything allocated so far (quadratic in effect); nothing here makes cycles.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def synth_id(ordinal: int) -> str:
    """A v1 entry's id: stable across runs, derived from its position."""
    return f"{ordinal:08x}"


def decode_blocks(msg: Msg) -> Any:
    return decode_content(msg.content)


def decode_content(raw: Any) -> Any:
    """A message's `content` bytes as blocks (typed, or built from the parsed JSON when they
    do not fit the type); None when absent or unreadable."""
    if not len(raw):
        return None
    try:
        return _blocks_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        try:
            return blocks_from_obj(loads(bytes(raw)))
        except orjson.JSONDecodeError:
            return None


def blocks_from_obj(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    if not isinstance(content, list):
        return None
    out = []
    for c in content:
        if isinstance(c, dict):
            args = c.get("arguments")
            out.append(
                Block(
                    type=c.get("type"),
                    text=c.get("text"),
                    id=c.get("id"),
                    name=c.get("name"),
                    arguments=msgspec.Raw(jdumps(args)) if "arguments" in c else msgspec.Raw(b"null"),
                )
            )
    return out


def nav_from_dict(obj: dict[str, Any]) -> tuple[Nav, Any]:
    m = obj.get("message")
    msg = None
    blocks: Any = UNSET
    if isinstance(m, dict):
        msg = Msg(
            role=m.get("role"),
            content=msgspec.Raw(jdumps(m["content"])) if "content" in m else msgspec.Raw(b""),
            stopReason=m.get("stopReason"),
            errorMessage=m.get("errorMessage"),
            timestamp=m.get("timestamp"),
        )
        blocks = blocks_from_obj(m.get("content")) if "content" in m else UNSET
    return (
        Nav(
            type=obj.get("type"),
            id=obj.get("id"),
            parentId=obj.get("parentId"),
            timestamp=obj.get("timestamp"),
            message=msg,
            targetId=obj.get("targetId"),
            label=obj.get("label"),
            name=obj.get("name"),
            version=obj.get("version"),
        ),
        blocks,
    )
