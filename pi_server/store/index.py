"""The per-file index: what navigation needs of every entry, nothing more.

Entries are held as parallel arrays (ids, parents, types, byte offsets, ...) so
a 100,000-entry session costs a few megabytes; a full entry is read lazily from
its byte offset. Re-reading a file that grew indexes only the appended bytes; a
file that shrank or whose header changed is re-indexed from scratch.
"""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from pi_server.jsutil import js_date_ms
from pi_server.store import content, scan
from pi_server.store import entry_types as et
from pi_server.store.batch import BatchIndexer
from pi_server.store.decode import (
    DECODE_ERRORS,
    SLOW_TYPES,
    UNSET,
    Nav,
    canon,
    decode_blocks,
    interned,
    loads,
    nav_decoder,
    nav_from_dict,
    no_gc,
    synth_id,
)
from pi_server.store.lazy import LazyColumns
from pi_server.store.reading import EntryReader
from pi_server.store.records import (
    COMPACTION,
    CURRENT_VERSION,
    F_ASSISTANT_TEXT,
    F_ERRORISH,
    F_HAS_CONTENT,
    MODEL,
    THINKING,
    Diagnostic,
    Header,
    NotASession,
    setting_kind,
)

__all__ = ["CURRENT_VERSION", "F_ASSISTANT_TEXT", "F_ERRORISH", "NotASession", "SessionIndex", "synth_id"]


