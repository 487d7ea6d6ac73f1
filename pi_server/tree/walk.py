"""Laying out a tree view's rows lazily: indent, connector and gutters, row after row.

The rows of a layout are known at once (the visible entries in pre-order), but their
drawing is laid out only as far as a window reads: the first 200 rows of a 100,000-entry
tree cost 200 steps, and paging on continues where the last window stopped.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

STEP = 256  # fewest rows laid out at a time


def active_first(kids: list[int], active: bytearray) -> list[int]:
    """pi's order of siblings in /tree: the one on the active path first, the rest as they are.
    The rows' order (`Outline.flat`) and their drawing (`walk`) must both follow it."""
    on_path = [k for k in kids if active[k]]
    return on_path + [k for k in kids if not active[k]] if on_path else kids


class Column:
    """One per-row value of a layout; reading a row not laid out yet lays out up to it."""

    __slots__ = ("data", "grow")

    def __init__(self, data: Any, grow: Any) -> None:
        self.data = data
        self.grow = grow  # grow(end): lay out the rows before `end`

    def __getitem__(self, row: int) -> int:
        data = self.data
        if row >= len(data):
            self.grow(row + 1)
        return data[row]

    def __len__(self) -> int:
        return len(self.data)


class VisibleTree:
    """The visible entries as a tree of their own, found as far as asked: an entry's visible
    children are its children, and those found below its hidden children, in the layout's
    order (the branch holding the leaf first). Each entry's are found once, on first need."""

    __slots__ = ("_first", "_kids", "_parent", "_vis", "active", "count", "nxt")

    def __init__(self, tree: Any, active: bytearray, vis: bytearray) -> None:
        n = len(tree.parent)
        self._parent = tree.parent
        self._kids = tree.children.get
        self._vis = vis
        self.active = active
        self._first = array("l", [-2]) * n  # -2: not found yet
        self.nxt = array("l", [-1]) * n
        self.count = array("i", [0]) * n

    def ordered(self, kids: list[int]) -> list[int]:
        return active_first(kids, self.active)

    def below(self, kids: list[int]) -> list[int]:
        """The visible entries among `kids` and below the hidden ones, in pre-order."""
        out: list[int] = []
        vis, kids_of = self._vis, self._kids
        stack = kids[::-1]
        while stack:
            k = stack.pop()
            if vis[k]:
                out.append(k)
            else:
                more = kids_of(k)
                if more:
                    stack.extend(self.ordered(more)[::-1])
        return out

    def first(self, pos: int) -> int:
        """The first visible child of a visible entry (-1: none)."""
        c = self._first[pos]
        if c == -2:
            kids = self._kids(pos)
            found = self.below(self.ordered(kids)) if kids else []
            nxt = self.nxt
            for a, b in zip(found, found[1:], strict=False):
                nxt[a] = b
            self.count[pos] = len(found)
            c = self._first[pos] = found[0] if found else -1
        return c

    def kids(self, pos: int) -> int:
        self.first(pos)
        return self.count[pos]

    def vparent(self, pos: int) -> int:
        """The nearest visible entry above a visible one (-1: none)."""
        parent, vis = self._parent, self._vis
        p = parent[pos]
        while p != -1 and not vis[p]:
            p = parent[p]
        return p


class ByPosition:
    """A per-entry value computed on reading (`layout.kids[pos]`, `layout.vparent[pos]`)."""

    __slots__ = ("get",)

    def __init__(self, get: Any) -> None:
        self.get = get

    def __getitem__(self, pos: int) -> int:
        return self.get(pos)


class Walker:
    """Lays out a layout's rows as far as asked, in pre-order of the visible tree (its row order)."""

    __slots__ = ("_more", "_want", "columns", "total")

    def __init__(self, nodes: Any, vt: VisibleTree, vroots: list[int], total: int) -> None:
        self.columns = (array("i"), bytearray(), array("l"))  # indent, connector, gutter node
        self.total = total
        self._want = [0]
        self._more: Iterator[None] | None = walk(self.columns, nodes, vt, vroots, self._want)

    def upto(self, end: int) -> None:
        """Lay out the rows before `end` (at least twice those so far: paging on stays linear)."""
        done = len(self.columns[0])
        if self._more is None or done >= end:
            return
        self._want[0] = max(end, 2 * done, STEP)
        next(self._more, None)
        if len(self.columns[0]) >= self.total:
            self._more = None


    def ahead(self, end: int, rows: int) -> bool:
        """Lay out at most `rows` more rows toward `end` (a step of a long call); True once the
        rows before `end` are laid out."""
        done = len(self.columns[0])
        if self._more is None or done >= end:
            return True
        self._want[0] = min(end, done + rows)
        next(self._more, None)
        if len(self.columns[0]) >= self.total:
            self._more = None
        return self._more is None or len(self.columns[0]) >= end


def walk(
    out: tuple[array, bytearray, array],
    nodes: Any,
    vt: VisibleTree,
    vroots: list[int],
    want: list[int],
) -> Iterator[None]:
    """pi's tree selector's flattening, a row at a time into `out`, pausing once `want[0]`
    rows are laid out."""
    indent, connector, gutters = out
    multiple = len(vroots) > 1
    stack: list[tuple[int, int, bool, bool, bool, int, bool]] = []
    for i in range(len(vroots) - 1, -1, -1):
        stack.append((vroots[i], 1 if multiple else 0, multiple, multiple, i == len(vroots) - 1, -1, multiple))
    add_ind, add_conn, add_gut = indent.append, connector.append, gutters.append
    first, nxt = vt.first, vt.nxt
    while stack:
        pos, ind, just_branched, show_conn, is_last, gut, virtual_child = stack.pop()
        while True:  # follow single-child chains without the stack
            if len(indent) >= want[0]:
                yield
            display = (ind - 1 if ind > 0 else 0) if multiple else ind
            add_ind(display)
            add_gut(gut)
            if show_conn and not virtual_child:
                add_conn(2 if is_last else 1)
                gut = nodes.add(display - 1 if display > 0 else 0, not is_last, gut)  # for the children
            else:
                add_conn(0)
            c = first(pos)
            if c == -1:
                break
            if nxt[c] != -1:
                child_ind = ind + 1
                below = []
                while c != -1:
                    below.append(c)
                    c = nxt[c]
                for i in range(len(below) - 1, -1, -1):
                    stack.append((below[i], child_ind, True, True, i == len(below) - 1, gut, False))
                break
            child_ind = ind + 1 if just_branched and ind > 0 else ind
            pos, ind, just_branched, show_conn, is_last, virtual_child = c, child_ind, False, False, True, False
