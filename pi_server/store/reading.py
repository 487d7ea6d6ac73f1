"""Reading whole entries back from their byte offsets, as pi holds them after loading."""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import orjson

from pi_server.store import entry_types as et
from pi_server.store import scan, slices
from pi_server.store.decode import (
    ABSENT,
    DECODE_ERRORS,
    MAX_RUN,
    TITLE_FIELDS,
    TITLE_MSG_FIELDS,
    loads,
    no_gc,
    text_blocks_decoder,
    title_decoder,
)
from pi_server.store.records import CURRENT_VERSION, F_HAS_CONTENT


class _LineHead(msgspec.Struct, gc=False):
    type: Any = None
    message: msgspec.Raw = msgspec.Raw(b"")


class _MsgHead(msgspec.Struct, gc=False):
    content: msgspec.Raw = msgspec.Raw(b"")


_line_head = msgspec.json.Decoder(_LineHead)
_msg_head = msgspec.json.Decoder(_MsgHead)


def title_content(content: msgspec.Raw) -> Any:
    """A message's content as titles and search read it: text blocks' type and text only."""
    try:
        return text_blocks_decoder.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        try:
            return loads(bytes(content))
        except orjson.JSONDecodeError:
            return None


class EntryReader:
    """Entry reading for SessionIndex: byte ranges in, entry dicts out (v1/v2 migrated in memory)."""

    path: str
    roots: tuple[str, ...]
    offsets: Any
    lengths: Any
    lines: Any
    ids: list[str]
    parents: list[str | None]
    types: list[str]
    roles: list[str | None]
    flags: bytearray
    generation: int
    cache_budget: int
    _cache: OrderedDict
    _cache_bytes: int
    _v1_by_ordinal: dict[int, int]
    version: int  # a property of SessionIndex

    def read_entries(self, positions: list[int], *, light: bool = False) -> list[dict[str, Any]]:
        """Entries at the given positions, as pi holds them after loading.

        `light` reads only what titles and search look at (no tool output,
        no thinking, no arguments), which is several times faster.
        """
        return self._each_line(positions, self._light if light else self._materialize)

    def map_lines(self, positions: list[int], make: Callable[[int, bytes], Any]) -> list[Any]:
        """`make(pos, line)` for each position, in order; lines read in as few calls as can be."""
        return self._each_line(positions, make)

    def _each_line(self, positions: list[int], make: Callable[[int, bytes], Any]) -> list[Any]:
        """`make(pos, line)` for each position, reading contiguous runs of lines in one call each."""
        if not positions:
            return []
        offsets, lengths = self.offsets, self.lengths
        order: Sequence[int]
        if slices.ascending(positions):  # a context's are: a sort of a million is one long hold
            order, at = range(len(positions)), positions
        else:
            order = sorted(range(len(positions)), key=positions.__getitem__)
            at = [positions[k] for k in order]  # positions in file order
        out: list[Any] = [None] * len(positions)
        n = len(at)
        fd = scan.open_regular(self.path, self.roots)
        with os.fdopen(fd, "rb"), no_gc():
            i = 0
            while i < n:
                start = offsets[at[i]]
                end = start + lengths[at[i]]
                j = i + 1
                while j < n:  # lines closer than 64 KiB are read in the same call
                    o = offsets[at[j]]
                    if o - end > 65536 or end - start > MAX_RUN:
                        break
                    e = o + lengths[at[j]]
                    if e > end:
                        end = e
                    j += 1
                chunk = os.pread(fd, end - start, start)
                for k in range(i, j):
                    p = at[k]
                    o = offsets[p] - start
                    out[order[k]] = make(p, chunk[o : o + lengths[p]])
                i = j
        return out

    def cached_entries(self, positions: list[int], *, opaque: bool = False) -> list[dict[str, Any]]:
        """Like read_entries, through a small LRU of parsed entries (treat them as read-only).

        Context builds along the same branch re-read the same entries; the cache
        holds at most `cache_budget` bytes of source lines. `opaque`: message
        entries come as `{"type", "id", "message"}` with the message left as the
        file's own bytes (a `msgspec.Raw`) when those are exactly what pi holds
        after loading it (see `_opaque`); the rest are parsed as usual.
        """
        cache = self._cache
        keys = [~p for p in positions] if opaque else positions
        missing = [p for p, key in zip(positions, keys, strict=True) if key not in cache]
        if missing:
            made = self._each_line(missing, self._opaque) if opaque else self.read_entries(missing)
            for p, e in zip(missing, made, strict=True):
                cache[~p if opaque else p] = e
                self._cache_bytes += self.lengths[p]
        # both loops in C (a warm context looks up ten thousand entries), a slice at a time
        out: list[dict[str, Any]] = []
        for part in slices.spans(len(keys)):
            some = keys[part]
            deque(map(cache.move_to_end, some), maxlen=0)
            out += map(cache.__getitem__, some)
        self._evict()
        return out

    def memo(self, key: tuple[Any, ...], make: Callable[[], list[Any]]) -> list[Any]:
        """A list derived from the entries, kept in the same LRU (8 bytes an item).
        `key` must include the index generation: a change to the file makes it stale."""
        cache = self._cache
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit[0]
        value = make()
        cache[key] = (value, 8 * len(value) + 64)
        self._cache_bytes += 8 * len(value) + 64
        self._evict()
        return value

    def _evict(self) -> None:
        cache = self._cache
        while self._cache_bytes > self.cache_budget and cache:
            key, value = cache.popitem(last=False)
            if type(key) is int:  # an entry (~pos: its opaque form)
                self._cache_bytes -= self.lengths[~key if key < 0 else key]
            else:
                self._cache_bytes -= value[1]

    def clear_cache(self) -> None:
        self._cache.clear()
        self._cache_bytes = 0

    def _opaque(self, pos: int, raw: bytes) -> dict[str, Any]:
        """A message entry with its message as the file's bytes, when pi would hold exactly
        those: a current-version file (no migration), valid UTF-8 (pi reads with replacement),
        a message object with a string role other than "system" (contexts read those) and
        a content that is present and not null (contexts rewrite a null one)."""
        role = self.roles[pos]
        if self.version >= CURRENT_VERSION and type(role) is str and role != "system" and type(self.ids[pos]) is str:
            try:
                head = _line_head.decode(raw)
                msg = bytes(head.message)
                ok = head.type == et.MESSAGE and msg[:1] == b"{" and (msg.isascii() or bool(msg.decode()))
                if ok and b"null" in msg:  # rare: look at the content itself
                    content = _msg_head.decode(msg).content
                    ok = len(content) > 0 and bytes(content) != b"null"
                elif ok:
                    ok = (self.flags[pos] & F_HAS_CONTENT) != 0
            except DECODE_ERRORS:
                ok = False
            if ok:
                return {"type": et.MESSAGE, "id": self.ids[pos], "message": msgspec.Raw(msg)}
        return self._materialize(pos, raw)

    def read_raw(self, pos: int) -> bytes:
        """The entry's line as it is in the file (no newline)."""
        fd = scan.open_regular(self.path, self.roots)
        try:
            return os.pread(fd, self.lengths[pos], self.offsets[pos])
        finally:
            os.close(fd)

    def line_of(self, pos: int) -> int:
        """Physical 0-based line number of an entry."""
        return self.lines[pos]

    def timestamps_of(self, positions: list[int]) -> list[Any]:
        return [e.get("timestamp") for e in self.read_entries(positions)]

    def read_entry(self, pos: int) -> dict[str, Any]:
        return self.read_entries([pos])[0]

    def light_entry(self, pos: int, raw: bytes) -> dict[str, Any]:
        """One line read as `read_entries(..., light=True)` reads it."""
        return self._light(pos, raw)

    def _light(self, pos: int, raw: bytes) -> dict[str, Any]:
        if self.types[pos] == et.CONTEXT_EDIT:  # pi 1.6.0's: its targetId and replacement are read whole
            return self._materialize(pos, raw)
        try:
            e = title_decoder.decode(raw)
        except DECODE_ERRORS:
            return self._materialize(pos, raw)
        out = {k: v for k in TITLE_FIELDS if (v := getattr(e, k)) is not ABSENT}
        m = e.message
        if m is not None:
            msg = {k: v for k in TITLE_MSG_FIELDS if (v := getattr(m, k)) is not ABSENT}
            if len(m.content):
                msg["content"] = title_content(m.content)
            if msg.get("role") == "hookMessage" and self.version < 3:
                msg["role"] = "custom"
            out["message"] = msg
        return out

    def _materialize(self, pos: int, raw: bytes) -> dict[str, Any]:
        try:
            obj = loads(raw.strip())
        except orjson.JSONDecodeError:
            obj = {}
        if not isinstance(obj, dict):
            obj = {}
        return self._migrated(pos, obj)

    def _migrated(self, pos: int, obj: dict[str, Any]) -> dict[str, Any]:
        """Apply pi's v1→v2→v3 migration to one entry, in memory only."""
        v = self.version
        if v >= CURRENT_VERSION:
            return obj
        if v < 2:
            # pi's migration puts id/parentId after the existing keys.
            obj["id"] = self.ids[pos]
            obj["parentId"] = self.parents[pos]
            if obj.get("type") == et.COMPACTION and isinstance(obj.get("firstKeptEntryIndex"), (int, float)):
                k = obj.pop("firstKeptEntryIndex")
                target = self._v1_by_ordinal.get(int(k)) if float(k).is_integer() else None
                if target is not None:
                    obj["firstKeptEntryId"] = self.ids[target]
            elif obj.get("type") == et.COMPACTION and "firstKeptEntryIndex" in obj:
                obj.pop("firstKeptEntryIndex")
        msg = obj.get("message")
        if obj.get("type") == et.MESSAGE and isinstance(msg, dict) and msg.get("role") == "hookMessage":
            msg["role"] = "custom"
        return obj
