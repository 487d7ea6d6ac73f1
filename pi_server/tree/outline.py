"""pi's /tree rows: the same rows, order, indent, connectors and gutters as its
tree selector, for each filter, search and set of folded entries.

Layout is computed over the whole visible tree once per (index generation, leaf,
filter, search, folded) and cached, so paging through a 100,000-entry tree
reads only the lines of the rows in the window.
"""

from __future__ import annotations

import time
from array import array
from collections import OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from pi_server.jsutil import js_split_ws
from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.store.records import F_ASSISTANT_TEXT, F_ERRORISH
from pi_server.tree import titles
from pi_server.tree.paths import Tree, build_tree
from pi_server.tree.rowtitles import RowTitles, read_for_titles
from pi_server.tree.saved import DEFAULT_VIEW, TITLED_ROWS, pack_view, unpack_view
from pi_server.tree.walk import ByPosition, Column, VisibleTree, Walker, active_first

FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")
# bookkeeping entries the default and no-tools filters hide (pi 1.6.0 adds context_edit)
_SETTINGS = frozenset((et.LABEL, et.CONTEXT_EDIT, et.CUSTOM, et.MODEL_CHANGE, et.THINKING_LEVEL_CHANGE, et.SESSION_INFO))
_DEFAULT_HIDDEN = _SETTINGS | {et.USAGE}
_OTHER_FILTERS = frozenset(("user-only", "no-tools", "labeled-only", "all"))


@dataclass(slots=True)
class Gutters:
    """Every row's gutters as one shared tree of nodes (a row's list is its node's path up):
    linear in the tree however deep it is, where a list per row costs depth² on a deep tree."""

    position: list[int]
    show: list[bool]
    up: list[int]  # the enclosing node, -1 for none
    size: list[int]  # gutters on the path up, this node included

    def add(self, position: int, show: bool, up: int) -> int:
        self.position.append(position)
        self.show.append(show)
        self.up.append(up)
        self.size.append(1 + (self.size[up] if up != -1 else 0))
        return len(self.up) - 1

    def count(self, node: int) -> int:
        return self.size[node] if node != -1 else 0

    def json(self, node: int) -> list[dict[str, Any]]:
        out = []
        while node != -1:
            out.append({"position": self.position[node], "show": self.show[node]})
            node = self.up[node]
        out.reverse()
        return out


CONNECTORS = ("", "├─", "└─")


@dataclass(slots=True)
class Layout:
    """Compact arrays: a 100,000-entry tree's layout costs a few megabytes, not tens.
    The per-row columns (indent, connectors, gutters) are laid out as far as they are read."""

    rows: array  # positions, in display order
    indent: Column  # display indent per row
    connectors: Column  # index into CONNECTORS per row
    gutters: Column  # gutter node per row (-1: none)
    nodes: Gutters  # those of the rows laid out so far
    kids: ByPosition  # visible children per position
    vparent: ByPosition  # visible parent per position (-1: root; meaningful for visible entries)
    multiple_roots: bool
    vis: bytearray  # a byte per entry: visible in this layout
    walker: Walker | None = None
    _gjson: dict[int, list[dict[str, Any]]] | None = None

    def upto(self, end: int) -> None:
        """Lay out the rows before `end`."""
        if self.walker is not None:
            self.walker.upto(end)

    def gutters_json(self, row: int) -> list[dict[str, Any]]:
        """Rows share gutter nodes with their siblings; build each JSON list once."""
        g = self.gutters[row]
        if self._gjson is None:
            self._gjson = {}
        hit = self._gjson.get(g)
        if hit is None:
            hit = self._gjson[g] = self.nodes.json(g)
        return hit  # shared between rows: rows are read-only results


