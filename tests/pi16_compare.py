"""Comparisons of pi-server's answers with pi 1.6.0's (the oracle run with `--pi 1.6`).

Each function walks every case of the manifest and returns (compared, mismatches),
so the tests can assert on them and the same numbers can be reported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from conftest import load_json

from pi_server.context.build import build_context
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.tokens import estimate_total
from pi_server.store.discovery import all_messages_text, list_sessions, session_info
from pi_server.store.index import SessionIndex
from pi_server.tree.outline import Outline, get_tree, render_text, row_prefix
from pi_server.tree.paths import build_tree, unreachable

Mismatch = tuple[str, str]  # (where, what)


def cases(manifest: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any], SessionIndex]]:
    for f in manifest["files"]:
        exp = load_json(f["expected"])
        # v1 fixtures: read the original file (we migrate in memory); pi read a migrated copy
        path = f["source"] if f["kind"] == "fixture" else f["file"]
        yield f, exp, SessionIndex.open(path)


def _by_index(f: dict[str, Any]) -> bool:
    """Files whose ids pi made up while migrating: match entries by position."""
    return f["kind"] == "fixture"


def leaf_of(idx: SessionIndex, ctx: dict[str, Any]) -> tuple[str | None, bool] | None:
    """Our (leaf, before_first) for a context choice; None for an id pi does not know."""
    if ctx["leafId"] is None:
        return None, True
    if ctx["leafId"] == "__default__":
        return None, False
    if ctx.get("leafIndex") is not None:
        return idx.ids[ctx["leafIndex"]], False
    return None, False  # pi falls back to the last entry for an unknown leaf


def contexts(manifest: dict[str, Any], *, pending: bool) -> tuple[int, list[Mismatch]]:
    """buildSessionContext (messages, model, thinking level) at every leaf choice.
    `pending`: only the contexts pi 0.73.1 builds differently (context edits, checkpoints of
    compactions, system messages in a kept range); otherwise only the others."""
    n, bad = 0, []
    for f, exp, idx in cases(manifest):
        for ctx in exp["contexts"]:
            if ctx["agentDiffersFrom073"] != pending:
                continue
            leaf, before = leaf_of(idx, ctx)  # type: ignore[misc]
            ours = build_context(idx, leaf, before_first=before)
            where = f"{f['kind']}:{os.path.basename(f['file'])} leaf={ctx['leafId']}"
            n += 1
            for what, got, want in (
                ("agent", ours.messages, ctx["agent"]),
                ("model", ours.model, ctx["model"]),
                ("thinkingLevel", ours.thinking_level, ctx["thinkingLevel"]),
            ):
                if got != want:
                    bad.append((where, what))
    return n, bad


def llm_and_tokens(manifest: dict[str, Any]) -> tuple[int, list[Mismatch]]:
    """convertToLlm and the estimateTokens sum, on pi's own context messages."""
    n, bad = 0, []
    for f, exp, _idx in cases(manifest):
        for ctx in exp["contexts"]:
            where = f"{f['kind']}:{os.path.basename(f['file'])} leaf={ctx['leafId']}"
            llm, _ = convert_to_llm(ctx["agent"])
            n += 2
            if llm != ctx["llm"]:
                bad.append((where, "llm"))
            if estimate_total(ctx["agent"]) != ctx["tokens"]:
                bad.append((where, "tokens"))
    return n, bad


def _row_mismatch(idx: SessionIndex, by_index: bool, got: dict[str, Any], want: dict[str, Any]) -> str | None:
    shown = want["showConnector"] and not want["isVirtualRootChild"]
    vp = want["visibleParentId"]
    if by_index and vp is not None:
        vp = idx.ids[want["visibleParentIndex"]]
    checks = (
        ("indent", got["indent"], want["displayIndent"]),
        ("connector", got["connector"], ("└─" if want["isLast"] else "├─") if shown else ""),
        ("gutters", got["gutters"], want["gutters"]),
        ("foldable", got["foldable"], want["foldable"]),
        ("visibleParentId", got["visibleParentId"], vp),
        ("folded", got["folded"], want["folded"]),
        ("onActivePath", got["onActivePath"], want["onActivePath"]),
        ("title", got["title"], want["title"]),
        ("label", got.get("label"), want["label"]),
        ("prefix", row_prefix(got), want["prefix"]),
    )
    for what, a, b in checks:
        if a != b:
            return what
    return None


