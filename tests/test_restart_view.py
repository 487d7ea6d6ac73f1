"""The tree and default view saved with a large session's index: after a restart the first
window reads no entry of the file, and every window equals the one built afresh (those are
checked against pi's own rows in test_oracle_outline.py and test_oracle16.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_tree_window import FILES

from pi_server.live.registry import Registry
from pi_server.server.options import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES
from pi_server.store import reading
from pi_server.store.cache import IndexCache
from pi_server.store.index import NotASession, SessionIndex
from pi_server.store.packing import pack, unpack
from pi_server.store.state import StateDir
from pi_server.tree import saved
from pi_server.tree.outline import FILTERS, Outline, get_tree

LIMITS = {"busy_timeout": DEFAULT_BUSY_TIMEOUT, "max_live_entries": DEFAULT_MAX_LIVE_ENTRIES}


def _iso(i: int) -> str:
    return f"2026-01-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def _big_session(p: Path, turns: int) -> None:
    """Turns of user, tool call, tool result and answer; branches every 40 turns (a branch
    older than its sibling, so children are sorted by timestamp), labels, settings, and one
    tool call id defined on two branches (its result's title follows the tree order)."""
    out = [{"type": "session", "version": 3, "id": "s", "timestamp": _iso(0), "cwd": "/w"}]
    prev: str | None = None
    clock = 10

    def add(entry: dict[str, Any], parent: str | None, ts: int) -> str:
        eid = f"e{len(out)}"
        out.append({**entry, "id": eid, "parentId": parent, "timestamp": _iso(ts)})
        return eid

    def msg(role: str, content: Any, **more: Any) -> dict[str, Any]:
        return {"type": "message", "message": {"role": role, "content": content, "timestamp": clock * 1000, **more}}

    for t in range(turns):
        clock += 5
        if t % 40 == 39:  # a branch from an entry a few turns back, dated before its sibling
            prev = out[len(out) - 37]["id"]
            clock -= 3
        user = add(msg("user", f"question {t}"), prev, clock)
        call = "dup" if t in (70, 71) else f"c{t}"  # past the first 200 rows
        block = {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": f"/f{t}"}}
        asked = add(msg("assistant", [block], stopReason="toolUse"), user, clock + 1)
        result = msg("toolResult", [{"type": "text", "text": "x"}], toolCallId=call, toolName="read")
        answered = add(result, asked, clock + 2)
        prev = add(msg("assistant", [{"type": "text", "text": f"answer {t}"}], stopReason="stop"), answered, clock + 3)
        if t % 25 == 0:
            add({"type": "label", "targetId": user, "label": f"l{t}"}, prev, clock + 4)
        if t % 60 == 0:
            prev = add({"type": "thinking_level_change", "thinkingLevel": "high"}, prev, clock + 4)
    p.write_text("".join(json.dumps(x) + "\n" for x in out))


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store") / "--w--"
    root.mkdir()
    f = root / "big.jsonl"
    _big_session(f, 5100)
    assert len(SessionIndex.open(str(f))) >= saved.VIEW_MIN_ENTRIES
    return f


def _windows(out: Outline, leaf: str | None) -> list[dict[str, Any]]:
    got = [get_tree(out, leaf, limit=200), get_tree(out, leaf, offset=150, limit=300, shared_gutters=True)]
    return got + [get_tree(out, leaf, filt, limit=120) for filt in FILTERS]


def _registry(f: Path, state: Path) -> Registry:
    return Registry(roots=[str(f.parent.parent)], state=StateDir(str(state)), **LIMITS)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Entries read from session files from now on (titles, timestamps, whole entries)."""
    real = reading.EntryReader._each_line
    seen: list[int] = []

    def counting(self: Any, positions: list[int], make: Any) -> list[Any]:
        seen.extend(positions)
        return real(self, positions, make)

    monkeypatch.setattr(reading.EntryReader, "_each_line", counting)
    return seen


def test_first_window_after_a_restart_reads_no_entry(big: Path, tmp_path: Path, reads, decoded_bytes) -> None:
    first = _registry(big, tmp_path / "state")
    live = first.get(str(big))
    before = get_tree(live.outline, live.leaf_id, limit=200)
    first.save_all()
    reads.clear()
    decoded_bytes.clear()
    again = _registry(big, tmp_path / "state").get(str(big))  # as a new daemon: the cache only
    assert get_tree(again.outline, again.leaf_id, limit=200) == before
    assert reads == [] and decoded_bytes == []
    assert _windows(again.outline, again.leaf_id) == _windows(Outline(SessionIndex.open(str(big))), again.leaf_id)


def test_a_view_saved_after_the_first_index_is_written_on_stop(big: Path, tmp_path: Path, reads) -> None:
    # indexed elsewhere (a worker process): the cache holds the index without a view
    IndexCache(tmp_path / "state").save(SessionIndex.open(str(big)))
    first = _registry(big, tmp_path / "state")
    first.get(str(big))
    first.save_all()
    reads.clear()
    again = _registry(big, tmp_path / "state").get(str(big))
    get_tree(again.outline, again.leaf_id, limit=200)
    assert reads == []


def test_another_leaf_or_a_grown_file_builds_the_view_anew(big: Path, tmp_path: Path) -> None:
    f = tmp_path / "store" / "--w--" / "big.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(big.read_bytes())
    first = _registry(f, tmp_path / "state")
    first.get(str(f))
    first.save_all()
    idx = SessionIndex.open(str(f))
    other = idx.ids[len(idx) // 2]
    StateDir(str(tmp_path / "state")).set_leaf(str(f), other, idx.size)
    moved = _registry(f, tmp_path / "state").get(str(f))
    assert moved.leaf_id == other
    assert _windows(moved.outline, other) == _windows(Outline(idx), other)
    with open(f, "a") as fh:
        entry = {"type": "message", "id": "new", "parentId": idx.ids[3], "timestamp": _iso(1)}
        fh.write(json.dumps({**entry, "message": {"role": "user", "content": "late", "timestamp": 1}}) + "\n")
    grown = _registry(f, tmp_path / "state").get(str(f))
    assert grown.leaf_id == "new"
    assert _windows(grown.outline, "new") == _windows(Outline(SessionIndex.open(str(f))), "new")


def test_a_damaged_view_is_not_trusted(big: Path, tmp_path: Path) -> None:
    cache = IndexCache(tmp_path / "state")
    idx = SessionIndex.open(str(big))
    leaf = len(idx) - 1
    cache.save(idx, Outline(idx).saved_view(leaf))
    file = cache._file(str(big))
    rec = unpack(file.read_bytes())
    for damage in ({"order": rec["view"]["order"][:-4]}, {"roots": b"\xff\xff\xff\x7f"}, {"titles": b"\x93"}):
        file.write_bytes(pack({**rec, "view": {**rec["view"], **damage}}))
        got = cache.load(str(big))
        assert got is not None
        assert _windows(Outline(got), idx.ids[leaf]) == _windows(Outline(idx), idx.ids[leaf])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_fixture_restored_with_its_view_reads_as_afresh(path: Path, tmp_path: Path, monkeypatch) -> None:
    """Orphans, cycles, duplicate ids, unsorted timestamps, v1 files: a view saved at any size."""
    monkeypatch.setattr(saved, "VIEW_MIN_ENTRIES", 0)
    try:
        idx = SessionIndex.open(str(path))
    except NotASession:  # nothing to save
        return
    cache = IndexCache(tmp_path / "state")
    for leaf in {len(idx) - 1, len(idx) // 2, None} if len(idx) else {None}:
        leaf_id = idx.ids[leaf] if leaf is not None else None
        cache.save(idx, Outline(idx).saved_view(leaf))
        got = cache.load(str(path))
        assert got is not None and got.saved_view is not None
        assert [got.position(i) for i in idx.ids] == [idx.by_id[i] for i in idx.ids]
        assert _windows(Outline(got), leaf_id) == _windows(Outline(idx), leaf_id)
        assert got.by_id == idx.by_id and got.call_pos == idx.call_pos and got.parents == idx.parents
