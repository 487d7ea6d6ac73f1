"""Indexing a whole chunk of ordinary lines at once: one msgspec decode, then column-wise passes.

The per-line path in index.py handles everything; this one takes a chunk only when
every line in it is a v2/v3 entry with a fresh string id (no header, blank line,
duplicate or unreadable line), so both give the same index. A chunk it refuses is
left untouched for the per-line path.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress, pairwise, repeat
from operator import eq, ne, sub
from typing import Any

import msgspec

from pi_server.jsutil import js_trim
from pi_server.store import entry_types as et
from pi_server.store.decode import DECODE_ERRORS, Nav, canon, decode_blocks, decode_content, interned
from pi_server.store.records import COMPACTION, F_ASSISTANT_TEXT, F_ERRORISH, F_HAS_CONTENT, MODEL, THINKING


class FlagBlock(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    id: Any = None


_lines_decoder = msgspec.json.Decoder(Nav)
_blocks_decoder = msgspec.json.Decoder(list[list[FlagBlock] | str | None])
_KINDS = {et.MODEL_CHANGE: MODEL, et.THINKING_LEVEL_CHANGE: THINKING, et.COMPACTION: COMPACTION}
_NOT_ERRORS = frozenset(("", "stop", "toolUse"))
_QUIET = _NOT_ERRORS | {None}
_HAS_CONTENT = bytes([0, F_HAS_CONTENT]) + bytes(254)  # a content flag of 0/1 to its bit


def decode_chunk(buf: bytes, start: int, last: int) -> tuple[list[Nav], list[int]] | None:
    """The entries of the lines in buf[start:last] (last: a newline) and their newline offsets.

    Only lines that start with `{` and end with `}`: no JSON value holds a newline between
    a `}` and a `{`, nor a raw newline in a string, so each line is one or more whole values,
    and as many values as lines means one a line, as the line-by-line reading takes them."""
    nls = []
    find = buf.find
    i = find(b"\n", start, last + 1)
    while i >= 0:
        nls.append(i)
        i = find(b"\n", i + 1, last + 1)
    if buf[start] != 123 or {buf[p - 1] for p in nls} != {125} or {buf[p + 1] for p in nls[:-1]} - {123}:
        return None
    try:
        navs = _lines_decoder.decode_lines(memoryview(buf)[start : last + 1])
    except DECODE_ERRORS:
        return None
    return (navs, nls) if len(navs) == len(nls) else None


def assistant_blocks(raws: list[Any]) -> list[Any]:
    """Each assistant content's blocks, decoded in one call (per message if that fails)."""
    try:
        return _blocks_decoder.decode(b"".join((b"[", b",".join(r if len(r) else b"null" for r in raws), b"]")))
    except DECODE_ERRORS:
        return [decode_content(r) for r in raws]


def _fill(out: list[int], marks: list[int], start: int, end: int, v: int) -> None:
    """Append, for each position of start..end-1, the last of `marks` at or before it
    (`v` before the first): a run of the same value between two marks at a time."""
    lo = bisect_left(marks, start)
    add = out.extend
    for m in marks[lo : bisect_left(marks, end, lo)]:
        add(repeat(v, m - start))
        v = start = m
    add(repeat(v, end - start))


