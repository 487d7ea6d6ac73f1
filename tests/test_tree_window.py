"""Windows of /tree rows: the shared-gutter form is exactly the per-row form, and titles kept
between windows are the titles read afresh (pi's rows are checked against pi's own in
test_oracle_outline.py and test_oracle16.py; these tie the other forms to those)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsp_client import server

from pi_server.store.index import SessionIndex
from pi_server.tree import outline
from pi_server.tree.outline import FILTERS, Outline, get_tree

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    [*(ROOT / "tests" / "fixtures").rglob("*.jsonl"), *(ROOT / "pi_server" / "samples").rglob("*.jsonl")],
    key=lambda p: p.name,
)
FILES = [p for p in FILES if p.parent.name != "recorded"]  # those are HTTP recordings


def expand(result: dict[str, Any]) -> dict[str, Any]:
    """The shared form turned back into gutters per row, as the editors do; it checks that a
    node's enclosing node comes before it (so one pass in order suffices)."""
    lists: list[list[dict[str, Any]]] = []
    for i, (position, show, up) in enumerate(result["gutterNodes"]):
        assert -1 <= up < i and type(show) is bool and type(position) is int
        lists.append([*(lists[up] if up != -1 else []), {"position": position, "show": show}])
    rows = []
    for row in result["rows"]:
        row = dict(row)
        g = row.pop("gutter")
        row["gutters"] = lists[g] if g != -1 else []
        rows.append(row)
    out = {k: v for k, v in result.items() if k != "gutterNodes"}
    out["rows"] = rows
    return out


