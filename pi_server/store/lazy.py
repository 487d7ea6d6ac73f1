"""Columns of an index restored from the index cache that are built on first use.

The map from id to position of a 100,000-entry session costs more to build than the
rest of a restore; the first tree window after a restart needs none of it (store/cache.py).
"""

from __future__ import annotations

from typing import Any


class LazyColumns:
    """A mixin: `_lazy` maps a column's name to what builds it, for columns not set yet."""

    ids: list[str]
    by_id: dict[str, int]
    _lazy: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        # only reached for an attribute not set: a column still to be built
        lazy = self.__dict__.get("_lazy")
        if lazy and name in lazy:
            value = lazy.pop(name)()
            setattr(self, name, value)
            return value
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def position(self, entry_id: str) -> int | None:
        """`by_id.get(entry_id)`. Until an index restored from the cache has built its map,
        the last entries are looked at first: a leaf is mostly one of them."""
        if "by_id" not in self.__dict__:
            ids = self.ids
            for pos in range(len(ids) - 1, max(-1, len(ids) - 65), -1):  # by_id holds an id's last entry
                if ids[pos] == entry_id:
                    return pos
        return self.by_id.get(entry_id)