class BatchIndexer:
    """The chunk-at-once path of SessionIndex (which provides the attributes used here)."""

    ids: list[str]
    parents: list[str | None]
    types: list[str]
    roles: list[str | None]
    flags: bytearray
    offsets: Any
    lengths: Any
    lines: Any
    by_id: dict[str, int]
    labels: dict[str, tuple[str, Any]]
    call_pos: dict[str, int]
    tool_dups: dict[str, list[int]]
    anc_model: Any
    anc_thinking: Any
    anc_compaction: Any
    irregular: bool
    message_count: int
    first_message: str
    last_activity_ms: float | None
    name: str | None
    version: int
    _line_no: int
    _ordinal: int
    _dup_seen: bool  # a chunk held an id seen before

    def _listing_facts(self, role: str, blocks: Any, has_content: bool, msg_ts: Any, entry_ts: Any) -> None: ...

    def _consume_batch(self, buf: bytes, start: int, stop: int, base: int) -> bool:
        """Index the whole lines of buf[start:stop] at once; False (nothing done) if refused."""
        got = decode_chunk(buf, start, stop - 1)
        if got is None:
            return False
        navs, nls = got
        ids = [v.id for v in navs]
        types = [v.type for v in navs]
        if set(map(type, ids)) != {str} or set(map(type, types)) != {str} or et.SESSION in types:
            return False
        if not self._take_ids(ids):
            return False
        n = len(ids)
        first = len(self.ids)
        canon_of = {t: interned.get(t) or canon(t) for t in set(types)}
        types = list(map(canon_of.__getitem__, types))
        self.ids.extend(ids)
        roles, flags = self._batch_messages(navs, types, first)
        self._batch_tree(navs, types, roles, first)
        self.types.extend(types)
        self.roles.extend(roles)
        self.flags.extend(flags)
        offs = [base + start, *map((base + 1).__add__, nls[:-1])]
        self.offsets.fromlist(offs)  # fromlist: much faster than extend from a list
        self.lengths.fromlist(list(map(sub, map(base.__add__, nls), offs)))
        self.lines.fromlist(list(range(self._line_no, self._line_no + n)))
        self._line_no += n
        self._ordinal += n
        if et.LABEL in canon_of or et.SESSION_INFO in canon_of:
            for i, t in enumerate(types):
                if t == et.LABEL or t == et.SESSION_INFO:
                    self._side_facts(t, navs[i])
        return True

    def _take_ids(self, ids: list[str]) -> bool:
        """Add the chunk's ids to by_id if each is new (False, by_id unchanged, otherwise).

        Inserting first and checking the size after spares a lookup of every id; a
        duplicate undoes it (by_id is always each id's last position) and later chunks
        check before inserting, so a file full of duplicates rebuilds it only once."""
        by_id = self.by_id
        n, first, before = len(ids), len(self.ids), len(by_id)
        if self._dup_seen:
            if len(set(ids)) != n or not by_id.keys().isdisjoint(ids):
                return False
            by_id.update(zip(ids, range(first, first + n), strict=True))
            return True
        by_id.update(zip(ids, range(first, first + n), strict=True))
        if len(by_id) == before + n:
            return True
        self._dup_seen = True
        by_id.clear()
        by_id.update(zip(self.ids, range(first), strict=True))
        return False

    def _batch_tree(self, navs: list[Nav], types: list[str], roles: list[Any], first: int) -> None:
        """Parents (sharing the id strings) and the nearest model/thinking/compaction ancestors.

        Most entries follow the one before them: those runs take their parent and their
        ancestors from it in C-level passes (runs of the same value between setting entries);
        only the entries that start a branch, or whose parent is unknown, are looked at one by one."""
        n = len(navs)
        ids = self.ids
        raw = [v.parentId for v in navs]
        parents = ids[first - 1 : first + n - 1] if first else [None, *ids[: n - 1]]
        # string equality with the entry before is cheaper than a lookup in by_id
        starts = list(compress(range(n), map(ne, raw, parents)))
        kinds = [
            (MODEL if r == "assistant" else 0) if t == et.MESSAGE else _KINDS.get(t, 0)
            for t, r in zip(types, roles, strict=True)
        ]
        rng = range(first, first + n)
        marks = [list(compress(rng, map(eq, kinds, repeat(kind)))) for kind in (MODEL, THINKING, COMPACTION)]
        outs = (self.anc_model, self.anc_thinking, self.anc_compaction)
        fills: tuple[list[int], list[int], list[int]] = ([], [], [])
        if not starts or starts[0]:
            starts.insert(0, 0)
        starts.append(n)
        get = self.by_id.get
        for s, e in pairwise(starts):
            p = raw[s]
            q = get(p) if type(p) is str else None
            if q is None or q >= first + s:
                if type(p) is str:
                    self.irregular = True  # a parent not seen before its child
                parents[s] = p if type(p) is str else None
                init: tuple[int, ...] = (-1, -1, -1)
            else:
                parents[s] = ids[q]
                init = tuple(out[q] for out in outs) if q < first else tuple(f[q - first] for f in fills)
            for fill, mark, v in zip(fills, marks, init, strict=True):
                _fill(fill, mark, first + s, first + e, v)
        for out, fill in zip(outs, fills, strict=True):
            out.fromlist(fill)
        self.parents.extend(parents)

    def _batch_messages(self, navs: list[Nav], types: list[str], first: int) -> tuple[list[Any], bytes]:
        """Roles and flag bits of the chunk's entries; the listing facts and tool calls of its messages."""
        self.message_count += types.count(et.MESSAGE)
        msgs = [v.message if t == et.MESSAGE else None for v, t in zip(navs, types, strict=True)]
        raw_roles = [m.role if m is not None else None for m in msgs]
        canon_role = {r: interned.get(r) or canon(r) for r in {r for r in raw_roles if type(r) is str}}
        if self.version < 3 and "hookMessage" in canon_role:
            canon_role["hookMessage"] = canon("custom")
        try:
            roles = list(map(canon_role.get, raw_roles))
        except TypeError:  # an unhashable role: none
            roles = [canon_role[r] if type(r) is str else None for r in raw_roles]
        content = [m is not None and len(m.content) > 0 for m in msgs]
        flags = bytearray(content).translate(_HAS_CONTENT)
        stops = [m.stopReason if m is not None else None for m in msgs]
        try:
            quiet = _QUIET.issuperset(stops)
        except TypeError:  # an unhashable stopReason
            quiet = False
        if not quiet:
            for i, sr in enumerate(stops):
                if type(sr) is str and sr not in _NOT_ERRORS:
                    flags[i] |= F_ERRORISH
        listed = [
            i for i, (r, c) in enumerate(zip(roles, content, strict=True)) if c and (r == "user" or r == "assistant")
        ]
        self._batch_listing(navs, roles, listed)
        assistants = [i for i, r in enumerate(roles) if r == "assistant"]
        if assistants:
            blocks_of = assistant_blocks([msgs[i].content for i in assistants])  # type: ignore[union-attr]
            self._assistant_flags(assistants, blocks_of, flags, first)
        return roles, bytes(flags)

    def _batch_listing(self, navs: list[Nav], roles: list[Any], listed: list[int]) -> None:
        """The session list's facts from the user and assistant messages with content."""
        stamps = [navs[i].message.timestamp for i in listed]  # type: ignore[union-attr]
        numeric = [ts for ts in stamps if type(ts) is int or type(ts) is float]
        if numeric:
            top = float(max(numeric))
            if self.last_activity_ms is None or top > self.last_activity_ms:
                self.last_activity_ms = top
        if len(numeric) != len(stamps):
            for i, ts in zip(listed, stamps, strict=True):
                if type(ts) is not int and type(ts) is not float:
                    self._listing_facts(roles[i], None, True, ts, navs[i].timestamp)
        if not self.first_message:
            for i in listed:
                if roles[i] == "user":
                    self._listing_facts("user", decode_blocks(navs[i].message), True, None, None)  # type: ignore[arg-type]
                    if self.first_message:
                        break

    def _assistant_flags(self, at: list[int], blocks_of: list[Any], flags: bytearray, first: int) -> None:
        """Text flags of the chunk's assistant messages (at: their places in it); their tool calls."""
        calls: list[tuple[str, int]] = []
        for i, blocks in zip(at, blocks_of, strict=True):
            text, ids = _scan_blocks(blocks)
            if text:
                flags[i] |= F_ASSISTANT_TEXT
            if ids:
                calls += [(c, first + i) for c in ids]
        call_ids = [c for c, _ in calls]
        if len(set(call_ids)) == len(calls) and self.call_pos.keys().isdisjoint(call_ids):
            self.call_pos.update(calls)  # each call id new: nothing to compare
        else:
            for c, pos in calls:
                self._tool_call(pos, c)

    def _assistant_flags_of(self, pos: int, blocks: Any) -> int:
        text, ids = _scan_blocks(blocks)
        for c in ids:
            self._tool_call(pos, c)
        return F_ASSISTANT_TEXT if text else 0

    def _tool_call(self, pos: int, call_id: str) -> None:
        """Remember which assistant entry defines a tool call; its title is made when shown."""
        prev = self.call_pos.get(call_id)
        if prev is not None and prev != pos:
            dups = self.tool_dups.get(call_id)
            if dups is None:
                self.tool_dups[call_id] = dups = [prev]
            dups.append(pos)
        self.call_pos[call_id] = pos

    def _side_facts(self, etype: str, nav: Nav) -> None:
        """What a label or a session_info entry changes besides the tree."""
        if etype == et.LABEL:
            target = nav.targetId
            if isinstance(target, str):
                self.labels.pop(target, None)
                if isinstance(nav.label, str) and nav.label:
                    self.labels[target] = (nav.label, nav.timestamp)
        elif etype == et.SESSION_INFO:
            n = nav.name
            self.name = (js_trim(n) or None) if isinstance(n, str) else None


_NO_CALLS: list[str] = []


def _scan_blocks(blocks: Any) -> tuple[bool, list[str]]:
    """An assistant message's content: whether it shows text (pi's rule: a non-blank text
    block, or a non-blank string), and the ids of its tool calls."""
    if type(blocks) is str:
        return bool(js_trim(blocks)), _NO_CALLS
    if type(blocks) is not list:
        return False, _NO_CALLS
    text = False
    ids = _NO_CALLS
    for blk in blocks:
        bt = blk.type
        if bt == "text":
            if not text and type(blk.text) is str and js_trim(blk.text):
                text = True
        elif bt == "toolCall" and type(blk.id) is str:
            if ids is _NO_CALLS:
                ids = []
            ids.append(blk.id)
    return text, ids