@dataclass
class SessionIndex(EntryReader, BatchIndexer, LazyColumns):
    """Index of one session file. Call `refresh()` to (re)read it."""

    path: str
    header: Header | None = None
    ids: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    roles: list[str | None] = field(default_factory=list)
    flags: bytearray = field(default_factory=bytearray)
    offsets: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("i"))  # a line is at most scan.MAX_LINE
    lines: array = field(default_factory=lambda: array("l"))  # physical 0-based line of each entry
    by_id: dict[str, int] = field(default_factory=dict)
    labels: dict[str, tuple[str, Any]] = field(default_factory=dict)
    # per entry: nearest model-setting / thinking / compaction entry on its path (-1: none);
    # exact unless `irregular` (a parent after its child, or a duplicate id)
    anc_model: array = field(default_factory=lambda: array("i"))
    anc_thinking: array = field(default_factory=lambda: array("i"))
    anc_compaction: array = field(default_factory=lambda: array("i"))
    irregular: bool = False
    call_pos: dict[str, int] = field(default_factory=dict)  # tool call id -> assistant entry
    tool_dups: dict[str, list[int]] = field(default_factory=dict)  # ids used by several assistant entries
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # session listing facts, kept as entries arrive
    message_count: int = 0
    first_message: str = ""
    last_activity_ms: float | None = None
    name: str | None = None
    cache_budget: int = 24 << 20
    tokens: dict[Any, int] = field(default_factory=dict)  # estimateTokens per entry, or per (entry, edit, k)
    _cache: OrderedDict = field(default_factory=OrderedDict)
    _cache_bytes: int = 0
    # read position
    size: int = 0  # bytes consumed (complete lines only)
    generation: int = 0  # bumped on every change, keys caches
    done: bool = False  # the last refresh reached the end of the file
    _line_no: int = 0
    _ordinal: int = 0  # parsed lines so far, header = 0 (v1 ids and indexes)
    _header_bytes: bytes = b""
    _pending: bool = False
    roots: tuple[str, ...] = ()  # the folders the file must be read within (empty: read by name)
    _skipping: bool = False  # inside a line longer than scan.MAX_LINE
    _tail_hash: bytes = b""  # fingerprint of the indexed prefix's last bytes
    _v1_by_ordinal: dict[int, int] = field(default_factory=dict)
    _dup_seen: bool = False  # store/batch.py: check ids before adding them
    # an index restored from the cache builds these columns on first use (store/cache.py)
    _lazy: dict[str, Any] = field(default_factory=dict)
    # the tree and default view saved with the index (tree/saved.py): set by the cache only
    # while the file is unchanged, taken by the first outline
    saved_view: dict[str, bytes] | None = None

    @classmethod
    def open(cls, path: str, roots: tuple[str, ...] = ()) -> SessionIndex:
        idx = cls(os.path.abspath(path), roots=roots)
        idx.refresh()
        if idx.header is None:
            raise NotASession(f"{idx.path}: no session header (empty file)")
        return idx

    @property
    def version(self) -> int:
        return self.header.version if self.header else CURRENT_VERSION

    @property
    def _v1(self) -> bool:
        return self.header is not None and self.header.version < 2

    @property
    def partial_tail(self) -> bool:
        """The file ends in a line without its newline (still being written)."""
        return self._pending

    def refresh(self, max_bytes: int | None = None) -> tuple[list[str], bool]:
        """Read what changed on disk (regular files only, in bounded chunks: store/scan.py).
        Returns (appended ids, reset). With `max_bytes`, reads about that much (whole
        lines) and stops; `done` tells whether the end of the file was reached."""
        fd = scan.open_regular(self.path, self.roots)
        try:
            end = os.fstat(fd).st_size
            reset = False
            if scan.prefix_changed(fd, end, self.size, self._header_bytes, self._tail_hash):
                self._clear()
                reset = True
            if end == self.size:
                self.done = True
                return [], reset
            before, start = len(self.ids), self.size
            with no_gc():
                self.done = self._read_to(fd, end, max_bytes)
            if self.size - start >= scan.CHUNK:
                scan.release_memory()
            self._tail_hash = scan.tail_hash(fd, self.size)
            if self.done:
                tail = end - self.size
                small = not self._skipping and 0 < tail <= scan.MAX_LINE
                self._pending = small and bool(os.pread(fd, tail, self.size).strip())
        finally:
            os.close(fd)
        self.generation += 1
        return self.ids[before:], reset

    def _read_to(self, fd: int, end: int, max_bytes: int | None) -> bool:
        """Index whole lines up to `end` (about `max_bytes` of them); True when nothing is left."""
        first = self.size
        while self.size < end:
            if max_bytes is not None and self.size - first >= max_bytes:
                return False
            if self._skipping:  # inside a line too long to index: find its end
                nl = scan.find_newline(fd, self.size, end)
                if nl < 0:
                    self.size = end
                    return True
                self.size, self._skipping = nl + 1, False
                self._line_no += 1
                continue
            buf = os.pread(fd, min(scan.CHUNK, end - self.size), self.size)
            if not buf:
                return True
            if b"\n" in buf:
                self._consume_lines(buf, self.size)
                continue
            nl = scan.find_newline(fd, self.size + len(buf), end, scan.MAX_LINE - len(buf))
            if nl >= 0:  # one line longer than a chunk, within the limit
                self._consume_lines(os.pread(fd, nl + 1 - self.size, self.size), self.size)
                continue
            if end - self.size <= scan.MAX_LINE:
                return True  # an unfinished last line: wait for its newline
            self._diag(
                self.size, scan.MAX_LINE, "error", "line-too-long", f"line longer than {scan.MAX_LINE} bytes; skipped"
            )
            self._skipping = True
        return True

    def _clear(self) -> None:
        fresh, gen = SessionIndex(self.path, roots=self.roots), self.generation
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(fresh, name))
        self.generation = gen + 1

    def _consume_lines(self, buf: bytes, base: int) -> None:
        end = buf.rfind(b"\n") + 1  # whole lines only
        start = 0
        while start < end:
            if self.header is None or self._v1:
                start = self._lines(buf, start, end, base)
                continue
            stop = buf.rfind(b"\n", start, start + scan.BATCH) + 1
            if stop <= start:  # one line longer than a batch
                stop = buf.find(b"\n", start) + 1
            start = stop if self._consume_batch(buf, start, stop, base) else self._lines(buf, start, stop, base)
        self.size = base + end
        self._pending = end < len(buf) and bool(buf[end:].strip())

    def _lines(self, buf: bytes, start: int, stop: int, base: int) -> int:
        """Index the lines of buf[start:stop] one at a time (stopping after a header line);
        the offset reached. The common line (a v2/v3 entry that decodes, with a fresh id)
        is handled inline with local names; everything else goes through _line/_entry."""
        find = buf.find
        decode = nav_decoder.decode
        ids, parents, types, roles = self.ids, self.parents, self.types, self.roles
        flags_arr, offsets, lengths, by_id = self.flags, self.offsets, self.lengths, self.by_id
        lines = self.lines
        intern_get = interned.get
        headless = self.header is None
        while start < stop:
            if headless and self.header is not None:
                return start
            nl = find(b"\n", start)
            if nl == start:  # a run of empty lines, skipped at once
                end = scan.NEWLINES.match(buf, start).end()  # type: ignore[union-attr]
                self._line_no += end - start
                start = end
                continue
            raw = buf[start:nl]
            off = base + start
            length = nl - start
            start = nl + 1
            fast = self.header is not None and not self._v1
            nav = None
            if fast:
                try:
                    nav = decode(raw)
                except DECODE_ERRORS:
                    fast = False
            if fast:
                t = nav.type
                eid = nav.id
                if type(t) is not str or t in SLOW_TYPES or type(eid) is not str or eid in by_id:
                    fast = False
            if not fast:
                self._line(raw, off, length, nav)
                self._line_no += 1
                continue
            self._ordinal += 1
            parent = nav.parentId
            known = None
            if type(parent) is not str:
                parent = None
            else:
                known = by_id.get(parent)
                if known is not None:
                    parent = ids[known]
                else:
                    self.irregular = True
            etype = intern_get(t) or canon(t)
            role = None
            fl = 0
            if etype == et.MESSAGE:
                self.message_count += 1
                if nav.message is not None:
                    role, fl = self._fast_message(nav, len(ids))
            self._ancestry(len(ids), known, etype, role)
            by_id[eid] = len(ids)
            ids.append(eid)
            parents.append(parent)
            types.append(etype)
            roles.append(role)
            flags_arr.append(fl)
            offsets.append(off)
            lengths.append(length)
            lines.append(self._line_no)
            self._line_no += 1
        return start

    def _fast_message(self, nav: Nav, pos: int) -> tuple[str | None, int]:
        """Role and flags of a message entry on the fast path; keeps the listing facts."""
        msg = nav.message
        assert msg is not None
        r = msg.role
        role = (interned.get(r) or canon(r)) if type(r) is str else None
        if role == "hookMessage" and self.header.version < 3:  # type: ignore[union-attr]
            role = canon("custom")
        fl = 0
        sr = msg.stopReason
        if type(sr) is str and sr and sr != "stop" and sr != "toolUse":
            fl = F_ERRORISH
        has_content = len(msg.content) > 0
        if has_content:
            fl |= F_HAS_CONTENT
        if role != "assistant" and role != "user":
            return role, fl
        if role == "assistant":
            fl |= self._assistant_flags_of(pos, decode_blocks(msg))
        if has_content:
            mts = msg.timestamp
            tm = type(mts)
            if tm is int or tm is float:
                last = self.last_activity_ms
                if last is None or mts > last:
                    self.last_activity_ms = float(mts)
                if role == "user" and not self.first_message:
                    self._listing_facts(role, decode_blocks(msg), True, None, None)
            else:
                blocks = decode_blocks(msg) if role == "user" and not self.first_message else None
                self._listing_facts(role, blocks, True, mts, nav.timestamp)
        return role, fl

    def _line(self, raw: bytes, off: int, length: int, nav: Nav | None = None) -> None:
        orig = raw
        if self.header is None and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # JS's trim() drops a leading BOM before pi parses
        stripped = raw.strip()
        if not stripped:
            return
        if self.header is None and self._line_no >= scan.MAX_PREAMBLE:
            raise NotASession(f"{self.path}: no session header in its first {scan.MAX_PREAMBLE} lines")
        msg_blocks: Any = UNSET
        try:
            if nav is None or orig is not raw or stripped != raw:
                nav = nav_decoder.decode(stripped)
        except DECODE_ERRORS as de:
            if scan.plainly_malformed(de, stripped):
                self._diag(off, length, "error", "malformed-line", f"not valid JSON: {de}")
                return
            try:
                obj = loads(stripped)
            except orjson.JSONDecodeError as e:
                self._diag(off, length, "error", "malformed-line", f"not valid JSON: {e}")
                return
            if not isinstance(obj, dict):
                self._diag(off, length, "error", "not-an-object", "line is JSON but not an object")
                self._ordinal += 1
                return
            nav, msg_blocks = nav_from_dict(obj)

        if self.header is None:
            self._take_header(nav, stripped, orig)
            return
        self._ordinal += 1
        if nav.type == et.SESSION:
            return  # pi ignores further header lines
        self._entry(nav, msg_blocks, off, length)

    def _take_header(self, nav: Nav, stripped: bytes, raw: bytes) -> None:
        if nav.type != et.SESSION or not isinstance(nav.id, str):
            raise NotASession(f"{self.path}: first line is not a pi session header")
        try:
            obj = loads(stripped)
        except orjson.JSONDecodeError:
            raise NotASession(f"{self.path}: unreadable session header") from None
        version = obj.get("version")
        self.header = Header(
            id=nav.id,
            version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
            timestamp=obj.get("timestamp"),
            cwd=obj["cwd"] if isinstance(obj.get("cwd"), str) else "",
            parent_session=obj.get("parentSession") if isinstance(obj.get("parentSession"), str) else None,
            raw=obj,
        )
        self._header_bytes = raw + b"\n"
        self._ordinal = 1

    def _entry(self, nav: Nav, msg_blocks: Any, off: int, length: int) -> None:
        ids = self.ids
        by_id = self.by_id
        pos = len(ids)
        known = None
        if self._v1:
            eid = synth_id(self._ordinal - 1)
            parent = ids[pos - 1] if pos else None
            known = pos - 1 if pos else None
            self._v1_by_ordinal[self._ordinal - 1] = pos
        else:
            eid = nav.id
            if type(eid) is not str:
                # pi keys such entries by `undefined`; keep them addressable and report.
                eid = f"line-{self._line_no + 1}"
                self._diag(off, length, "warning", "missing-id", "entry has no id")
            parent = nav.parentId
            if type(parent) is not str:
                parent = None
            else:
                known = by_id.get(parent)
                if known is not None:
                    parent = ids[known]  # share the string object
                else:
                    self.irregular = True
        t = nav.type
        etype = (interned.get(t) or canon(t)) if type(t) is str else ""
        msg = nav.message
        role = None
        flags = 0
        if etype == et.MESSAGE:
            self.message_count += 1
            if msg is not None:
                r = msg.role
                role = (interned.get(r) or canon(r)) if type(r) is str else None
                if role == "hookMessage" and self.version < 3:
                    role = canon("custom")
                sr = msg.stopReason
                if type(sr) is str and sr and sr != "stop" and sr != "toolUse":
                    flags |= F_ERRORISH
                has_content = len(msg.content) > 0
                if has_content:
                    flags |= F_HAS_CONTENT
                if role == "assistant":
                    if msg_blocks is UNSET:
                        flags |= self._assistant_flags_of(pos, decode_blocks(msg))
                    else:
                        flags |= self._assistant_flags_of(pos, msg_blocks)
                    self._listing_facts(role, None, has_content, msg.timestamp, nav.timestamp)
                elif role == "user":
                    blocks = None
                    if not self.first_message:
                        blocks = decode_blocks(msg) if msg_blocks is UNSET else msg_blocks
                    self._listing_facts(role, blocks, has_content, msg.timestamp, nav.timestamp)
        else:
            self._side_facts(etype, nav)

        if eid in by_id:
            self.irregular = True
            self._diag(off, length, "warning", "duplicate-id", f"duplicate id {eid}; the later entry wins")
        self._ancestry(pos, known, etype, role)
        by_id[eid] = pos
        ids.append(eid)
        self.parents.append(parent)
        self.types.append(etype)
        self.roles.append(role)
        self.flags.append(flags)
        self.offsets.append(off)
        self.lengths.append(length)
        self.lines.append(self._line_no)

    def _ancestry(self, pos: int, ppos: int | None, etype: str, role: str | None) -> None:
        """Nearest entry on the path to `pos` (itself included) that sets the model,
        the thinking level, or is a compaction: context builds start from these."""
        if ppos is None:
            m = th = c = -1
        else:
            m, th, c = self.anc_model[ppos], self.anc_thinking[ppos], self.anc_compaction[ppos]
        kind = setting_kind(etype, role)
        if kind == MODEL:
            m = pos
        elif kind == THINKING:
            th = pos
        elif kind == COMPACTION:
            c = pos
        self.anc_model.append(m)
        self.anc_thinking.append(th)
        self.anc_compaction.append(c)

    def _listing_facts(self, role: str, blocks: Any, has_content: bool, msg_ts: Any, entry_ts: Any) -> None:
        if not has_content:
            return
        if isinstance(msg_ts, (int, float)) and not isinstance(msg_ts, bool):
            t: float | None = float(msg_ts)
        else:
            ms = js_date_ms(entry_ts) if isinstance(entry_ts, str) else float("nan")
            t = None if ms != ms else ms
        if t is not None:
            self.last_activity_ms = t if self.last_activity_ms is None else max(self.last_activity_ms, t)
        if role == "user" and not self.first_message:
            text = content.join_text(blocks, " ")
            if text:
                self.first_message = text

    def _diag(self, off: int, length: int, severity: str, code: str, message: str) -> None:
        if len(self.diagnostics) < scan.MAX_DIAGNOSTICS:  # a file of garbage stays a small index
            self.diagnostics.append(Diagnostic(self._line_no, off, length, severity, code, message))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def last_id(self) -> str | None:
        return self.ids[-1] if self.ids else None

    def label_of(self, entry_id: str) -> str | None:
        v = self.labels.get(entry_id)
        return v[0] if v else None
