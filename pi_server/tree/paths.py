"""Tree structure over an index: roots, children oldest first, paths, ancestors.

Everything is iterative and cycle-safe: a `parentId` cycle or a missing parent
ends a walk, never loops. Positions (ints into the index arrays) stand for
entries; ids are looked up only at the edges.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

from pi_server.jsutil import js_date_ms
from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.store.records import Diagnostic


class Children:
    """Each entry's children, oldest first, as two arrays (first child, next sibling): a
    100,000-entry session costs 1.6 MB, where a dict of lists costs more than 10."""

    __slots__ = ("first", "next")

    def __init__(self, first: array, nxt: array) -> None:
        self.first = first
        self.next = nxt

    def get(self, pos: int, default: Any = None) -> Any:
        c = self.first[pos] if pos >= 0 else -1
        if c == -1:
            return default
        out = []
        nxt = self.next
        while c != -1:
            out.append(c)
            c = nxt[c]
        return out

    def several(self, pos: int) -> bool:
        """More than one child: without listing them (a hub of 50,000 is asked once per child)."""
        c = self.first[pos] if pos >= 0 else -1
        return c != -1 and self.next[c] != -1


@dataclass
class Tree:
    roots: list[int]
    children: Children  # `children.get(pos)`: a list of positions, or the default
    parent: array  # parent position, -1 for a root (orphans included)


def _ts_cmp(a: float, b: float) -> int:
    # JS sort treats a NaN comparison as "equal"
    d = a - b
    if d != d:
        return 0
    return -1 if d < 0 else (1 if d > 0 else 0)


def build_tree(idx: SessionIndex) -> Tree:
    """pi's getTree: orphans become roots, children sorted by timestamp (stable)."""
    n = len(idx.ids)
    ids, parents, by_id = idx.ids, idx.parents, idx.by_id
    parent = array("l", [-1]) * n
    first = array("l", [-1]) * n
    nxt = array("l", [-1]) * n
    last = array("l", [-1]) * n  # each parent's youngest child so far
    roots: list[int] = []
    branching: list[int] = []
    # every parent seen before its child and no id twice (the common file): no checks needed
    regular = not idx.irregular and len(by_id) == n
    get = by_id.get
    for pos in range(n):
        p = parents[pos]
        if regular:
            if p is None:
                roots.append(pos)
                continue
            ppos = get(p)
        else:
            eid = ids[pos]
            if by_id[eid] != pos:
                continue  # an earlier duplicate: the later entry holds the id
            if p is None or p == eid:
                roots.append(pos)
                continue
            ppos = get(p)
            if ppos is None:
                roots.append(pos)
                continue
        parent[pos] = ppos
        prev = last[ppos]
        if prev == -1:
            first[ppos] = pos
        else:
            if prev == first[ppos]:
                branching.append(ppos)
            nxt[prev] = pos
        last[ppos] = pos
    children = Children(first, nxt)
    if branching:
        _sort_children(idx, children, branching)
    return Tree(roots, children, parent)


def _sort_children(idx: SessionIndex, children: Children, branching: list[int]) -> None:
    """Order the children of entries with several by timestamp, as pi does (a stable sort)."""
    lists = [children.get(p) for p in branching]
    flat = [k for kids in lists for k in kids]
    stamps = dict(zip(flat, idx.timestamps_of(flat), strict=True))
    first, nxt = children.first, children.next
    for p, kids in zip(branching, lists, strict=True):
        keys = {k: js_date_ms(stamps[k]) for k in kids}
        if any(math.isnan(v) for v in keys.values()):
            kids.sort(key=cmp_to_key(lambda a, b, k=keys: _ts_cmp(k[a], k[b])))
        else:
            kids.sort(key=keys.__getitem__)
        first[p] = kids[0]
        for a, b in zip(kids, kids[1:], strict=False):
            nxt[a] = b
        nxt[kids[-1]] = -1


def unreachable(idx: SessionIndex, tree: Tree) -> list[int]:
    """Entries no root reaches: those caught in parentId cycles (pi drops them silently)."""
    seen = _reachable_set(tree)
    ids, by_id = idx.ids, idx.by_id
    return [pos for pos in range(len(ids)) if by_id[ids[pos]] == pos and pos not in seen]


