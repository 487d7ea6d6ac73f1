"""One served session: its index, its outline, and where its conversation continues."""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import UNSET, UnsetType

from pi_server.live.errors import EntryNotFound
from pi_server.live.leaf import read_at
from pi_server.store.index import SessionIndex
from pi_server.tree.outline import Outline


@dataclass
class LiveSession:
    index: SessionIndex
    outline: Outline
    leaf_id: str | None  # None with explicit=True: before the first entry
    explicit: bool = False  # set by a switch, not by the file
    saved_generation: int = -1  # index generation last written to the index cache
    from_cache: bool = False
    view_saved: bool = False  # the index cache holds the tree and default view of this generation

    @property
    def path(self) -> str:
        return self.index.path

    def entry_pos(self, entry_id: str) -> int:
        pos = self.index.position(entry_id)
        if pos is None:
            raise EntryNotFound(f"no entry {entry_id} in {self.path}")
        return pos

    def read_at(self, asked: str | None | UnsetType = UNSET) -> tuple[str | None, bool]:
        """(leaf, before the first entry) a read asking for `asked` (UNSET: the session's) uses;
        a leaf that is not an entry of the file is EntryNotFound."""
        leaf, before = read_at(self.leaf_id, self.explicit, asked)
        if leaf is not None:
            self.entry_pos(leaf)
        return leaf, before


@dataclass
class Refreshed:
    """What a re-read of a changed file found (the `pi/sessionUpdated` facts)."""

    session: str
    appended: list[str]
    reset: bool
    leaf_id: str | None
