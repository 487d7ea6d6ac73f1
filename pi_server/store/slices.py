"""Millions of items handled a slice at a time.

One C call over a million items (a sort, a copy, a list or dict freed at once) holds the
interpreter lock for 20-130 ms, and every other thread of the daemon (the one answering
requests among them) waits that long. A loop over slices gives the lock up between them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import lt
from typing import Any

STEP = 4096  # items per slice: ~0.1-0.5 ms each (a thread waiting for the lock waits that long)


def spans(n: int, step: int = STEP) -> Iterator[slice]:
    """The slices covering `range(n)`, in order."""
    for start in range(0, n, step):
        yield slice(start, start + step)


def mapped(fn: Callable[[Any], Any], values: Sequence[Any]) -> list[Any]:
    """`list(map(fn, values))`, a slice at a time (`fn` a C function: each slice is one call)."""
    out: list[Any] = []
    for part in spans(len(values)):
        out += map(fn, values[part])
    return out


def dismantle(values: list[Any]) -> None:
    """Empty a list, freeing its items a slice at a time."""
    while values:
        del values[-STEP:]


def clear(mapping: dict[Any, Any]) -> None:
    """Empty a dict, freeing its items a slice at a time."""
    if len(mapping) <= STEP:
        mapping.clear()
        return
    keys = list(mapping)
    pop = mapping.pop
    for part in spans(len(keys)):
        for key in keys[part]:
            pop(key, None)
    dismantle(keys)


def release(obj: object) -> None:
    """Free what a large object holds (its lists and dicts, and theirs one level down), a
    slice at a time: a million-entry index freed at once holds the lock 0.1 s and more."""
    release_values(vars(obj))


def release_values(mapping: dict[str, Any]) -> None:
    """`release` for the values of a dict."""
    for value in list(mapping.values()):
        _release_value(value, 1)


def _release_value(value: Any, depth: int) -> None:
    if type(value) is list and len(value) > STEP:
        dismantle(value)
    elif isinstance(value, dict):
        if depth > 0:
            for inner in list(value.values()):
                _release_value(inner, depth - 1)
        if len(value) > STEP:
            clear(value)


def ascending(values: list[int]) -> bool:
    """Whether each item is below the next."""
    n = len(values)
    for part in spans(n):
        stop = min(part.stop + 1, n)
        if not all(map(lt, values[part.start : stop - 1], values[part.start + 1 : stop])):
            return False
    return True
