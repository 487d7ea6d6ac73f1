"""Which leaf a session is read at: the one asked for, else the one kept for the session.

A session's leaf is its file's last entry until a switch moves it; a switch saved while
the file has not grown since still holds when the session is opened again (by the server
or by the command line). A leaf of None is before the first entry when it was chosen,
and the file's last entry (if any) otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

if TYPE_CHECKING:  # a listing imports this module and needs no index
    from pi_server.store.index import SessionIndex


def pointer_holds(saved: dict[str, Any] | None, size: int | None) -> bool:
    """A saved switch holds while the file has the size it had then (it has not grown since)
    and the pointer is an entry id or None."""
    if saved is None or saved.get("size") != size:
        return False
    lid = saved.get("leafId")
    return lid is None or isinstance(lid, str)


def kept_leaf(idx: SessionIndex, saved: dict[str, Any] | None) -> tuple[str | None, bool]:
    """(leaf, chosen by a switch) a session starts at, from its saved pointer (or None)."""
    if saved is not None and pointer_holds(saved, idx.size):
        lid = saved.get("leafId")
        if lid is None or idx.position(lid) is not None:
            return lid, True
    return idx.last_id, False


def read_at(kept: str | None, explicit: bool, asked: str | None | UnsetType = UNSET) -> tuple[str | None, bool]:
    """(leaf, before the first entry) a read uses: the leaf `asked` for (None: before the first
    entry), else (UNSET) the session's kept leaf."""
    if asked is not UNSET:
        return asked, asked is None
    return kept, explicit and kept is None
