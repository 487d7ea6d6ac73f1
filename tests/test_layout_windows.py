"""A window's rows are laid out only as far as it reads (tree/walk.py): any window of a
fresh outline, and pages read in any order, must equal the same rows of the whole layout."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from pi_server.store.index import SessionIndex
from pi_server.tree import outline, walk

FIXTURES = Path(__file__).parent / "fixtures"


def _files(oracle: dict[str, Any]) -> list[Path]:
    files = [Path(f["file"]) for f in oracle["files"]]
    files += sorted((FIXTURES / "pi16").glob("*.jsonl")) + sorted((FIXTURES / "pi").glob("*.jsonl"))
    return [f for f in files if f.is_file()]


def test_windows_laid_out_as_read_equal_the_whole_layout(oracle: dict[str, Any], monkeypatch: Any) -> None:
    monkeypatch.setattr(walk, "STEP", 1)  # the fixtures' trees are small: pause anywhere in them
    rnd = random.Random(16)
    checked = 0
    for f in _files(oracle):
        try:
            idx = SessionIndex.open(str(f))
        except Exception:
            continue
        leaves = [idx.last_id, None, *(idx.ids[rnd.randrange(len(idx))] for _ in range(2) if len(idx))]
        for leaf in leaves:
            for filt in outline.FILTERS:
                whole = outline.get_tree(outline.Outline(idx), leaf, filt)
                rows, total = whole["rows"], whole["total"]
                if len(rows) < total:
                    continue  # cut at the gutter budget: test_hostile pages through such trees
                # each row's visible children, counted apart from the layout's own count
                below: dict[Any, int] = {}
                for r in rows:
                    below[r["visibleParentId"]] = below.get(r["visibleParentId"], 0) + 1
                assert [r["childCount"] for r in rows] == [below.get(r["id"], 0) for r in rows]
                fresh = outline.Outline(idx)
                offsets = [0, max(0, total - 3), *(rnd.randrange(total + 1) for _ in range(3))]
                for off in offsets:  # out of order: later rows first, then earlier ones again
                    limit = rnd.choice((1, 5, 200, 300))
                    page = outline.get_tree(fresh, leaf, filt, offset=off, limit=limit)
                    assert page["total"] == total
                    assert page["rows"] == rows[off : off + limit]
                    checked += len(page["rows"])
                lay = fresh.layout(fresh.idx.by_id.get(leaf) if leaf else None, filt, "", frozenset())
                assert len(lay.indent) == total and len(lay.connectors) == total == len(lay.rows)
    assert checked > 10_000