def _reachable_set(tree: Tree) -> set[int]:
    seen: set[int] = set()
    stack = list(tree.roots)
    while stack:
        pos = stack.pop()
        seen.add(pos)
        stack.extend(tree.children.get(pos, ()))
    return seen


def path_to(idx: SessionIndex, leaf: int) -> list[int]:
    """Positions root→leaf following parentId; stops at a missing parent or a cycle."""
    out: list[int] = []
    seen: set[int] = set()
    cur: int | None = leaf
    parents, by_id = idx.parents, idx.by_id
    while cur is not None and cur not in seen:
        seen.add(cur)
        out.append(cur)
        p = parents[cur]
        cur = by_id.get(p) if p else None
    out.reverse()
    return out


def common_ancestor(idx: SessionIndex, a: int | None, b: int | None) -> int | None:
    """Deepest entry on both paths (None when they share no entry)."""
    if a is None or b is None:
        return None
    on_a = set(path_to(idx, a))
    for pos in reversed(path_to(idx, b)):
        if pos in on_a:
            return pos
    return None


def tree_diagnostics(idx: SessionIndex, tree: Tree) -> list[Diagnostic]:
    """Structural problems pi would not report: orphans, cycles, dangling references,
    context edits whose target is missing or not on their own path."""
    out: list[Diagnostic] = []

    def diag(pos: int, sev: str, code: str, msg: str) -> None:
        out.append(Diagnostic(idx.line_of(pos), idx.offsets[pos], idx.lengths[pos], sev, code, msg))

    for pos in tree.roots:
        p = idx.parents[pos]
        if p is not None and p != idx.ids[pos]:
            diag(pos, "warning", "orphan", f"parent {p} does not exist; shown as a root")
    for pos in unreachable(idx, tree):
        diag(pos, "error", "cycle", "entry is part of a parentId cycle; it is not reachable from any root")
    refs = [pos for pos, t in enumerate(idx.types) if t in _REFERRING]
    spans = _euler_spans(tree) if et.CONTEXT_EDIT in idx.types else None
    for pos, entry in zip(refs, idx.read_entries(refs), strict=True):
        t = idx.types[pos]
        ref = entry.get(_REFERRING[t])
        if not isinstance(ref, str):
            continue
        target = idx.by_id.get(ref)
        if t == et.LABEL and target is None:
            diag(pos, "warning", "dangling-label", f"label target {ref} does not exist")
        elif t == et.COMPACTION and target is None and ref != idx.ids[pos]:
            diag(pos, "warning", "dangling-first-kept", f"firstKeptEntryId {ref} does not exist")
        elif t == et.CONTEXT_EDIT and target is None:
            diag(pos, "warning", "dangling-edit-target", f"context edit target {ref} does not exist")
        elif t == et.CONTEXT_EDIT and spans is not None and not _is_ancestor(spans, target, pos):  # type: ignore[arg-type]
            diag(pos, "warning", "edit-target-off-path", f"context edit target {ref} is not on this entry's path")
    return out


_REFERRING = {et.LABEL: "targetId", et.COMPACTION: "firstKeptEntryId", et.CONTEXT_EDIT: "targetId"}


def _euler_spans(tree: Tree) -> dict[int, tuple[int, int]]:
    """Entry and exit times of a depth-first walk: `a` is an ancestor of `b` iff its span holds b's."""
    spans: dict[int, tuple[int, int]] = {}
    clock = 0
    for root in tree.roots:
        stack: list[tuple[int, bool]] = [(root, False)]
        enter: dict[int, int] = {}
        while stack:
            pos, done = stack.pop()
            if done:
                spans[pos] = (enter.pop(pos), clock)
                clock += 1
                continue
            enter[pos] = clock
            clock += 1
            stack.append((pos, True))
            stack.extend((k, False) for k in reversed(tree.children.get(pos, ())))
    return spans


def _is_ancestor(spans: dict[int, tuple[int, int]], a: int, b: int) -> bool:
    sa, sb = spans.get(a), spans.get(b)
    return sa is not None and sb is not None and sa[0] <= sb[0] and sb[1] <= sa[1]