def outlines(manifest: dict[str, Any]) -> tuple[int, list[Mismatch]]:
    """/tree rows for every filter, leaf, search and fold the oracle drew (one comparison per list)."""
    n, bad = 0, []
    for f, exp, idx in cases(manifest):
        by_index = _by_index(f)
        outline = Outline(idx)
        for case in exp["outlines"]:
            leaf = idx.ids[case["leafIndex"]] if by_index else case["leafId"]
            folded = [idx.ids[i] for i in case["foldedIndex"] or []] if by_index else case["folded"] or []
            res = get_tree(outline, leaf, case["filter"], case["search"], folded)
            where = (
                f"{f['kind']}:{os.path.basename(f['file'])} filter={case['filter']} "
                f"search={case['search']!r} folded={folded} leaf={leaf}"
            )
            n += 1
            want_ids = [idx.ids[r["entryIndex"]] if by_index else r["id"] for r in case["rows"]]
            if [r["id"] for r in res["rows"]] != want_ids:
                bad.append((where, "ids"))
                continue
            what = next(
                (
                    w
                    for g, r in zip(res["rows"], case["rows"], strict=True)
                    if (w := _row_mismatch(idx, by_index, g, r))
                ),
                None,
            )
            if what is None and render_text(res) != [r["line"] for r in case["rows"]]:
                what = "line"
            if what is not None:
                bad.append((where, what))
    return n, bad


def trees(manifest: dict[str, Any]) -> tuple[int, list[Mismatch]]:
    """getTree: children (in order), roots and labels of every entry."""
    n, bad = 0, []
    for f, exp, idx in cases(manifest):
        by_index = _by_index(f)
        tree = build_tree(idx)
        key_of = {node["id"]: (idx.ids[node["entryIndex"]] if by_index else node["id"]) for node in exp["treeFlat"]}
        cut = set(unreachable(idx, tree))
        got = {
            idx.ids[p]: [idx.ids[c] for c in tree.children.get(p, [])]
            for p in range(len(idx))
            if idx.by_id[idx.ids[p]] == p and p not in cut
        }
        for node in exp["treeFlat"]:
            n += 1
            eid = key_of[node["id"]]
            kids = [key_of[c] for c in node["children"]]
            if got.get(eid) != kids or idx.label_of(eid) != node["label"]:
                bad.append((f"{f['kind']}:{os.path.basename(f['file'])} {eid}", "tree"))
        n += 1
        if set(got) != set(key_of.values()):
            bad.append((f"{f['kind']}:{os.path.basename(f['file'])}", "entries"))
    return n, bad


def infos(manifest: dict[str, Any]) -> tuple[int, list[Mismatch]]:
    """SessionInfo of every session file pi lists (v1 fixtures: pi lists its migrated copy)."""
    n, bad = 0, []
    for f, exp, idx in cases(manifest):
        want = exp["sessionInfo"]
        if f["kind"] == "fixture" or want is None:
            continue
        got = session_info(idx)
        n += 1
        where = f"{f['kind']}:{os.path.basename(f['file'])}"
        pairs = [("session", "path"), ("parentSession", "parentSessionPath"), ("name", "name")]
        pairs += [(k, k) for k in ("id", "cwd", "created", "modified", "messageCount", "firstMessage")]
        for ours, theirs in pairs:
            if got.get(ours) != want.get(theirs):
                bad.append((where, theirs))
        if all_messages_text(idx) != want["allMessagesText"]:
            bad.append((where, "allMessagesText"))
    return n, bad


def listings(manifest: dict[str, Any]) -> tuple[int, list[Mismatch]]:
    """SessionManager.list(cwd, dir): which files, in pi's order."""
    n, bad = 0, []
    for case in manifest["listings"]:
        got = [s["session"] for s in list_sessions([case["dir"]], cwd=case["cwd"])]
        n += 1
        if got != case["paths"]:
            bad.append(
                (f"{case['dir']} cwd={case['cwd']}", "order" if sorted(got) == sorted(case["paths"]) else "files")
            )
    return n, bad
