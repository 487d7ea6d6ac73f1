"""The per-file index: incremental reads, resets, partial lines, v1/v2 files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_FIXTURES

from pi_server.context.build import build_context
from pi_server.store.index import NotASession, SessionIndex


def _snapshot(idx: SessionIndex) -> tuple:
    return (
        list(idx.ids),
        list(idx.parents),
        list(idx.types),
        list(idx.roles),
        list(idx.offsets),
        list(idx.lengths),
        dict(idx.labels),
        idx.message_count,
        idx.first_message,
        idx.name,
    )


def _a_session(oracle: dict[str, Any]) -> Path:
    return Path(max((f for f in oracle["files"] if f["kind"] == "generated"), key=lambda f: f["entries"])["file"])


def test_growing_file_indexes_only_new_bytes(oracle: dict[str, Any], tmp_path: Path, decoded_bytes: list[int]) -> None:
    data = _a_session(oracle).read_bytes()
    target = tmp_path / "s.jsonl"
    cut = len(data) // 3
    target.write_bytes(data[:cut])
    idx = SessionIndex.open(str(target))
    pos = cut
    step = max(1, len(data) // 17)
    while pos < len(data):
        nxt = min(len(data), pos + step)
        with open(target, "ab") as f:
            f.write(data[pos:nxt])
        before = idx.size
        decoded_bytes.clear()
        appended, reset = idx.refresh()
        assert not reset
        assert sum(decoded_bytes) <= nxt - before  # only the appended bytes were parsed
        fresh = SessionIndex.open(str(target))
        assert _snapshot(idx) == _snapshot(fresh)
        assert idx.partial_tail == (not data[:nxt].endswith(b"\n"))
        assert appended == fresh.ids[len(fresh.ids) - len(appended) :]
        pos = nxt
    assert len(idx) == len(SessionIndex.open(str(_a_session(oracle))))


def test_shrunk_or_rewritten_file_resets(oracle: dict[str, Any], tmp_path: Path) -> None:
    src = _a_session(oracle)
    target = tmp_path / "s.jsonl"
    shutil.copy(src, target)
    idx = SessionIndex.open(str(target))
    lines = target.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines[:5]))
    _, reset = idx.refresh()
    assert reset and len(idx) == 4
    header = json.loads(lines[0])
    header["version"] = 3
    header["cwd"] = "/elsewhere"
    target.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    _, reset = idx.refresh()
    assert reset and idx.header is not None and idx.header.cwd == "/elsewhere"
    assert _snapshot(idx) == _snapshot(SessionIndex.open(str(target)))


def test_partial_last_line_waits_for_newline(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    head = '{"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n'
    e1 = '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}\n'
    e2 = '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"yo"}}\n'
    p.write_text(head + e1 + e2[:30])
    idx = SessionIndex.open(str(p))
    assert idx.ids == ["a1"] and idx.partial_tail and not idx.diagnostics
    with open(p, "a") as f:
        f.write(e2[30:])
    appended, reset = idx.refresh()
    assert appended == ["a2"] and not reset and not idx.partial_tail


def test_bad_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    head = '{"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n'
    good = '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}\n'
    p.write_bytes(head.encode() + b"{not json\n" + b"\xff\xfe garbage\n" + good.encode() + b"[1,2]\n")
    idx = SessionIndex.open(str(p))
    assert idx.ids == ["a1"]
    assert [d.code for d in idx.diagnostics] == ["malformed-line", "malformed-line", "not-an-object"]
    assert [d.line for d in idx.diagnostics] == [1, 2, 4]


def test_not_a_session(tmp_path: Path) -> None:
    for text in ["", '{"type":"message"}\n', "garbage\n", '{"type":"session"}\n']:
        p = tmp_path / "x.jsonl"
        p.write_text(text)
        with pytest.raises(NotASession):
            SessionIndex.open(str(p))


def test_v1_ids_are_stable_and_chain_in_file_order() -> None:
    path = SHARED_FIXTURES / "before-compaction.jsonl"
    a, b = SessionIndex.open(str(path)), SessionIndex.open(str(path))
    assert a.version == 1 and a.ids == b.ids
    assert a.parents[0] is None
    assert all(a.parents[i] == a.ids[i - 1] for i in range(1, len(a)))
    entry = a.read_entry(len(a) - 1)
    assert entry["id"] == a.ids[-1] and entry["parentId"] == a.ids[-2]


def test_v1_first_kept_index_is_mapped(tmp_path: Path) -> None:
    p = tmp_path / "v1.jsonl"
    rows = [
        {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "one"}},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": {"role": "user", "content": "two"}},
        {
            "type": "compaction",
            "timestamp": "2025-01-01T00:00:03.000Z",
            "summary": "S",
            "firstKeptEntryIndex": 2,
            "tokensBefore": 10,
        },
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:04.000Z",
            "message": {"role": "hookMessage", "content": "h"},
        },
    ]
    p.write_text(
        "\n".join(json.dumps(r) for r in rows[:2])
        + "\n\nnot json\n"
        + "\n".join(json.dumps(r) for r in rows[2:])
        + "\n"
    )
    idx = SessionIndex.open(str(p))
    comp = idx.read_entry(2)
    # counts parsed entries with the header as 0, skipping blank and malformed lines
    assert comp["firstKeptEntryId"] == idx.ids[1] and "firstKeptEntryIndex" not in comp
    ctx = build_context(idx, None)
    assert [m.get("content") for m in ctx.messages[1:]] == ["two", "h"]
    assert ctx.messages[2]["role"] == "custom"
    assert p.read_text().count("firstKeptEntryIndex") == 1  # never rewritten
