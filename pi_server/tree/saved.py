"""The tree and the default view of one leaf, saved beside the index in the index cache.

Building the tree of a 100,000-entry session (children sorted by the timestamps of
branching entries, read from the file), its pre-order and its visible rows costs about
a hundred milliseconds of Python loops; saved as packed arrays they load in well under
one. They are saved for large sessions only (smaller ones rebuild them in a few
milliseconds) and reused only by the index they were saved with, unchanged since
(store/cache.py hands them over only then).
"""

from __future__ import annotations

from array import array
from typing import Any, NamedTuple

import msgspec

from pi_server.store.packing import pack, unpack
from pi_server.tree.paths import Children, Tree

VIEW_MIN_ENTRIES = 20_000  # smaller sessions are not worth the cache bytes
TITLED_ROWS = 500  # the view's first rows keep their titles: a first window reads no entry
DEFAULT_VIEW = ("default", "", frozenset())  # filter, search, folded of the view an editor opens on
_ARRAYS = ("parent", "first", "next", "roots", "order", "rows")


def _packed(values: array | list[int]) -> bytes:
    # positions fit 32 bits; half the bytes of "l". Converted a slice at a time: one
    # conversion of a million items holds the interpreter lock, every other thread waiting
    out = array("i")
    for i in range(0, len(values), _STEP):
        out.extend(array("i", values[i : i + _STEP]))
    return out.tobytes()


_STEP = 1 << 16


def _unpacked(data: bytes) -> array:
    out = array("i")
    out.frombytes(data)
    return out


def pack_view(tree: Tree, leaf: int | None, order: Any, active: bytearray, lay: Any, titles: dict[int, Any]) -> dict[str, bytes]:
    """The tree, and the default view at `leaf` (`Outline.flat`, the layout and the titles of
    its first rows), as the index cache keeps them."""
    view = {
        "parent": tree.parent,
        "first": tree.children.first,
        "next": tree.children.next,
        "roots": tree.roots,
        "order": order,
        "rows": lay.rows,
    }
    out = {name: _packed(values) for name, values in view.items()}
    out["active"], out["vis"] = bytes(active), bytes(lay.vis)
    out["leaf"] = _packed([-1 if leaf is None else leaf])
    try:
        out["titles"] = pack([list(titles), [list(row) for row in titles.values()]])
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # a timestamp msgpack cannot hold
        out["titles"] = pack([[], []])
    return out


class View(NamedTuple):
    tree: Tree
    leaf: int | None
    order: array  # `Outline.flat(leaf)`
    active: bytearray
    rows: array  # the default layout's
    vis: bytearray
    titles: dict[int, tuple[str, Any]]  # of its first rows


def unpack_view(view: dict[str, bytes], n: int) -> View | None:
    """A saved view of an index of `n` entries; None when it does not fit that index (then
    everything is built anew)."""
    try:
        cols = {name: _unpacked(view[name]) for name in (*_ARRAYS, "leaf")}
        active, vis = bytearray(view["active"]), bytearray(view["vis"])
        positions, rows = unpack(view["titles"])
        titles = {p: (row[0], row[1]) for p, row in zip(positions, rows, strict=True)}
    except (KeyError, TypeError, ValueError, IndexError, msgspec.DecodeError):
        return None
    sized = ("parent", "first", "next", "order")
    if any(len(cols[name]) != n for name in sized) or len(active) != n or len(vis) != n or len(cols["leaf"]) != 1:
        return None
    if len(cols["rows"]) > n or any(not 0 <= p < n for p in cols["roots"]):
        return None
    leaf = cols["leaf"][0]
    if not -1 <= leaf < n or any(type(p) is not int or not 0 <= p < n for p in titles):
        return None
    tree = Tree(list(cols["roots"]), Children(cols["first"], cols["next"]), cols["parent"])
    return View(tree, None if leaf == -1 else leaf, cols["order"], active, cols["rows"], vis, titles)

