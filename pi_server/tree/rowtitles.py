"""Titles and timestamps of /tree rows, read from the file and kept for the next window.

An entry of an append-only file never changes, so neither does its title: titles are
kept per index generation (a bounded cache), except a tool result's whose call id is
defined more than once (its title then depends on the tree order, as in pi).
"""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server.store import entry_types as et
from pi_server.store.decode import DECODE_ERRORS, loads
from pi_server.store.index import SessionIndex
from pi_server.store.reading import title_content
from pi_server.tree import titles

# ~400 bytes a row: a few megabytes at most, and many windows' worth of scrolling
MAX_CACHED = 8192


class _CallBlock(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    name: Any = None
    arguments: msgspec.Raw = msgspec.Raw(b"")


class _CallMsg(msgspec.Struct, gc=False):
    content: list[_CallBlock] | None = None


class _CallEntry(msgspec.Struct, gc=False):
    message: _CallMsg | None = None


_call_entry = msgspec.json.Decoder(_CallEntry)


class _Args(msgspec.Struct, gc=False):
    """The arguments pi's formatToolCall reads for its known tools (an edit's texts skipped)."""

    path: Any = None
    file_path: Any = None
    offset: Any = None
    limit: Any = None
    command: Any = None
    pattern: Any = None


_args = msgspec.json.Decoder(_Args)
_KNOWN_TOOLS = frozenset(("read", "write", "edit", "bash", "grep", "find", "ls"))


def read_for_titles(idx: SessionIndex, positions: list[int]) -> list[dict[str, Any]]:
    """The entries' title and search fields (the index's light read)."""
    return idx.read_entries(positions, light=True)


class _ResultMsg(msgspec.Struct, gc=False):
    role: Any = None
    toolCallId: Any = None  # noqa: N815 - pi's field name
    toolName: Any = None  # noqa: N815


class _ResultRow(msgspec.Struct, gc=False):
    """A tool result as its row reads it: the output is skipped, not decoded."""

    type: Any = None
    timestamp: Any = None
    message: _ResultMsg | None = None


class _ChatMsg(msgspec.Struct, gc=False):
    role: Any = None
    content: msgspec.Raw = msgspec.Raw(b"")
    stopReason: Any = None  # noqa: N815
    errorMessage: Any = None  # noqa: N815


class _ChatRow(msgspec.Struct, gc=False):
    type: Any = None
    timestamp: Any = None
    message: _ChatMsg | None = None


_result_row = msgspec.json.Decoder(_ResultRow)
_chat_row = msgspec.json.Decoder(_ChatRow)


class _Result:
    """A tool result row, titled once its call's title is known."""

    __slots__ = ("call", "name", "timestamp")

    def __init__(self, call: Any, name: Any, timestamp: Any) -> None:
        self.call, self.name, self.timestamp = call, name, timestamp


def _read_rows(idx: SessionIndex, positions: list[int], also: set[int], lines: dict[int, bytes]) -> list[Any]:
    """Each row as a (title, timestamp) for user and assistant messages, a _Result for tool
    results (their output is not decoded at all), else the entry as read_for_titles reads
    it. The lines of `also` are read in the same pass into `lines`."""
    light, types, roles = idx.light_entry, idx.types, idx.roles
    rows = set(positions)

    def make(pos: int, raw: bytes) -> Any:
        if pos in also:
            lines[pos] = raw
            if pos not in rows:
                return None
        role = roles[pos]  # the index's: picks the shape, checked against the line's own
        if types[pos] != et.MESSAGE or (role != "toolResult" and role != "user" and role != "assistant"):
            return light(pos, raw)
        try:
            e = _result_row.decode(raw) if role == "toolResult" else _chat_row.decode(raw)
        except DECODE_ERRORS:
            return light(pos, raw)
        m = e.message
        if e.type != et.MESSAGE or m is None or m.role != role:
            return light(pos, raw)
        if role == "toolResult":
            return _Result(m.toolCallId, m.toolName, e.timestamp)
        content = title_content(m.content) if len(m.content) else None
        if role == "user":
            return titles.user_title(content), e.timestamp
        return titles.assistant_title(content, m.stopReason, m.errorMessage), e.timestamp

    return idx.map_lines(positions + [p for p in also if p not in rows], make)[: len(positions)]


class RowTitles:
    """The (title, timestamp) of rows, for one index; `definer` picks a call's entry as pi does."""

    def __init__(self, idx: SessionIndex) -> None:
        self.idx = idx
        self._gen = -1
        self._cache: dict[int, tuple[str, Any]] = {}

    def rows(self, positions: list[int], definer: Any) -> list[tuple[str, Any]]:
        idx = self.idx
        cache = self._cache
        if self._gen != idx.generation:
            self._gen = idx.generation
            cache.clear()
        got = {p: hit for p in positions if (hit := cache.get(p)) is not None}
        missing = [p for p in positions if p not in got]
        if missing:
            if len(cache) + len(missing) > MAX_CACHED:
                cache.clear()
            got.update(self._read(missing, definer))
        return [got[p] for p in positions]

    def cached(self, positions: list[int]) -> dict[int, tuple[str, Any]]:
        """The rows among `positions` known for the index as it is (tree/saved.py keeps them)."""
        if self._gen != self.idx.generation:
            return {}
        return {p: hit for p in positions if (hit := self._cache.get(p)) is not None}

    def seed(self, rows: dict[int, tuple[str, Any]]) -> None:
        """Rows known for the index as it is (kept by tree/saved.py with this generation's view)."""
        if self._gen != self.idx.generation:
            self._gen = self.idx.generation
            self._cache.clear()
        self._cache.update(rows)

    def _read(self, positions: list[int], definer: Any) -> dict[int, tuple[str, Any]]:
        idx = self.idx
        # a tool result's call is almost always its parent's: read those lines in the same pass
        roles, parents, by_id = idx.roles, idx.parents, idx.by_id
        also = {by_id[q] for p in positions if roles[p] == "toolResult" and (q := parents[p]) in by_id}
        lines: dict[int, bytes] = {}
        entries = _read_rows(idx, positions, also, lines)
        want: dict[str, int] = {}
        calls: list[Any] = []
        call_pos = idx.call_pos
        for e in entries:
            call = None
            if type(e) is _Result:
                call = e.call
            elif type(e) is dict:
                msg = e.get("message")
                if isinstance(msg, dict) and msg.get("role") == "toolResult" and e.get("type") == et.MESSAGE:
                    call = msg.get("toolCallId")
            if type(call) is str and call in call_pos:
                want[call] = definer(call)
            calls.append(call)
        tool_titles = self._tool_titles(want, lines) if want else {}
        out: dict[int, tuple[str, Any]] = {}
        cache, dups = self._cache, idx.tool_dups
        for pos, e, call in zip(positions, entries, calls, strict=True):
            if type(e) is tuple:
                row = e
            elif type(e) is _Result:
                row = (titles.tool_result_title(call, e.name, tool_titles), e.timestamp)
            else:
                row = (titles.display_title(e, tool_titles), e.get("timestamp"))
            out[pos] = row
            if call is None or type(call) is not str or call not in dups:  # else it follows the tree order
                cache[pos] = row
        return out

    def _tool_titles(self, want: dict[str, int], lines: dict[int, bytes]) -> dict[str, str]:
        """Titles of the tool calls the given tool results answer (pi's formatToolCall)."""
        by_pos: dict[int, list[str]] = {}
        for call, pos in want.items():
            by_pos.setdefault(pos, []).append(call)
        out: dict[str, str] = {}
        unread = [p for p in by_pos if p not in lines]
        if unread:
            lines.update(zip(unread, self.idx.map_lines(unread, _raw), strict=True))
        for pos in by_pos:
            got = _call_blocks(lines[pos])
            for call in by_pos[pos]:
                block = _find(got, call)
                if block is not None:
                    out[call] = titles.tool_call_title(block[0], block[1])
        return out


def _raw(pos: int, raw: bytes) -> bytes:
    return raw


def _call_blocks(raw: bytes) -> Any:
    """The tool call blocks of an assistant line: typed, arguments left as bytes; the whole
    line parsed when it does not fit that shape."""
    try:
        msg = _call_entry.decode(raw).message
        return msg.content if msg is not None and msg.content is not None else []
    except DECODE_ERRORS:
        try:
            obj = loads(bytes(raw).strip())
        except ValueError:  # unreadable: pi's load skips the line, so no title
            return []
        msg = obj.get("message") if isinstance(obj, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        return content if isinstance(content, list) else []


def _find(blocks: list[Any], call: str) -> tuple[Any, Any] | None:
    """The (name, arguments) of the last toolCall block with this id, as in pi's map."""
    found = None
    for c in blocks:
        if isinstance(c, _CallBlock):
            if c.type == "toolCall" and c.id == call:
                found = c
        elif isinstance(c, dict) and c.get("type") == "toolCall" and c.get("id") == call:
            found = c
    if found is None:
        return None
    if isinstance(found, dict):
        return found.get("name"), found.get("arguments")
    raw = found.arguments
    if not len(raw):
        return found.name, None
    if type(found.name) is str and found.name in _KNOWN_TOOLS:  # an object: the fields its title reads (absent reads as null)
        try:
            return found.name, msgspec.structs.asdict(_args.decode(raw))
        except DECODE_ERRORS:
            pass
    try:
        return found.name, loads(bytes(raw))
    except ValueError:  # nested past what the full parse takes: no title either
        return None
