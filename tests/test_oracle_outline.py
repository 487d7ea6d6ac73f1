"""/tree rows equal pi's tree selector for every filter, search, fold and leaf."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import load_json

from pi_server.store.index import SessionIndex
from pi_server.tree.outline import Outline, get_tree, render_text, row_prefix
from pi_server.tree.paths import build_tree, unreachable


@pytest.fixture(scope="module")
def all_files(oracle: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(f, load_json(f["expected"])) for f in oracle["files"]]


def _ids(idx: SessionIndex, exp_ids: list[str], indexes: list[int] | None, fixture: bool) -> list[str]:
    if not fixture:
        return exp_ids
    return [idx.ids[i] for i in indexes or []]


def test_rows_equal_pi(all_files, pi16_answers) -> None:
    cases = 0
    for f, exp in all_files:
        fixture = f["kind"] == "fixture"
        idx = SessionIndex.open(f.get("source") or f["file"])
        outline = Outline(idx)
        # pi 1.6.0 titles some tool results differently (paths under HOME, read line
        # ranges): titles and lines are pi 1.6.0's, for the same cases
        exp16 = pi16_answers(f)
        for case, case16 in zip(exp["outlines"], exp16["outlines"], strict=True):
            assert [r["entryIndex"] for r in case16["rows"]] == [r["entryIndex"] for r in case["rows"]]
            leaf = idx.ids[case["leafIndex"]] if fixture else case["leafId"]
            folded = _ids(idx, case["folded"] or [], case.get("foldedIndex") or [], fixture)
            res = get_tree(outline, leaf, case["filter"], case["search"], folded)
            where = f"{f['file']} filter={case['filter']} search={case['search']!r} folded={folded} leaf={leaf}"
            exp_rows = case["rows"]
            got_ids = [r["id"] for r in res["rows"]]
            want_ids = [idx.ids[r["entryIndex"]] if fixture else r["id"] for r in exp_rows]
            assert got_ids == want_ids, where
            assert res["total"] == len(exp_rows)
            for got, want, want16 in zip(res["rows"], exp_rows, case16["rows"], strict=True):
                w = f"{where} row={got['id']}"
                assert got["indent"] == want["displayIndent"], w
                shown = want["showConnector"] and not want["isVirtualRootChild"]
                assert got["connector"] == (("└─" if want["isLast"] else "├─") if shown else ""), w
                assert got["gutters"] == want["gutters"], w
                assert got["foldable"] == want["foldable"], w
                vp = want["visibleParentId"]
                if fixture and vp is not None:
                    vp = idx.ids[want["visibleParentIndex"]]
                assert got["visibleParentId"] == vp, w
                assert got["folded"] == want["folded"], w
                assert got["onActivePath"] == want["onActivePath"], w
                assert got["title"] == want16["title"], w
                assert got.get("label") == want["label"], w
                assert row_prefix(got) == want["prefix"], w
            assert render_text(res) == [r["line"] for r in case16["rows"]], where
            cases += 1
    assert cases > 500


def test_windows_page_through_the_same_rows(all_files) -> None:
    for f, _exp in all_files[:4]:
        idx = SessionIndex.open(f["file"])
        outline = Outline(idx)
        whole = get_tree(outline, idx.last_id, "all")
        paged = []
        offset = 0
        while offset < whole["total"]:
            part = get_tree(outline, idx.last_id, "all", offset=offset, limit=7)
            assert part["total"] == whole["total"] and part["offset"] == offset
            assert part["rows"]
            paged += part["rows"]
            offset += 7
        assert paged == whole["rows"]


def test_tree_children_and_labels_equal_pi(all_files) -> None:
    for f, exp in all_files:
        fixture = f["kind"] == "fixture"
        idx = SessionIndex.open(f.get("source") or f["file"])
        tree = build_tree(idx)
        want = {}
        for node in exp["treeFlat"]:
            key = idx.ids[node["entryIndex"]] if fixture else node["id"]
            want[key] = node
        cut = set(unreachable(idx, tree))
        got_children = {
            idx.ids[p]: [idx.ids[c] for c in tree.children.get(p, [])]
            for p in range(len(idx))
            if idx.by_id[idx.ids[p]] == p and p not in cut
        }
        assert set(got_children) == set(want), f["file"]
        for eid, node in want.items():
            kids = (
                node["children"]
                if not fixture
                else [idx.ids[want_node["entryIndex"]] for want_node in (want_by_id(exp, c) for c in node["children"])]
            )
            assert got_children[eid] == kids, (f["file"], eid)
            assert idx.label_of(eid) == node["label"], (f["file"], eid)
        roots = [idx.ids[p] for p in tree.roots]
        want_roots = [k for k, n in want.items() if n["treeParentId"] is None]
        assert sorted(roots) == sorted(want_roots)


def want_by_id(exp: dict[str, Any], pi_id: str) -> dict[str, Any]:
    for node in exp["treeFlat"]:
        if node["id"] == pi_id:
            return node
    raise KeyError(pi_id)