class Outline:
    """Caches the tree, flattening and layouts of one index."""

    def __init__(self, idx: SessionIndex) -> None:
        self.idx = idx
        self._gen = -1
        self._tree: Tree | None = None
        self._flat: OrderedDict[Any, tuple[Sequence[int], bytearray]] = OrderedDict()
        self._layouts: OrderedDict[Any, Layout] = OrderedDict()
        self._search: list[str] | None = None
        self._rank: tuple[Sequence[int], dict[int, int]] | None = None
        self.titles = RowTitles(idx)
        self.seeded = False  # the tree and default view came from the index cache
        if idx.saved_view is not None:
            self._seed(idx.saved_view)
            idx.saved_view = None  # held here from now on

    def saved_view(self, leaf: int | None) -> dict[str, bytes]:
        """The tree and the default view at `leaf` (laid out if not yet), packed for the index cache."""
        lay = self.layout(leaf, *DEFAULT_VIEW, rows=0)
        order, active = self.flat(leaf)
        first = list(lay.rows[:TITLED_ROWS])
        self.titles.rows(first, lambda call: self.definer(call, order))
        titled = self.titles.cached(first)  # those whose title follows no tree order
        return pack_view(self.tree, leaf, order, active, lay, titled)

    def _seed(self, view: dict[str, bytes]) -> None:
        """Take the tree and default view saved with an unchanged index (tree/saved.py)."""
        got = unpack_view(view, len(self.idx))
        if got is None:
            return
        self._gen, self._tree = self.idx.generation, got.tree
        self._flat[got.leaf] = (got.order, got.active)
        self._layouts[(got.leaf, *DEFAULT_VIEW)] = _compute_layout(got.tree, got.active, got.rows, got.vis)
        self.titles.seed(got.titles)
        self.seeded = True

    def _check(self) -> None:
        if self._gen != self.idx.generation:
            self._gen = self.idx.generation
            self._tree = None
            self._flat.clear()
            self._layouts.clear()
            self._search = None

    @property
    def tree(self) -> Tree:
        self._check()
        if self._tree is None:
            self._tree = build_tree(self.idx)
        return self._tree

    def active_path(self, leaf: int | None) -> bytearray:
        """A mask of the entries from a root down to the leaf (all unset if the leaf is not in
        the tree): a byte an entry, where a set of a long path costs megabytes."""
        tree = self.tree
        out = bytearray(len(tree.parent))
        cur = leaf if leaf is not None else -1
        while cur != -1:
            if out[cur]:
                return bytearray(len(tree.parent))
            out[cur] = 1
            cur = tree.parent[cur]
        return out

    def flat(self, leaf: int | None) -> tuple[Sequence[int], bytearray]:
        """Pre-order of the whole tree, the branch holding the leaf first."""
        tree = self.tree
        hit = self._flat.get(leaf)
        if hit is not None:
            return hit
        active = self.active_path(leaf)
        roots = active_first(tree.roots, active)
        order: list[int] = []
        stack = list(reversed(roots))
        first, nxt, kids_of = tree.children.first, tree.children.next, tree.children.get
        add = order.append
        while stack:
            pos = stack.pop()
            while True:  # down single-child chains without the stack
                add(pos)
                c = first[pos]
                if c == -1:
                    break
                if nxt[c] == -1:
                    pos = c
                    continue
                kids = active_first(kids_of(pos), active)
                stack.extend(reversed(kids[1:]))
                pos = kids[0]
        result = (order, active)
        self._flat[leaf] = result
        if len(self._flat) > 8:
            self._flat.popitem(last=False)
        return result

    def search_texts(self) -> list[str]:
        self._check()
        if self._search is None:
            idx = self.idx
            entries = read_for_titles(idx, list(range(len(idx))))
            self._search = [titles.search_text(e, idx.label_of(idx.ids[p])).lower() for p, e in enumerate(entries)]
        return self._search

    def definer(self, call: str, order: Sequence[int]) -> int:
        """The assistant entry whose call pi shows: the last one in tree order."""
        idx = self.idx
        dups = idx.tool_dups.get(call)
        if not dups:
            return idx.call_pos[call]
        if self._rank is None or self._rank[0] is not order:
            self._rank = (order, {p: i for i, p in enumerate(order)})
        rank = self._rank[1]
        placed = [p for p in dups if p in rank]
        return max(placed, key=rank.__getitem__) if placed else idx.call_pos[call]

    def layout(
        self, leaf: int | None, filt: str, search: str, folded: frozenset[str], rows: int | None = None
    ) -> Layout:
        """The layout, its rows laid out up to `rows` (all of them by default; more on reading)."""
        key = (leaf, filt, search, folded)
        lay = self._layouts.get(key)
        if lay is not None and self._gen == self.idx.generation:
            self._layouts.move_to_end(key)
        else:
            order, active = self.flat(leaf)
            visible = self._visible(order, leaf, filt, search, folded)
            lay = _compute_layout(self.tree, active, visible)
            self._layouts[key] = lay
            if len(self._layouts) > 16:
                self._layouts.popitem(last=False)
        lay.upto(len(lay.rows) if rows is None else rows)
        return lay

    def _visible(self, order: Sequence[int], leaf: int | None, filt: str, search: str, folded: frozenset[str]) -> list[int]:
        idx = self.idx
        types, roles, flags, ids = idx.types, idx.roles, idx.flags, idx.ids
        tokens = js_split_ws(search.lower()) if search else []
        if not tokens and filt not in _OTHER_FILTERS:  # the default view, in one pass
            shown = F_ASSISTANT_TEXT | F_ERRORISH
            out = [
                pos
                for pos in order
                if types[pos] not in _DEFAULT_HIDDEN and (roles[pos] != "assistant" or flags[pos] & shown or pos == leaf)
            ]
        else:
            out = self._filtered(order, leaf, filt, tokens)
        if folded:
            skip: set[str] = set()
            parents = idx.parents
            for pos in order:
                p = parents[pos]
                if p is not None and (p in folded or p in skip):
                    skip.add(ids[pos])
            if skip:
                out = [pos for pos in out if ids[pos] not in skip]
        return out

    def _filtered(self, order: Sequence[int], leaf: int | None, filt: str, tokens: list[str]) -> list[int]:
        idx = self.idx
        types, roles, flags, ids = idx.types, idx.roles, idx.flags, idx.ids
        labels = idx.labels
        texts = self.search_texts() if tokens else None
        out: list[int] = []
        for pos in order:
            t = types[pos]
            if t == et.USAGE:
                continue  # pi 1.6.0 hides usage entries in every filter
            role = roles[pos]
            if t == et.MESSAGE and role == "assistant" and pos != leaf:
                if not flags[pos] & (F_ASSISTANT_TEXT | F_ERRORISH):
                    continue
            if filt == "user-only":
                ok = t == et.MESSAGE and role == "user"
            elif filt == "no-tools":
                ok = t not in _SETTINGS and not (t == et.MESSAGE and role == "toolResult")
            elif filt == "labeled-only":
                ok = ids[pos] in labels
            elif filt == "all":
                ok = True
            else:
                ok = t not in _SETTINGS
            if not ok:
                continue
            if texts is not None:
                text = texts[pos]
                if not all(tok in text for tok in tokens):
                    continue
            out.append(pos)
        return out


