"""store/slices.py: work on millions of items a slice at a time gives the same answers as
the one-call forms, and frees what it is asked to free."""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field

from pi_server.store import slices


def test_ascending_matches_the_one_call_check_across_slice_edges() -> None:
    step = slices.STEP
    rng = random.Random(7)
    for n in (0, 1, 2, step - 1, step, step + 1, 3 * step + 5):
        values = list(range(0, 2 * n, 2))
        assert slices.ascending(values)
        for at in {0, n // 2, step - 1, step, n - 1} & set(range(1, n)):
            broken = list(values)
            broken[at] = broken[at - 1]  # equal neighbours are not ascending
            assert not slices.ascending(broken), (n, at)
        if n > 2:
            shuffled = rng.sample(values, n)
            assert slices.ascending(shuffled) == (shuffled == sorted(shuffled) and len(set(shuffled)) == n)


def test_spans_cover_the_range_once_in_order() -> None:
    for n in (0, 5, slices.STEP, 2 * slices.STEP + 3):
        seen = [i for part in slices.spans(n) for i in range(n)[part]]
        assert seen == list(range(n))


def test_dismantle_and_clear_empty_what_they_are_given() -> None:
    values = [object() for _ in range(3 * slices.STEP + 1)]
    slices.dismantle(values)
    assert values == []
    for mapping in ({i: str(i) for i in range(3 * slices.STEP + 1)}, OrderedDict((i, i) for i in range(10))):
        slices.clear(mapping)
        assert len(mapping) == 0


@dataclass
class _Held:
    big: list[int] = field(default_factory=lambda: list(range(2 * slices.STEP)))
    small: list[int] = field(default_factory=lambda: [1, 2, 3])
    table: dict[str, object] = field(default_factory=lambda: {"column": list(range(2 * slices.STEP))})
    count: int = 4


def test_release_empties_large_lists_and_those_a_dict_holds() -> None:
    held = _Held()
    column = held.table["column"]
    slices.release(held)
    assert held.big == [] and column == []
    assert held.small == [1, 2, 3] and held.count == 4  # small ones are left to the collector


def test_mapped_is_map_listed() -> None:
    values = list(range(3 * slices.STEP + 7))
    table = [str(i) for i in values]
    assert slices.mapped(table.__getitem__, values) == list(map(table.__getitem__, values))
    assert slices.mapped(str, b"") == []
