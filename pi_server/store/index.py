"""The per-file index: what navigation needs of every entry, nothing more.

Entries are held as parallel arrays (ids, parents, types, byte offsets, ...) so
a 100,000-entry session costs a few megabytes; a full entry is read lazily from
its byte offset. Re-reading a file that grew indexes only the appended bytes; a
file that shrank or whose header changed is re-indexed from scratch.
"""

from __future__ import annotations

import gc
import os
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from pi_server.jsutil import js_date_ms, js_trim
from pi_server.store import content

CURRENT_VERSION = 3

# flag bits
F_ASSISTANT_TEXT = 1  # assistant message with non-blank text
F_ERRORISH = 2  # assistant stopReason set and not stop/toolUse
F_HAS_CONTENT = 4  # message has a "content" key (pi's isMessageWithContent)


MODEL, THINKING, COMPACTION = 1, 2, 3


def setting_kind(etype: str, role: str | None) -> int:
    """What an entry contributes to pi's settings replay: the model, the thinking level, a compaction."""
    if etype == "message":
        return MODEL if role == "assistant" else 0
    if etype == "model_change":
        return MODEL
    if etype == "thinking_level_change":
        return THINKING
    if etype == "compaction":
        return COMPACTION
    return 0


class NotASession(Exception):
    """The file does not start with a pi session header."""


@dataclass(slots=True)
class Diagnostic:
    line: int  # 0-based physical line
    offset: int
    length: int
    severity: str  # "error" | "warning" | "info"
    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "offset": self.offset,
            "length": self.length,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }


class _Block(msgspec.Struct):
    type: Any = None
    text: Any = None
    id: Any = None
    name: Any = None
    arguments: msgspec.Raw = msgspec.Raw(b"null")


class _Msg(msgspec.Struct):
    role: Any = None
    content: msgspec.Raw = msgspec.Raw(b"")
    stopReason: Any = None  # noqa: N815 - pi's field name
    errorMessage: Any = None  # noqa: N815
    timestamp: Any = None


class _Nav(msgspec.Struct):
    type: Any = None
    id: Any = None
    parentId: Any = None  # noqa: N815
    timestamp: Any = None
    message: _Msg | None = None
    targetId: Any = None  # noqa: N815
    label: Any = None
    name: Any = None
    version: Any = None


_nav_decoder = msgspec.json.Decoder(_Nav)

_ABSENT: Any = msgspec.UNSET


class _TextBlock(msgspec.Struct):
    type: Any = None
    text: Any = None


class _TitleMsg(msgspec.Struct):
    role: Any = _ABSENT
    content: msgspec.Raw = msgspec.Raw(b"")
    stopReason: Any = _ABSENT  # noqa: N815
    errorMessage: Any = _ABSENT  # noqa: N815
    toolCallId: Any = _ABSENT  # noqa: N815
    toolName: Any = _ABSENT  # noqa: N815
    command: Any = _ABSENT


class _TitleEntry(msgspec.Struct):
    type: Any = _ABSENT
    id: Any = _ABSENT
    timestamp: Any = _ABSENT
    message: _TitleMsg | None = None
    customType: Any = _ABSENT  # noqa: N815
    content: Any = _ABSENT
    tokensBefore: Any = _ABSENT  # noqa: N815
    summary: Any = _ABSENT
    modelId: Any = _ABSENT  # noqa: N815
    thinkingLevel: Any = _ABSENT  # noqa: N815
    label: Any = _ABSENT
    name: Any = _ABSENT


_TITLE_FIELDS = [f for f in _TitleEntry.__struct_fields__ if f != "message"]
_TITLE_MSG_FIELDS = [f for f in _TitleMsg.__struct_fields__ if f != "content"]
_title_decoder = msgspec.json.Decoder(_TitleEntry)
_text_blocks_decoder = msgspec.json.Decoder(list[_TextBlock] | str)
_blocks_decoder = msgspec.json.Decoder(list[_Block] | str | None)
_intern: dict[Any, Any] = {}


