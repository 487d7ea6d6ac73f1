"""Indexing a whole chunk of ordinary lines at once: one msgspec decode, then column-wise passes.

The per-line path in index.py handles everything; this one takes a chunk only when
every line in it is a v2/v3 entry with a fresh string id (no header, blank line,
duplicate or unreadable line), so both give the same index. A chunk it refuses is
left untouched for the per-line path.
"""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server.jsutil import js_trim
from pi_server.store.decode import DECODE_ERRORS, Nav, canon, decode_blocks, interned
from pi_server.store.records import COMPACTION, F_ASSISTANT_TEXT, F_ERRORISH, F_HAS_CONTENT, MODEL, THINKING


class FlagBlock(msgspec.Struct):
    type: Any = None
    text: Any = None
    id: Any = None


_lines_decoder = msgspec.json.Decoder(Nav)
_blocks_decoder = msgspec.json.Decoder(list[list[FlagBlock] | str | None])
_KINDS = {"model_change": MODEL, "thinking_level_change": THINKING, "compaction": COMPACTION}
_NOT_ERRORS = frozenset(("", "stop", "toolUse"))


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
        return [decode_blocks_raw(r) for r in raws]


def decode_blocks_raw(raw: Any) -> Any:
    return decode_blocks(_RawMsg(raw))


class _RawMsg:
    __slots__ = ("content",)

    def __init__(self, content: Any) -> None:
        self.content = content


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

    def _listing_facts(self, role: str, blocks: Any, has_content: bool, msg_ts: Any, entry_ts: Any) -> None: ...

    def _consume_batch(self, buf: bytes, start: int, stop: int, base: int) -> bool:
        """Index the whole lines of buf[start:stop] at once; False (nothing done) if refused."""
        got = decode_chunk(buf, start, stop - 1)
        if got is None:
            return False
        navs, nls = got
        ids = [v.id for v in navs]
        types = [v.type for v in navs]
        if {type(x) for x in ids} != {str} or {type(t) for t in types} != {str} or "session" in types:
            return False
        by_id = self.by_id
        n = len(ids)
        if len(set(ids)) != n or not by_id.keys().isdisjoint(ids):
            return False
        first = len(self.ids)
        canon_of = {t: interned.get(t) or canon(t) for t in set(types)}
        types = [canon_of[t] for t in types]
        by_id.update(zip(ids, range(first, first + n), strict=True))
        self.ids.extend(ids)
        roles, flags = self._batch_messages(navs, types, first)
        self._batch_tree(navs, types, roles, first)
        self.types.extend(types)
        self.roles.extend(roles)
        self.flags.extend(flags)
        offs = [base + start, *(base + x + 1 for x in nls[:-1])]
        self.offsets.extend(offs)
        self.lengths.extend([base + x - o for x, o in zip(nls, offs, strict=True)])
        self.lines.extend(range(self._line_no, self._line_no + n))
        self._line_no += n
        self._ordinal += n
        for i, t in enumerate(types):
            if t == "label" or t == "session_info":
                self._side_facts(t, navs[i])
        return True

    def _batch_tree(self, navs: list[Nav], types: list[str], roles: list[Any], first: int) -> None:
        """Parents (sharing the id strings) and the nearest model/thinking/compaction ancestors."""
        get = self.by_id.get
        ids, am, at, ac = self.ids, self.anc_model, self.anc_thinking, self.anc_compaction
        kinds = [
            (MODEL if r == "assistant" else 0) if t == "message" else _KINDS.get(t, 0)
            for t, r in zip(types, roles, strict=True)
        ]
        parents: list[str | None] = []
        add = parents.append
        irregular = False
        pos = first
        for v, k in zip(navs, kinds, strict=True):
            p = v.parentId
            q = get(p) if type(p) is str else None
            if q is None or q >= pos:
                if type(p) is str:
                    irregular = True  # a parent not seen before its child
                else:
                    p = None
                m = th = c = -1
            else:
                p = ids[q]
                m, th, c = am[q], at[q], ac[q]
            if k:
                if k == MODEL:
                    m = pos
                elif k == THINKING:
                    th = pos
                else:
                    c = pos
            add(p)
            am.append(m)
            at.append(th)
            ac.append(c)
            pos += 1
        self.parents.extend(parents)
        if irregular:
            self.irregular = True

    def _batch_messages(self, navs: list[Nav], types: list[str], first: int) -> tuple[list[Any], bytes]:
        """Roles and flag bits of the chunk's entries; the listing facts and tool calls of its messages."""
        self.message_count += types.count("message")
        msgs = [v.message if t == "message" else None for v, t in zip(navs, types, strict=True)]
        raw_roles = [m.role if m is not None else None for m in msgs]
        canon_role = {r: interned.get(r) or canon(r) for r in {r for r in raw_roles if type(r) is str}}
        if self.version < 3 and "hookMessage" in canon_role:
            canon_role["hookMessage"] = canon("custom")
        roles = [canon_role[r] if type(r) is str else None for r in raw_roles]
        content = [m is not None and len(m.content) > 0 for m in msgs]
        flags = bytearray(
            (F_HAS_CONTENT if c else 0) | (F_ERRORISH if type(sr) is str and sr not in _NOT_ERRORS else 0)
            for c, sr in zip(content, [m.stopReason if m is not None else None for m in msgs], strict=True)
        )
        listed = [
            i for i, (r, c) in enumerate(zip(roles, content, strict=True)) if c and (r == "user" or r == "assistant")
        ]
        self._batch_listing(navs, roles, listed)
        assistants = [i for i, r in enumerate(roles) if r == "assistant"]
        if assistants:
            blocks_of = assistant_blocks([msgs[i].content for i in assistants])  # type: ignore[union-attr]
            for i, blocks in zip(assistants, blocks_of, strict=True):
                flags[i] |= self._assistant_flags_of(first + i, blocks)
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

    def _assistant_flags_of(self, pos: int, blocks: Any) -> int:
        fl = 0
        if type(blocks) is list:
            for blk in blocks:
                bt = blk.type
                if bt == "text":
                    if not fl and type(blk.text) is str and js_trim(blk.text):
                        fl = F_ASSISTANT_TEXT
                elif bt == "toolCall" and type(blk.id) is str:
                    self._tool_call(pos, blk.id)
        elif type(blocks) is str and js_trim(blocks):
            fl = F_ASSISTANT_TEXT
        return fl

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
        if etype == "label":
            target = nav.targetId
            if isinstance(target, str):
                self.labels.pop(target, None)
                if isinstance(nav.label, str) and nav.label:
                    self.labels[target] = (nav.label, nav.timestamp)
        elif etype == "session_info":
            n = nav.name
            self.name = (js_trim(n) or None) if isinstance(n, str) else None
