"""The reader for lines nested deeper than orjson reads: JSON.parse's answers at any depth."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_server.store.decode import jdumps, loads
from pi_server.store.deepjson import KEEP_DEPTH, loads_deep

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(values, st.sampled_from([None, 0, 2]))
def test_reads_what_json_reads_and_keeps_deep_values_as_text(v: object, indent: int | None) -> None:
    text = json.dumps(v, indent=indent)
    assert loads_deep(text) == json.loads(text)
    wrapped = loads_deep("[" * KEEP_DEPTH + text + "]" * KEEP_DEPTH)
    for _ in range(KEEP_DEPTH - 1):
        wrapped = wrapped[0]
    if isinstance(v, (list, dict)):
        assert type(wrapped[0]) is msgspec.Raw and json.loads(bytes(wrapped[0])) == v
    else:
        assert wrapped == [v]


BAD = ["[1,]", '{"a":1,}', "[1 2]", '{"a" 1}', "NaN", "[Infinity]", "01", "[1]x", "{1:2}", '"\\x"', "[", '{"a":']
BAD += ["tru", '{"a"::1}', "[,]", "{,}", "[1,,2]", '{"a":1 "b":2}', '["a":1]', '{"a"}', "[-]", "[1.]", '["\\u12"]']
BAD += ['["\t"]', "[01]", '{"a":1]']


@pytest.mark.parametrize("bad", BAD)
def test_refuses_what_json_parse_refuses_at_any_depth(bad: str) -> None:
    for text in (bad, "[" * KEEP_DEPTH + bad + "]" * KEEP_DEPTH):
        with pytest.raises(json.JSONDecodeError):
            loads_deep(text)


def test_a_line_100000_levels_deep_with_a_lone_surrogate_is_read_and_written_back() -> None:
    depth = 100_000
    line = '{"a":' + "[" * depth + "]" * depth + ',"s":"\\ud83d"}'
    v = loads(line.encode())
    assert v["s"] == "\ud83d"
    assert jdumps(v) == line.encode()
