"""What the full-text index holds of a tool call (fulltext/extract.py): its name and its
arguments' values, strings as written, so code inside an edit is found as code."""

from __future__ import annotations

import json
from pathlib import Path

from test_fulltext_dict import _index

from pi_server.fulltext import search
from pi_server.fulltext.db import FullText
from pi_server.fulltext.extract import argument_values, entry_text
from pi_server.fulltext.query import parse


def _call(args: object) -> dict[str, object]:
    return {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "edit", "arguments": args}]},
    }


def test_values_in_order_strings_as_written() -> None:
    args = {"path": "src/a.py", "edits": [{"oldText": "def f(x):\n    return x", "newText": "y"}], "n": 3, "ok": True}
    assert argument_values(args) == ["src/a.py", "def f(x):\n    return x", "y", "3", "true"]
    assert entry_text(_call(args)) == "edit\nsrc/a.py\ndef f(x):\n    return x\ny\n3\ntrue"
    deep: list[object] = []
    inner = deep
    for _ in range(5000):  # deeper than Python's recursion limit
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    inner.append("bottom")
    assert argument_values(deep) == ["bottom"]


def test_a_phrase_across_the_lines_of_an_edit_is_found(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"}
    f = tmp_path / "s.jsonl"
    args = {"path": "src/parse.py", "edits": [{"oldText": "def parse_line(x):\n    return Tokens(x)", "newText": ""}]}
    f.write_text(json.dumps(header) + "\n" + json.dumps(_call(args)) + "\n")
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, [f])
    ft.flush()
    got = search.run(ft, parse('"parse_line(x): return tokens"'), 10, 0, None, None, None)
    assert [h["entryId"] for h in got["hits"]] == ["a1"]
    assert search.run(ft, parse("oldtext"), 10, 0, None, None, None)["total"] == 0  # keys are not text
    assert search.run(ft, parse("src/parse.py"), 10, 0, None, None, None)["total"] == 1
    ft.close()
