"""Mutated session files for the mutation test: one field of one entry set to a value of
another JSON type (or removed), over a base session holding every entry type pi 1.6.0 writes.

A mutation is `(line, path, kind)`: `line` the 0-based line of the base file (0 = header),
`path` the keys (and list indices) down to the field, `kind` one of KINDS. Values are written
as raw JSON text, so nesting deeper than any encoder allows and lone surrogates are exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BASE = Path(__file__).resolve().parent / "fixtures" / "mutations" / "base.jsonl"
CORPUS = BASE.parent / "corpus.json"
DEEP = 10_000
HUGE = 10 << 20
KINDS = ("absent", "null", "bool", "number", "string", "array", "object", "deep", "surrogate")
_MARK = "\x00pi-mutation\x00"
Path_ = tuple[str | int, ...]
Mutation = tuple[int, Path_, str]


def base_lines() -> list[str]:
    return BASE.read_text().splitlines()


def raw_value(kind: str, variant: int = 0) -> str:
    """JSON text of a value of `kind`; `variant` picks among a few of each kind."""
    pick: list[str] = {
        "null": ["null"],
        "bool": ["true", "false"],
        "number": ["0", "-1.5", "1e308", "12345678901234567890", "7"],
        "string": ['""', '"x"', '"ghost"', '"  "', '"\\u2028"'],
        "array": ["[]", '[1,"a",null]', '[{"type":"text","text":"t"}]', "[[]]"],
        "object": ["{}", '{"a":1}', '{"type":"text","text":"t","role":"user"}', '{"__proto__":1}'],
        "deep": [
            "[" * DEEP + "]" * DEEP,
            '{"a":' * DEEP + "1" + "}" * DEEP,
            "[" * 1_000 + "]" * 1_000,  # the depths that once raised RecursionError or were skipped
            '[{"type":"text","text":' + "[" * 5_000 + "]" * 5_000 + "}]",
        ],
        "surrogate": ['"\\ud83d"', '"cut \\udfff\\ud800 here"'],
        "huge": [],
    }[kind]
    if kind == "huge":
        return '"' + "x" * HUGE + '"'
    return pick[variant % len(pick)]


def _walk(obj: Any, path: Path_, depth: int, out: list[Path_]) -> None:
    if depth == 0:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*path, k))
            _walk(v, (*path, k), depth - 1, out)
    elif isinstance(obj, list):
        seen: set[Any] = set()
        for i, v in enumerate(obj):
            kind = v.get("type") if isinstance(v, dict) else type(v).__name__
            if kind in seen:
                continue
            seen.add(kind)
            out.append((*path, i))
            _walk(v, (*path, i), depth - 1, out)


def _shape(entry: dict[str, Any], path: Path_) -> tuple[Any, ...]:
    """What makes two fields 'the same field': entry type, message role, and the path with list
    indices replaced by the type of the block they point at."""
    role = entry.get("message", {}).get("role") if isinstance(entry.get("message"), dict) else None
    out: list[Any] = [entry.get("type"), role]
    node: Any = entry
    for k in path:
        node = node[k]
        out.append(node.get("type", "#") if isinstance(k, int) and isinstance(node, dict) else k)
    return tuple(out)


def fields(depth: int = 4) -> list[tuple[int, Path_]]:
    """Every distinct field of every entry type (and the header) in the base file, first
    occurrence of each."""
    seen: set[tuple[Any, ...]] = set()
    out: list[tuple[int, Path_]] = []
    for n, line in enumerate(base_lines()):
        entry = json.loads(line)
        paths: list[Path_] = []
        _walk(entry, (), depth, paths)
        for p in paths:
            shape = _shape(entry, p)
            if shape not in seen:
                seen.add(shape)
                out.append((n, p))
    return out


def _set(obj: Any, path: Path_, value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    if value is _ABSENT:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


_ABSENT = object()


def mutate(lines: list[str], mutations: list[tuple[int, Path_, str, int]]) -> str:
    """The file text with each (line, path, kind, variant) applied; one mutation a line (a later
    one on a line already mutated is skipped, as is a path that is not there)."""
    out = list(lines)
    done: set[int] = set()
    for n, path, kind, variant in mutations:
        if n in done:
            continue
        entry = json.loads(out[n])
        try:
            _set(entry, path, _ABSENT if kind == "absent" else _MARK)
        except (KeyError, IndexError, TypeError):
            continue
        done.add(n)
        text = json.dumps(entry, separators=(",", ":"))
        out[n] = text if kind == "absent" else text.replace(_MARK_JSON, raw_value(kind, variant), 1)
    return "\n".join(out) + "\n"


_MARK_JSON = json.dumps(_MARK)