def _compute_layout(tree: Tree, active: bytearray, visible: Sequence[int], vis: bytearray | None = None) -> Layout:
    """The layout of the visible entries (in the order of `flat`); their visible parents
    and children, and the rows' drawing, are found as rows are read (tree/walk.py).
    `vis`: their mask, when known (tree/saved.py)."""
    if vis is None:
        vis = bytearray(len(tree.parent))
        for pos in visible:
            vis[pos] = 1
    vt = VisibleTree(tree, active, vis)
    vroots = vt.below(active_first(tree.roots, active))  # in `flat`'s order
    nodes = Gutters([], [], [], [])
    walker = Walker(nodes, vt, vroots, len(visible))
    indent, connectors, gutters = (Column(c, walker.upto) for c in walker.columns)
    return Layout(
        rows=visible if isinstance(visible, array) else array("l", visible),
        indent=indent,
        connectors=connectors,
        gutters=gutters,
        nodes=nodes,
        kids=ByPosition(vt.kids),
        vparent=ByPosition(vt.vparent),
        multiple_roots=len(vroots) > 1,
        vis=vis,
        walker=walker,
    )


def get_tree(
    outline: Outline,
    leaf_id: str | None,
    filt: str = "default",
    search: str = "",
    folded: list[str] | tuple[str, ...] = (),
    offset: int = 0,
    limit: int | None = None,
    shared_gutters: bool = False,
) -> dict[str, Any]:
    """The `pi/getTree` result for a window of rows. `shared_gutters`: rows name their
    innermost gutter in the window's `gutterNodes` instead of carrying the list."""
    idx = outline.idx
    leaf = idx.position(leaf_id) if leaf_id is not None else None
    fset = frozenset(folded)
    lay = outline.layout(leaf, filt, search or "", fset, rows=0)  # rows laid out as the window reads them
    total = len(lay.rows)
    offset = max(0, min(offset, total))
    end = total if limit is None else min(total, offset + max(0, limit))
    window = _within_budget(lay, offset, end) if not shared_gutters else range(offset, end)
    positions = [lay.rows[r] for r in window]
    order, active = outline.flat(leaf)
    texts = outline.titles.rows(positions, lambda call: outline.definer(call, order))
    nodes = _SharedGutters(lay.nodes) if shared_gutters else None
    ids, parents, types, roles, labels = idx.ids, idx.parents, idx.types, idx.roles, idx.labels
    kids, vparent, indent, conns, gnode = lay.kids, lay.vparent, lay.indent, lay.connectors, lay.gutters
    gutter_key, gutter = ("gutters", lay.gutters_json) if nodes is None else ("gutter", lambda r: nodes.local(gnode[r]))
    rows = []
    for r, pos, (title, timestamp) in zip(window, positions, texts, strict=True):
        eid = ids[pos]
        vp = vparent[pos]
        n = kids[pos]
        row: dict[str, Any] = {
            "id": eid,
            "parentId": parents[pos],
            # the parent in the filtered tree, so clients can nest rows without re-deriving pi's layout
            "visibleParentId": ids[vp] if vp != -1 else None,
            "type": types[pos],
            "title": title,
            "indent": indent[r],
            "connector": CONNECTORS[conns[r]],
            gutter_key: gutter(r),
            "onActivePath": active[pos] == 1,
            "isLeaf": pos == leaf,
            "foldable": n > 0 and (vp == -1 or kids[vp] > 1),  # pi: a root or a branch start, with children
            "folded": eid in fset,
            "childCount": n,
            "timestamp": timestamp,
        }
        if roles[pos] is not None:
            row["role"] = roles[pos]
        if eid in labels:
            label = idx.label_of(eid)
            if label is not None:
                row["label"] = label
        rows.append(row)
    out = {"leafId": leaf_id, "total": total, "offset": offset, "rows": rows}
    if nodes is not None:
        out["gutterNodes"] = nodes.table
    return out