def _canon(s: Any) -> Any:
    """Share one object per type/role/stopReason string across all entries."""
    if not isinstance(s, str):
        return s if s is None else None
    return _intern.setdefault(s, s)


def _loads(raw: bytes) -> Any:
    """Parse one line as pi's JSON.parse of a UTF-8-decoded file would."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # pi reads files as UTF-8 with replacement characters, then parses.
        return orjson.loads(raw.decode("utf-8", "replace").encode("utf-8"))


@dataclass(slots=True)
class Header:
    id: str
    version: int
    timestamp: Any
    cwd: str
    parent_session: str | None
    raw: dict[str, Any]


@dataclass
class SessionIndex:
    """Index of one session file. Call `refresh()` to (re)read it."""

    path: str
    header: Header | None = None
    ids: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    roles: list[str | None] = field(default_factory=list)
    flags: bytearray = field(default_factory=bytearray)
    offsets: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("l"))
    by_id: dict[str, int] = field(default_factory=dict)
    labels: dict[str, tuple[str, Any]] = field(default_factory=dict)
    # per entry: nearest model-setting / thinking / compaction entry on its path (-1: none);
    # exact unless `irregular` (a parent after its child, or a duplicate id)
    anc_model: array = field(default_factory=lambda: array("l"))
    anc_thinking: array = field(default_factory=lambda: array("l"))
    anc_compaction: array = field(default_factory=lambda: array("l"))
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
    tokens: dict[int, int] = field(default_factory=dict)  # estimateTokens of each entry's message
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
    _v1_by_ordinal: dict[int, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading

    @classmethod
    def open(cls, path: str) -> SessionIndex:
        idx = cls(os.path.abspath(path))
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
        """Read what changed on disk. Returns (appended ids, reset).

        With `max_bytes`, reads about that much (whole lines) and stops; `done`
        tells whether the end of the file was reached.
        """
        with open(self.path, "rb") as f:
            st = os.fstat(f.fileno())
            reset = False
            if self.header is not None:
                head = os.pread(f.fileno(), len(self._header_bytes), 0)
                if st.st_size < self.size or head != self._header_bytes:
                    self._clear()
                    reset = True
            if st.st_size == self.size:
                self.done = True
                return [], reset
            f.seek(self.size)
            want = st.st_size - self.size
            reached = True
            if max_bytes is not None and want > max_bytes:
                buf = f.read(max_bytes)
                while b"\n" not in buf and len(buf) < want:  # one line longer than the budget
                    buf += f.read(max_bytes)
                reached = len(buf) >= want
                if not reached:
                    buf = buf[: buf.rfind(b"\n") + 1]
            else:
                buf = f.read(want)
        before = len(self.ids)
        self._consume(buf, self.size)
        self.done = reached
        self.generation += 1
        return self.ids[before:], reset

    def _clear(self) -> None:
        fresh = SessionIndex(self.path)
        gen = self.generation
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(fresh, name))
        self.generation = gen + 1

    def _consume(self, buf: bytes, base: int) -> None:
        with _no_gc():
            self._consume_lines(buf, base)

    def _consume_lines(self, buf: bytes, base: int) -> None:
        # The common line (a v2/v3 entry that decodes, with a fresh id) is handled
        # inline with local names; everything else goes through _line/_entry.
        find = buf.find
        decode = _nav_decoder.decode
        ids, parents, types, roles = self.ids, self.parents, self.types, self.roles
        flags_arr, offsets, lengths, by_id = self.flags, self.offsets, self.lengths, self.by_id
        intern_get = _intern.get
        start = 0
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                break
            raw = buf[start:nl]
            off = base + start
            length = nl - start
            start = nl + 1
            fast = self.header is not None and not self._v1
            nav = None
            if fast:
                try:
                    nav = decode(raw)
                except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                    fast = False
            if fast:
                t = nav.type
                eid = nav.id
                if type(t) is not str or t in _SLOW_TYPES or type(eid) is not str or eid in by_id:
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
            etype = intern_get(t) or _canon(t)
            role = None
            fl = 0
            if etype == "message":
                self.message_count += 1
                msg = nav.message
                if msg is not None:
                    r = msg.role
                    role = (intern_get(r) or _canon(r)) if type(r) is str else None
                    if role == "hookMessage" and self.header.version < 3:  # type: ignore[union-attr]
                        role = _canon("custom")
                    sr = msg.stopReason
                    if type(sr) is str and sr and sr != "stop" and sr != "toolUse":
                        fl = F_ERRORISH
                    content = msg.content
                    has_content = len(content) > 0
                    if has_content:
                        fl |= F_HAS_CONTENT
                    if role == "assistant" or role == "user":
                        if role == "assistant":
                            blocks = _decode_blocks(msg)
                            if type(blocks) is list:
                                for blk in blocks:
                                    bt = blk.type
                                    if bt == "text":
                                        if not fl & F_ASSISTANT_TEXT and type(blk.text) is str and js_trim(blk.text):
                                            fl |= F_ASSISTANT_TEXT
                                    elif bt == "toolCall" and type(blk.id) is str:
                                        self._tool_call(len(ids), blk.id)
                            elif type(blocks) is str and js_trim(blocks):
                                fl |= F_ASSISTANT_TEXT
                        if has_content:
                            mts = msg.timestamp
                            tm = type(mts)
                            if tm is int or tm is float:
                                last = self.last_activity_ms
                                if last is None or mts > last:
                                    self.last_activity_ms = float(mts)
                                if role == "user" and not self.first_message:
                                    self._listing_facts(role, _decode_blocks(msg), True, None, None)
                            else:
                                blocks = _decode_blocks(msg) if role == "user" and not self.first_message else None
                                self._listing_facts(role, blocks, True, mts, nav.timestamp)
            self._ancestry(len(ids), known, etype, role)
            by_id[eid] = len(ids)
            ids.append(eid)
            parents.append(parent)
            types.append(etype)
            roles.append(role)
            flags_arr.append(fl)
            offsets.append(off)
            lengths.append(length)
            self._line_no += 1
        self.size = base + start
        self._pending = start < len(buf) and bool(buf[start:].strip())

    def _assistant_flags(self, pos: int, msg: _Msg) -> int:
        return self._assistant_flags_of(pos, _decode_blocks(msg))

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

    def _line(self, raw: bytes, off: int, length: int, nav: _Nav | None = None) -> None:
        orig = raw
        if self.header is None and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # JS's trim() drops a leading BOM before pi parses
        stripped = raw.strip()
        if not stripped:
            return
        msg_blocks: Any = _UNSET
        try:
            if nav is None or orig is not raw or stripped != raw:
                nav = _nav_decoder.decode(stripped)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            try:
                obj = _loads(stripped)
            except orjson.JSONDecodeError as e:
                self._diag(off, length, "error", "malformed-line", f"not valid JSON: {e}")
                return
            if not isinstance(obj, dict):
                self._diag(off, length, "error", "not-an-object", "line is JSON but not an object")
                self._ordinal += 1
                return
            nav, msg_blocks = _nav_from_dict(obj)

        if self.header is None:
            self._take_header(nav, stripped, orig)
            return
        self._ordinal += 1
        if nav.type == "session":
            return  # pi ignores further header lines
        self._entry(nav, msg_blocks, off, length)

    def _take_header(self, nav: _Nav, stripped: bytes, raw: bytes) -> None:
        if nav.type != "session" or not isinstance(nav.id, str):
            raise NotASession(f"{self.path}: first line is not a pi session header")
        obj = _loads(stripped)
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

    def _entry(self, nav: _Nav, msg_blocks: Any, off: int, length: int) -> None:
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
        etype = (_intern.get(t) or _canon(t)) if type(t) is str else ""
        msg = nav.message
        role = None
        flags = 0
        if etype == "message":
            self.message_count += 1
            if msg is not None:
                r = msg.role
                role = (_intern.get(r) or _canon(r)) if type(r) is str else None
                if role == "hookMessage" and self.version < 3:
                    role = _canon("custom")
                sr = msg.stopReason
                if type(sr) is str and sr and sr != "stop" and sr != "toolUse":
                    flags |= F_ERRORISH
                has_content = len(msg.content) > 0
                if has_content:
                    flags |= F_HAS_CONTENT
                if role == "assistant":
                    if msg_blocks is _UNSET:
                        flags |= self._assistant_flags(pos, msg)
                    else:
                        flags |= self._assistant_flags_of(pos, msg_blocks)
                    self._listing_facts(role, None, has_content, msg.timestamp, nav.timestamp)
                elif role == "user":
                    blocks = None
                    if not self.first_message:
                        blocks = _decode_blocks(msg) if msg_blocks is _UNSET else msg_blocks
                    self._listing_facts(role, blocks, has_content, msg.timestamp, nav.timestamp)
        elif etype == "label":
            target = nav.targetId
            if isinstance(target, str):
                if isinstance(nav.label, str) and nav.label:
                    self.labels.pop(target, None)
                    self.labels[target] = (nav.label, nav.timestamp)
                else:
                    self.labels.pop(target, None)
        elif etype == "session_info":
            n = nav.name
            self.name = (js_trim(n) or None) if isinstance(n, str) else None

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

    def _tool_call(self, pos: int, call_id: str) -> None:
        """Remember which assistant entry defines a tool call; its title is made when shown."""
        prev = self.call_pos.get(call_id)
        if prev is not None and prev != pos:
            dups = self.tool_dups.get(call_id)
            if dups is None:
                self.tool_dups[call_id] = dups = [prev]
            dups.append(pos)
        self.call_pos[call_id] = pos

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
        self.diagnostics.append(Diagnostic(self._line_no, off, length, severity, code, message))

    # ------------------------------------------------------------------ lookup

    def __len__(self) -> int:
        return len(self.ids)

    def pos(self, entry_id: str) -> int | None:
        return self.by_id.get(entry_id)

    @property
    def last_id(self) -> str | None:
        return self.ids[-1] if self.ids else None

    def label_of(self, entry_id: str) -> str | None:
        v = self.labels.get(entry_id)
        return v[0] if v else None

    def read_entries(self, positions: list[int], *, light: bool = False) -> list[dict[str, Any]]:
        """Entries at the given positions, as pi holds them after loading.

        `light` reads only what titles and search look at (no tool output,
        no thinking, no arguments), which is several times faster.
        """
        if not positions:
            return []
        out: list[dict[str, Any]] = []
        with open(self.path, "rb") as f, _no_gc():
            fd = f.fileno()
            order = sorted(range(len(positions)), key=positions.__getitem__)
            got: dict[int, dict[str, Any]] = {}
            # Read contiguous runs of lines in one call each.
            i = 0
            while i < len(order):
                j = i
                start = self.offsets[positions[order[i]]]
                end = start + self.lengths[positions[order[i]]]
                while j + 1 < len(order):
                    p = positions[order[j + 1]]
                    if self.offsets[p] - end > 65536 or end - start > _MAX_RUN:
                        break
                    end = max(end, self.offsets[p] + self.lengths[p])
                    j += 1
                chunk = os.pread(fd, end - start, start)
                for k in range(i, j + 1):
                    p = positions[order[k]]
                    o = self.offsets[p] - start
                    raw = chunk[o : o + self.lengths[p]]
                    got[order[k]] = self._light(p, raw) if light else self._materialize(p, raw)
                i = j + 1
            out = [got[k] for k in range(len(positions))]
        return out

    def cached_entries(self, positions: list[int]) -> list[dict[str, Any]]:
        """Like read_entries, through a small LRU of parsed entries (treat them as read-only).

        Context builds along the same branch re-read the same entries; the cache
        holds at most `cache_budget` bytes of source lines.
        """
        cache = self._cache
        missing = [p for p in positions if p not in cache]
        if missing:
            for p, e in zip(missing, self.read_entries(missing), strict=True):
                cache[p] = e
                self._cache_bytes += self.lengths[p]
        out = []
        for p in positions:
            cache.move_to_end(p)
            out.append(cache[p])
        while self._cache_bytes > self.cache_budget and cache:
            p, _ = cache.popitem(last=False)
            self._cache_bytes -= self.lengths[p]
        return out

    def clear_cache(self) -> None:
        self._cache.clear()
        self._cache_bytes = 0

    def line_of(self, pos: int) -> int:
        """Physical 0-based line number of an entry (counted on demand)."""
        with open(self.path, "rb") as f:
            return f.read(self.offsets[pos]).count(b"\n")

    def timestamps_of(self, positions: list[int]) -> list[Any]:
        return [e.get("timestamp") for e in self.read_entries(positions)]

    def read_entry(self, pos: int) -> dict[str, Any]:
        return self.read_entries([pos])[0]

    def _light(self, pos: int, raw: bytes) -> dict[str, Any]:
        try:
            e = _title_decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return self._materialize(pos, raw)
        out = {k: v for k in _TITLE_FIELDS if (v := getattr(e, k)) is not _ABSENT}
        m = e.message
        if m is not None:
            msg = {k: v for k in _TITLE_MSG_FIELDS if (v := getattr(m, k)) is not _ABSENT}
            if len(m.content):
                try:
                    msg["content"] = _text_blocks_decoder.decode(m.content)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    msg["content"] = _loads(bytes(m.content))
            if msg.get("role") == "hookMessage" and self.version < 3:
                msg["role"] = "custom"
            out["message"] = msg
        return out

    def _materialize(self, pos: int, raw: bytes) -> dict[str, Any]:
        try:
            obj = _loads(raw.strip())
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
            if obj.get("type") == "compaction" and isinstance(obj.get("firstKeptEntryIndex"), (int, float)):
                k = obj.pop("firstKeptEntryIndex")
                target = self._v1_by_ordinal.get(int(k)) if float(k).is_integer() else None
                if target is not None:
                    obj["firstKeptEntryId"] = self.ids[target]
            elif obj.get("type") == "compaction" and "firstKeptEntryIndex" in obj:
                obj.pop("firstKeptEntryIndex")
        msg = obj.get("message")
        if obj.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "hookMessage":
            msg["role"] = "custom"
        return obj


_UNSET: Any = object()
_MAX_RUN = 8 << 20  # bytes read in one call
_SLOW_TYPES = frozenset(("label", "session_info", "session"))


@contextmanager
def _no_gc() -> Iterator[None]:
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


def _decode_blocks(msg: _Msg) -> Any:
    raw = msg.content
    if not len(raw):
        return None
    try:
        return _blocks_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        try:
            return _blocks_from_obj(orjson.loads(bytes(raw)))
        except orjson.JSONDecodeError:
            return None


def _blocks_from_obj(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    if not isinstance(content, list):
        return None
    out = []
    for c in content:
        if isinstance(c, dict):
            args = c.get("arguments")
            out.append(
                _Block(
                    type=c.get("type"),
                    text=c.get("text"),
                    id=c.get("id"),
                    name=c.get("name"),
                    arguments=msgspec.Raw(orjson.dumps(args)) if "arguments" in c else msgspec.Raw(b"null"),
                )
            )
    return out


def _nav_from_dict(obj: dict[str, Any]) -> tuple[_Nav, Any]:
    m = obj.get("message")
    msg = None
    blocks: Any = _UNSET
    if isinstance(m, dict):
        msg = _Msg(
            role=m.get("role"),
            content=msgspec.Raw(orjson.dumps(m["content"])) if "content" in m else msgspec.Raw(b""),
            stopReason=m.get("stopReason"),
            errorMessage=m.get("errorMessage"),
            timestamp=m.get("timestamp"),
        )
        blocks = _blocks_from_obj(m.get("content")) if "content" in m else _UNSET
    return (
        _Nav(
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