def _same_keys_in_order(shared: dict[str, Any], plain: dict[str, Any]) -> None:
    for a, b in zip(shared["rows"], plain["rows"], strict=True):
        assert [k if k != "gutter" else "gutters" for k in a] == list(b)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_shared_gutters_are_the_rows_gutters(path: Path) -> None:
    idx = SessionIndex.open(str(path))
    out = Outline(idx)
    leaves = [idx.last_id, idx.ids[len(idx) // 2] if len(idx) else None]
    for leaf in leaves:
        for filt in FILTERS:
            for offset, limit in ((0, None), (1, 3), (5, 40)):
                plain = get_tree(Outline(idx), leaf, filt, "", (), offset, limit)
                shared = get_tree(out, leaf, filt, "", (), offset, limit, shared_gutters=True)
                _same_keys_in_order(shared, plain)
                assert expand(shared) == plain, (path.name, leaf, filt, offset)
                used = {r["gutter"] for r in shared["rows"]} - {-1}
                ups = {n[2] for n in shared["gutterNodes"]} - {-1}
                assert set(range(len(shared["gutterNodes"]))) == used | ups  # only what the window uses


def _comb(p: Path, n: int) -> None:
    """A side branch at every level: a tree as deep as it is wide."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"})]
    parent = None
    for i in range(n):
        for eid in (f"c{i:07d}", f"s{i:07d}"):
            msg = {"role": "user", "content": eid, "timestamp": 0}
            lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent, "message": msg}))
        parent = f"c{i:07d}"
    p.write_text("\n".join(lines) + "\n")


def test_deep_comb_comes_whole_in_one_shared_window(tmp_path: Path) -> None:
    f = tmp_path / "comb.jsonl"
    _comb(f, 1_000)
    out = Outline(SessionIndex.open(str(f)))
    shared = get_tree(out, None, "all", shared_gutters=True)
    # the per-row form cuts this window at the gutter budget; the shared one is linear: never cut
    assert shared["total"] == len(shared["rows"]) == 2_000
    assert len(shared["gutterNodes"]) < 2 * len(shared["rows"])
    pages, offset = [], 0
    while offset < shared["total"]:
        page = get_tree(out, None, "all", offset=offset)
        pages += page["rows"]
        offset += len(page["rows"])
    assert len(pages) == 2_000 and sum(len(r["gutters"]) for r in pages) > outline.MAX_GUTTERS
    assert expand(shared)["rows"] == pages


def _tool_session(p: Path) -> None:
    """One tool call id defined twice, on two branches: pi titles its result after the
    definition last in tree order, which moves with the leaf."""
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}

    def call(eid: str, path: str) -> dict[str, Any]:
        block = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": path}}
        msg = {"role": "assistant", "content": [block], "stopReason": "toolUse", "timestamp": 0}
        return {"type": "message", "id": eid, "parentId": "u1", "message": msg}

    result = {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": [{"type": "text", "text": "x"}]}
    lines = [
        head,
        {"type": "message", "id": "u1", "parentId": None, "message": {"role": "user", "content": "go", "timestamp": 0}},
        call("a1", "/first"),
        {"type": "message", "id": "r1", "parentId": "a1", "message": {**result, "timestamp": 0}},
        call("a2", "/second"),
    ]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_titles_kept_between_windows_are_the_fresh_ones(tmp_path: Path) -> None:
    f = tmp_path / "tools.jsonl"
    _tool_session(f)
    idx = SessionIndex.open(str(f))
    out = Outline(idx)
    titles = {}
    for leaf in ("r1", "a2", "r1", "a2"):
        rows = get_tree(out, leaf, "all")["rows"]
        assert rows == get_tree(Outline(idx), leaf, "all")["rows"]
        titles[leaf] = next(r["title"] for r in rows if r["id"] == "r1")
    assert titles == {"r1": "[read: /second]", "a2": "[read: /first]"}
    # an appended third definition, a last child of the root: last in tree order at leaf r1
    with open(f, "a") as fh:
        block = {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls"}}
        msg = {"role": "assistant", "content": [block], "timestamp": 0}
        fh.write(json.dumps({"type": "message", "id": "a3", "parentId": "u1", "message": msg}) + "\n")
    idx.refresh()
    rows = get_tree(out, "r1", "all")["rows"]
    assert rows == get_tree(Outline(idx), "r1", "all")["rows"]
    assert next(r["title"] for r in rows if r["id"] == "r1") == "[bash: ls]"


@pytest.mark.parametrize("path", [p for p in FILES if p.stat().st_size > 50_000], ids=lambda p: p.name)
def test_windows_in_any_order_read_as_afresh(path: Path) -> None:
    idx = SessionIndex.open(str(path))
    out = Outline(idx)
    total = get_tree(out, idx.last_id, "all", limit=0)["total"]
    rnd = random.Random(3)
    for _ in range(30):
        offset, limit = rnd.randrange(total), rnd.choice((1, 7, 50))
        got = get_tree(out, idx.last_id, "all", "", (), offset, limit, shared_gutters=rnd.random() < 0.5)
        fresh = get_tree(Outline(idx), idx.last_id, "all", "", (), offset, limit, shared_gutters="gutterNodes" in got)
        assert got == fresh


async def test_shared_gutters_over_the_wire(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--p--"
    root.mkdir(parents=True)
    big = max(FILES, key=lambda p: p.stat().st_size)
    shutil.copyfile(big, root / big.name)
    session = str(root / big.name)
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        assert (await c.call("pi/getTree", {"session": session, "filter": "all", "limit": 3}))["total"] > 30
        for filt in FILTERS:
            params = {"session": session, "filter": filt, "offset": 2, "limit": 30}
            shared = await c.call("pi/getTree", {**params, "sharedGutters": True})
            plain = await c.call("pi/getTree", params)
            assert "gutterNodes" not in plain and all("gutters" in r for r in plain["rows"])
            assert expand(shared) == plain


@pytest.mark.parametrize("home", ["/home/dev", "/home/dev/", "/", "//srv//u/", "/home/dev/../dev2", "rel/home"])
def test_home_shortening_keeps_nodes_relative_paths(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi 1.6.0's shortenHomePath is node's path.relative under a resolved HOME; the kept
    resolution of HOME must give what posixpath.relpath gives, HOME changes included."""
    import os
    import posixpath

    from pi_server.tree import titles

    monkeypatch.setenv("HOME", home)
    hkey = titles._resolve(home if home.startswith("/") else os.path.join(os.getcwd(), home))
    for p in ("/home/dev", "/home/dev/a/b.py", "/home/dev/./a/../c", "/home/devx/a", "//home//dev//z", "/",
              "/srv/u/x", "/home/dev2/y", "rel/x", os.path.join(os.getcwd(), "rel/home/f")):
        key = titles._resolve(p) if p.startswith("/") else p
        under = hkey if hkey.endswith("/") else hkey + "/"
        if not p.startswith("/") or (key != hkey and not key.startswith(under)):
            want = p
        else:
            rel = posixpath.relpath(key, hkey)
            want = "~" if rel == "." else "~/" + rel
        assert titles._short(p) == want, (home, p)


ARGS = [
    '{"path": "/home/dev/a.py", "offset": "5", "limit": null}',
    '{"path": 7, "file_path": "/x"}',
    '{"file_path": "", "path": "", "offset": 3, "limit": 2}',
    '{"path": "/a", "path": "/b"}',
    '{"command": "ls\\n -la\\t/tmp   ", "timeout": 3}',
    '{"pattern": ["a", null], "path": {"x": 1}}',
    '{"oldText": "' + "x" * 5000 + '", "path": "/home/dev/../dev/./e.py", "newText": "y"}',
    "[1, 2]",
    '"a string"',
    "null",
    "3",
    '{"a": ' * 40 + "1" + "}" * 40,
]
NAMES = ["read", "write", "edit", "bash", "grep", "find", "ls", "other", None, ["read"], 5]


def test_tool_titles_read_from_the_fields_equal_the_whole_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The known tools' arguments are decoded to the fields their titles read; the titles
    equal those of the whole arguments (titles.tool_call_title is pi's, see the oracles)."""
    from pi_server.tree import titles

    monkeypatch.setenv("HOME", "/home/dev")
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    lines, want, parent = [json.dumps(head)], {}, None
    for i, (name, args) in enumerate((n, a) for n in NAMES for a in ARGS):
        call = f'{{"type": "toolCall", "id": "t{i}", "name": {json.dumps(name)}, "arguments": {args}}}'
        msg = f'{{"role": "assistant", "content": [{{"type": "thinking", "thinking": "hm"}}, {call}], "timestamp": 0}}'
        lines.append(f'{{"type": "message", "id": "a{i:05d}", "parentId": {json.dumps(parent)}, "message": {msg}}}')
        result = {"role": "toolResult", "toolCallId": f"t{i}", "toolName": "x", "content": [], "timestamp": 0}
        lines.append(json.dumps({"type": "message", "id": f"r{i:05d}", "parentId": f"a{i:05d}", "message": result}))
        parent = f"r{i:05d}"
        want[parent] = titles.tool_call_title(name, json.loads(args))
    f = tmp_path / "args.jsonl"
    f.write_text("\n".join(lines) + "\n")
    rows = get_tree(Outline(SessionIndex.open(str(f))), None, "all")["rows"]
    got = {r["id"]: r["title"] for r in rows if r["id"] in want}
    assert got == want