def get_tree_steps(
    outline: Outline,
    leaf_id: str | None,
    filt: str,
    search: str,
    folded: list[str] | tuple[str, ...],
    offset: int,
    limit: int | None,
    shared_gutters: bool,
    step_s: float,
) -> Generator[None, None, dict[str, Any]]:
    """`get_tree`, with the rows before the window's end laid out first in steps of about
    `step_s` seconds: a window deep in a million-entry tree lays out hundreds of thousands of
    rows, and requests queued meanwhile run between the steps."""
    leaf = outline.idx.position(leaf_id) if leaf_id is not None else None  # the id map waits for first use
    lay = outline.layout(leaf, filt, search or "", frozenset(folded), rows=0)
    end = len(lay.rows) if limit is None else min(len(lay.rows), max(0, offset) + max(0, limit))
    done = lay.walker is None
    while not done:
        t0 = time.monotonic()
        while not done and time.monotonic() - t0 < step_s:
            done = lay.walker.ahead(end, 1024)  # type: ignore[union-attr]
        if not done:
            yield
    return get_tree(outline, leaf_id, filt, search, folded, offset, limit, shared_gutters)


class _SharedGutters:
    """The gutter nodes a window's rows use, numbered from 0 in the window, enclosing nodes
    first: `[position, show, up]` with `up` the enclosing node's number (-1 for none)."""

    def __init__(self, nodes: Gutters) -> None:
        self.nodes = nodes
        self.table: list[list[Any]] = []
        self._local: dict[int, int] = {-1: -1}

    def local(self, node: int) -> int:
        known = self._local
        hit = known.get(node)
        if hit is not None:
            return hit
        chain = []
        up = self.nodes.up
        while node not in known:
            chain.append(node)
            node = up[node]
        position, show, table = self.nodes.position, self.nodes.show, self.table
        for n in reversed(chain):
            known[n] = len(table)
            table.append([position[n], show[n], known[up[n]]])
        return known[chain[0]]


# The most gutters one answer holds beyond its first MIN_ROWS rows: on a tree thousands of
# levels deep each row carries a gutter per level, so a long window (no `limit`) is cut short
# there and clients page on; a page of up to MIN_ROWS rows is never cut.
MAX_GUTTERS = 100_000
MIN_ROWS = 1_000


def _within_budget(lay: Layout, offset: int, end: int) -> list[int]:
    out: list[int] = []
    total = 0
    count, gutters = lay.nodes.count, lay.gutters
    for r in range(offset, end):
        total += count(gutters[r])
        if total > MAX_GUTTERS and len(out) >= MIN_ROWS:
            break
        out.append(r)
    return out


def render_text(result: dict[str, Any], ids: bool = False) -> list[str]:
    """Rows drawn as pi's /tree draws them (no colours, no cursor); `ids`: each entry's id
    before its label and text."""
    lines = []
    for row in result["rows"]:
        mark = "• " if row["onActivePath"] else ""
        label = f"[{row['label']}] " if "label" in row else ""
        entry_id = f"{row['id']} " if ids else ""
        lines.append(row_prefix(row) + mark + entry_id + label + row["title"])
    return lines


def row_prefix(row: dict[str, Any]) -> str:
    """The gutter and connector characters pi draws before a row, fold marks included."""
    if row["folded"] and not row["connector"]:
        return _gutter_prefix(row) + "⊞ "
    return _gutter_prefix(row)


def _gutter_prefix(row: dict[str, Any]) -> str:
    display = row["indent"]
    conn = row["connector"]
    gut = {g["position"]: g["show"] for g in row["gutters"]}
    chars = []
    for i in range(display * 3):
        level, at = divmod(i, 3)
        if level in gut:
            chars.append(("│" if gut[level] else " ") if at == 0 else " ")
        elif conn and level == display - 1:
            if at == 0:
                chars.append(conn[0])
            elif at == 1:
                chars.append("⊞" if row["folded"] else "⊟" if row["foldable"] else "─")
            else:
                chars.append(" ")
        else:
            chars.append(" ")
    return "".join(chars)
