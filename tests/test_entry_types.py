"""The entry type names: the same set as pi 1.6.0's SessionEntry union (and its header), and the
only spelling of an entry type in the code that compares one."""

from __future__ import annotations

import re
from pathlib import Path

from pi_server.store import entry_types as et

ROOT = Path(__file__).resolve().parent.parent
PI_TYPES = ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "core" / "session-manager.d.ts"


def _pi_entry_types() -> tuple[set[str], str]:
    text = PI_TYPES.read_text()
    union = re.search(r"export type SessionEntry = ([^;]+);", text)
    assert union is not None
    out = set()
    for name in (n.strip() for n in union.group(1).split("|")):
        body = re.search(rf"export interface {name}\b[^{{]*{{(.*?)\n}}", text, re.S)
        assert body is not None, name
        found = re.search(r'type: "(\w+)";', body.group(1))
        assert found is not None, name
        out.add(found.group(1))
    header = re.search(r'export interface SessionHeader \{\s*type: "(\w+)";', text)
    assert header is not None
    return out, header.group(1)


def test_names_are_pis_entry_types() -> None:
    entries, header = _pi_entry_types()
    assert et.ENTRY_TYPES == entries
    assert et.SESSION == header
    names = {v for k, v in vars(et).items() if k.isupper() and isinstance(v, str)}
    assert names == entries | {header}
    assert all(getattr(et, v.upper()) == v for v in names)


def test_no_entry_type_is_compared_as_a_bare_string() -> None:
    alt = "|".join(sorted(et.ENTRY_TYPES | {et.SESSION}, key=len, reverse=True))
    bare = re.compile(rf'(\.get\("type"\)|\btypes\[[^\]]+\]|\b(?:t|etype)\b)\s*(==|!=)\s*"({alt})"')
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "pi_server").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert found == []
