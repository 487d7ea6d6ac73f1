"""A request body as JSON bytes, encoded a slice at a time (in a worker thread, see client.py).

A compaction sends a prompt of tens of megabytes. Handed the params, the SDK copied them and
wrote them with the json module on the event loop, in calls that held the interpreter lock
for most of a second while every other client of the server waited. Here a string longer than
SLICE characters is encoded a slice at a time and a long list a few items at a time, so no
encoder call holds the lock for more than a millisecond or so; the SDK is handed the bytes.

The text is what the SDK wrote (compact, non-ASCII as UTF-8, keys in the body's order) and
what JSON.stringify writes where the two differ: a lone surrogate, which pi leaves when it
cuts a string in UTF-16 units and which the SDK could not encode at all, goes out as a
`\\udXXX` escape; a non-finite number as null.
"""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server.store.decode import jdumps

SLICE = 1 << 20  # characters of a string per encoder call; bytes per piece kept
LONG_LIST = 4096  # a list longer than this is encoded a run of items per call
_FIRST_RUN = 64  # items in the first call over a long list; later runs sized to ~SLICE bytes
_DEEP = 32  # nesting walked piece by piece; below it a value is encoded whole
_encode = msgspec.json.Encoder().encode


class Pieces:
    """JSON text as bytes in pieces of about SLICE bytes: small parts are joined as they come
    (millions of tiny bytes objects would cost more than their text), a large one kept whole."""

    __slots__ = ("parts", "_small", "_size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self._small: list[bytes] = []
        self._size = 0

    def add(self, data: bytes) -> None:
        if len(data) >= SLICE:
            self._flush()
            self.parts.append(data)
            return
        self._small.append(data)
        self._size += len(data)
        if self._size >= SLICE:
            self._flush()

    def _flush(self) -> None:
        if self._small:
            self.parts.append(b"".join(self._small))
            self._small, self._size = [], 0

    def done(self) -> list[bytes]:
        self._flush()
        return self.parts

    def join(self) -> bytes:
        # one copy; CPython lets other threads run while it joins a megabyte or more
        return b"".join(self.done())


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON bytes, made a slice at a time."""
    out = Pieces()
    put(value, out)
    return out.join()


def put(value: Any, out: Pieces, depth: int = 0) -> None:
    """Add the JSON text of `value` to `out`."""
    kind = type(value)
    if kind is str and len(value) > SLICE:
        _put_text(value, out)
    elif depth >= _DEEP or kind not in (dict, list):
        out.add(_one(value))
    elif kind is dict:
        if not value:
            out.add(b"{}")
            return
        sep = b"{"
        for k, v in value.items():
            out.add(sep + _one(k) + b":")
            put(v, out, depth + 1)
            sep = b","
        out.add(b"}")
    elif len(value) > LONG_LIST:
        _put_runs(value, out)
    else:
        sep = b"["
        for v in value:
            out.add(sep)
            put(v, out, depth + 1)
            sep = b","
        out.add(b"]" if value else b"[]")


def _put_text(s: str, out: Pieces) -> None:
    # escapes are per code unit, so a cut anywhere (even between two halves of a pair, each
    # then escaped) gives the text one call would
    out.add(b'"')
    for start in range(0, len(s), SLICE):
        out.add(_one(s[start : start + SLICE])[1:-1])
    out.add(b'"')


def _put_runs(items: list[Any], out: Pieces) -> None:
    """A long list, a run of items per encoder call, each run sized to about SLICE bytes by
    the last one (a million messages; a run is not walked, so it is read by C alone)."""
    out.add(b"[")
    start, run = 0, _FIRST_RUN
    while start < len(items):
        text = _one(items[start : start + run])
        out.add((b"," if start else b"") + text[1:-1])
        start += run
        run = max(1, min(LONG_LIST, run * SLICE // max(len(text), 1)))
    out.add(b"]")


def _one(value: Any) -> bytes:
    try:
        return _encode(value)
    except UnicodeEncodeError:
        # a lone surrogate, which msgspec refuses: escaped as \udXXX, as JSON.stringify does
        return jdumps(value)
