"""Runs of ordinary lines are indexed a run at a time (store/batch.py); a run holding any
unusual line is read line by line. Both must give the same index, whatever the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import SHARED_FIXTURES

from pi_server.store import scan
from pi_server.store.index import SessionIndex

FIXTURES = Path(__file__).parent / "fixtures"


def _facts(idx: SessionIndex) -> dict[str, Any]:
    return {
        "ids": idx.ids,
        "by_id": idx.by_id,
        "parents": idx.parents,
        "types": idx.types,
        "roles": idx.roles,
        "flags": bytes(idx.flags),
        "lines": [idx.read_raw(p) for p in range(len(idx))],
        "anc": [list(idx.anc_model), list(idx.anc_thinking), list(idx.anc_compaction)],
        "labels": list(idx.labels.items()),
        "calls": (idx.call_pos, idx.tool_dups),
        "listing": (idx.message_count, idx.first_message, idx.last_activity_ms, idx.name),
        "irregular": idx.irregular,
        "header": idx.header.raw if idx.header else None,
    }


def _with_junk(data: bytes, every: int) -> tuple[bytes, int]:
    """The same session with an unreadable line after the first line and after every `every`
    lines: every run then holds one, so the whole file is read line by line."""
    lines = data.splitlines(keepends=True)
    out = [lines[0], b"{not json\n"]
    for i, line in enumerate(lines[1:], 1):
        out.append(line)
        if i % every == 0:
            out.append(b"{not json\n")
    return b"".join(out), len(out) - len(lines)


def _sessions(oracle: dict[str, Any]) -> list[Path]:
    files = [Path(f["file"]) for f in oracle["files"]]
    files += sorted((FIXTURES / "pi16").glob("*.jsonl")) + sorted((FIXTURES / "pi").glob("*.jsonl"))
    files += sorted(SHARED_FIXTURES.glob("**/*.jsonl")) if SHARED_FIXTURES.exists() else []
    return [f for f in files if f.is_file()]


def _compare(src: bytes, tmp_path: Path, every: int) -> int:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    src = src if src.endswith(b"\n") else src + b"\n"
    junk, added = _with_junk(src, every)
    a.write_bytes(src)
    b.write_bytes(junk)
    try:
        fast = SessionIndex.open(str(a))
    except Exception as e:  # not a session: the line-by-line reading must refuse it too
        try:
            SessionIndex.open(str(b))
        except Exception as e2:
            assert type(e2) is type(e)
            return 0
        raise
    slow = SessionIndex.open(str(b))
    assert _facts(fast) == _facts(slow)
    assert len(slow.diagnostics) - len(fast.diagnostics) == min(scan.MAX_DIAGNOSTICS - len(fast.diagnostics), added)
    return len(fast)


def test_runs_and_single_lines_index_alike(oracle: dict[str, Any], tmp_path: Path) -> None:
    total = 0
    for f in _sessions(oracle):
        total += _compare(f.read_bytes(), tmp_path, 40)
    assert total > 1000


def test_many_runs_index_alike(oracle: dict[str, Any], tmp_path: Path) -> None:
    """A file of several runs: copies of a session chained one after the other, tool call ids
    shared between copies, a label and a name in each copy."""
    src = max((Path(f["file"]) for f in oracle["files"] if f["kind"] == "generated"), key=lambda p: p.stat().st_size)
    lines = src.read_bytes().splitlines()
    header, body = lines[0], [json.loads(x) for x in lines[1:] if x.strip()]
    out = [header]
    last = None
    copy = 0
    while sum(map(len, out)) < 3 * scan.BATCH:
        for e in body:
            e = dict(e)
            e["id"] = f"c{copy}-{e['id']}"
            if e.get("parentId"):
                e["parentId"] = f"c{copy}-{e['parentId']}"
            elif last is not None:
                e["parentId"] = last
            if isinstance(e.get("targetId"), str):
                e["targetId"] = f"c{copy}-{e['targetId']}"
            out.append(json.dumps(e).encode())
        last = f"c{copy}-{body[-1]['id']}"
        out.append(
            json.dumps(
                {
                    "type": "label",
                    "id": f"l{copy}",
                    "parentId": last,
                    "targetId": last,
                    "label": f"copy {copy}",
                    "timestamp": "2025-01-01T00:00:00Z",
                }
            ).encode()
        )
        out.append(
            json.dumps(
                {
                    "type": "session_info",
                    "id": f"n{copy}",
                    "parentId": f"l{copy}",
                    "name": f" copy {copy} ",
                    "timestamp": "2025-01-01T00:00:00Z",
                }
            ).encode()
        )
        last = f"n{copy}"
        copy += 1
    n = _compare(b"\n".join(out) + b"\n", tmp_path, 200)
    assert n > 3 * len(body)


def test_unusual_runs_index_alike(oracle: dict[str, Any], tmp_path: Path) -> None:
    """Runs holding what the run-at-a-time path must take like the line-by-line one: ids seen
    in an earlier run, parents named after their child or never, parents, roles and stop
    reasons that are not strings (some not even hashable), settings and compactions mid-run."""
    src = max((Path(f["file"]) for f in oracle["files"] if f["kind"] == "generated"), key=lambda p: p.stat().st_size)
    lines = src.read_bytes().splitlines()
    header, body = lines[0], [json.loads(x) for x in lines[1:] if x.strip()]
    seen: set[str] = set()
    body = [e for e in body if isinstance(e.get("id"), str) and not (e["id"] in seen or seen.add(e["id"]))]
    out = [header]
    copy = 0
    odd: list[Any] = [["x"], {"a": 1}, 7, None, True]
    planted = False
    while sum(map(len, out)) < 4 * scan.BATCH:
        for i, e in enumerate(body):
            e = json.loads(json.dumps(e))
            e["id"] = f"c{copy}-{e['id']}"
            if e.get("parentId"):
                e["parentId"] = f"c{copy}-{e['parentId']}"
            if i % 97 == 5:
                e["parentId"] = f"c{copy}-{body[min(i + 3, len(body) - 1)]['id']}"  # named after its child
            elif i % 89 == 7:
                e["parentId"] = odd[(i + copy) % len(odd)]
            elif i % 83 == 11:
                e["parentId"] = "nowhere" if not planted else f"c0-{body[3]['id']}"
            msg = e.get("message")
            if isinstance(msg, dict) and i % 79 == 13:
                msg["role"] = odd[(i + copy) % len(odd)]
            if isinstance(msg, dict) and i % 73 == 17:
                msg["stopReason"] = odd[(i + copy) % len(odd)]
            out.append(json.dumps(e).encode())
            if i % 101 == 19:
                kind = ("thinking_level_change", "compaction", "model_change")[(i + copy) % 3]
                extra = {"type": kind, "id": f"k{copy}-{i}", "parentId": e["id"], "timestamp": "2025-01-01T00:00:00Z"}
                extra.update(thinkingLevel="high", summary="s", firstKeptEntryId=e["id"], tokensBefore=1)
                out.append(json.dumps(extra).encode())
        if not planted and sum(map(len, out)) > 2 * scan.BATCH:  # a run repeating an id of the first copy: later runs check ids first
            dup = json.loads(json.dumps(body[-1]))
            dup["id"] = f"c0-{body[3]['id']}"
            out.append(json.dumps(dup).encode())  # what follows may name it as a parent
            planted = True
        copy += 1
    n = _compare(b"\n".join(out) + b"\n", tmp_path, 300)
    assert n > 4 * len(body)
