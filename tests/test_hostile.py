"""A hostile store: each bad file beside a valid session, every method answered within 5 s.

One real pi-server serves all the cases at once, so a file that blocked or
crashed the daemon would fail every case after it. The listing must still
list the valid neighbour; a per-file failure is a documented error, never
-32603 and never a hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_client import server
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
LIMIT = 5.0
NO_SYMBOLS: set[str] = set()
DOCUMENTED = {-32001, -32002, -32003, -32602}
READS: list[tuple[str, dict[str, Any]]] = [
    ("pi/getTree", {}),
    ("pi/getTree", {"filter": "all", "search": "a"}),
    ("pi/buildContext", {}),
    ("pi/buildContext", {"format": "llm"}),
    ("pi/buildContext", {"format": "anthropic"}),
    ("pi/buildContext", {"format": "openai"}),
]


def _valid() -> list[str]:
    big = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return big.read_text().splitlines()


def _entry(lines: list[str], **over: Any) -> str:
    last = json.loads(lines[-1])
    return json.dumps(
        {"type": "message", "id": "ffff0001", "parentId": last["id"], "timestamp": last["timestamp"]} | over
    )


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _write(p: Path, lines: list[str]) -> None:
    p.write_text("\n".join(lines) + "\n")


def _deep(p: Path, v: list[str]) -> None:
    depth = 100_000
    deep = '{"type":"message","id":"deep0001","parentId":null,"message":' + "[" * depth + "]" * depth + "}"
    _write(p, [*v, deep])


def _huge_line(p: Path, v: list[str]) -> None:
    with open(p, "w") as f:
        f.write(v[0] + "\n")
        f.write('{"type":"custom","id":"huge0001","parentId":null,"data":"' + "x" * (70 << 20) + '"}\n')
        f.write("\n".join(v[1:]) + "\n")


def _odd_types(p: Path, v: list[str]) -> None:
    tool = {"role": "toolResult", "toolCallId": {"x": 1}, "toolName": ["bash"], "content": [], "timestamp": 2}
    call = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": {"o": 1}, "name": 5, "arguments": "str"}],
        "stopReason": 7,
        "timestamp": "x",
    }
    extra = [
        json.dumps({"type": 5, "id": "t0000001", "parentId": json.loads(v[-1])["id"]}),
        json.dumps({"type": "message", "id": "t0000002", "parentId": "t0000001", "message": call}),
        json.dumps({"type": "message", "id": "t0000003", "parentId": "t0000002", "message": tool}),
        json.dumps({"type": "message", "id": 12, "parentId": {"a": 1}, "message": "text"}),
        json.dumps({"type": "label", "id": "t0000004", "parentId": "t0000003", "targetId": 3, "label": {"a": 1}}),
        json.dumps(
            {"type": "message", "id": "t0000005", "parentId": "t0000003", "message": {"role": 1, "content": {}}}
        ),
        json.dumps(
            {"type": "compaction", "id": "t0000006", "parentId": "t0000005", "summary": 3, "firstKeptEntryId": 4}
        ),
        json.dumps({"type": "session_info", "id": "t0000007", "parentId": "t0000006", "name": ["n"]}),
    ]
    _write(p, [*v, *extra])


def _surrogate(p: Path, v: list[str]) -> None:
    line = _entry(v, message=_user("cut here: X")).replace("cut here: X", "cut here: \\ud83d")
    _write(p, [*v, line])


def _chain(p: Path, v: list[str], n: int = 20_000, comb: bool = False) -> None:
    """A long chain; with `comb`, a side branch at every level (a tree as deep as it is wide)."""
    out = [v[0]]
    parent = None
    for i in range(n):
        eid = f"c{i:07d}"
        out.append(json.dumps({"type": "message", "id": eid, "parentId": parent, "message": _user(f"m{i}")}))
        if comb:
            out.append(json.dumps({"type": "message", "id": f"s{i:07d}", "parentId": parent, "message": _user("s")}))
        parent = eid
    _write(p, out)


def _named_ids(p: Path, v: list[str]) -> None:
    out = [v[0]]
    parent = None
    for eid in ("__proto__", "constructor", "toString", "hasOwnProperty"):
        out.append(json.dumps({"type": "message", "id": eid, "parentId": parent, "message": _user(eid)}))
        parent = eid
    out.append(json.dumps({"type": "message", "id": "selfpar1", "parentId": "selfpar1", "message": _user("me")}))
    out.append(
        json.dumps({"type": "label", "id": "lab00001", "parentId": parent, "targetId": "lab00001", "label": "x"})
    )
    _write(p, out)


CASES: dict[str, Callable[[Path, list[str]], None]] = {
    "newlines-only": lambda p, v: p.write_bytes(b"\n" * (5 << 20)),
    "cr-only": lambda p, v: p.write_bytes("\r".join(v).encode()),
    "utf16": lambda p, v: p.write_bytes(("\n".join(v) + "\n").encode("utf-16")),
    "header-10mb": lambda p, v: _write(p, [v[0][:-1] + ',"pad":"' + "p" * (10 << 20) + '"}', *v[1:]]),
    "named-ids": _named_ids,
    "fifo": lambda p, v: os.mkfifo(p),
    "sparse-10g": lambda p, v: open(p, "wb").truncate(10 << 30),
    "zeros-after-header": lambda p, v: p.write_bytes(v[0].encode() + b"\n" + b"\0" * (3 << 20)),
    "deep-line": _deep,
    "huge-line": _huge_line,
    "odd-types": _odd_types,
    "lone-surrogate": _surrogate,
    "symlink-dev-zero": lambda p, v: p.symlink_to("/dev/zero"),
    "symlink-dev-urandom": lambda p, v: p.symlink_to("/dev/urandom"),
    "symlink-loop": lambda p, v: p.symlink_to(p),
    "directory": lambda p, v: p.mkdir(),
    "empty": lambda p, v: p.write_bytes(b""),
    "binary": lambda p, v: p.write_bytes(bytes(range(256)) * 64),
    "header-only-no-newline": lambda p, v: p.write_text(v[0]),
    "bom-crlf": lambda p, v: p.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(v).encode() + b"\r\n"),
    "not-utf8": lambda p, v: p.write_bytes(
        ("\n".join(v) + "\n" + _entry(v, message=_user("Q")) + "\n").encode().replace(b'"Q"', b'"\xff\xfe"')
    ),
    "header-not-object": lambda p, v: _write(p, ["[1,2]", *v[1:]]),
    "chain-20k": _chain,
    "comb-3000": lambda p, v: _chain(p, v, 3_000, comb=True),
    "duplicate-and-cycle": lambda p, v: _write(
        p,
        [
            v[0],
            json.dumps({"type": "message", "id": "c1", "parentId": "c2", "message": _user("a")}),
            json.dumps({"type": "message", "id": "c2", "parentId": "c1", "message": _user("b")}),
            json.dumps({"type": "message", "id": "c2", "parentId": "c2", "message": _user("c")}),
        ],
    ),
}


async def _call(c: Any, method: str, params: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", await asyncio.wait_for(c.lc.protocol.send_request_async(method, params), LIMIT)
    except JsonRpcException as e:
        return "error", e.code
    except TimeoutError:
        return "error", "timeout"


async def _symbols(c: Any, path: Path) -> tuple[str, Any]:
    uri = path.as_uri()
    try:
        got = await asyncio.wait_for(
            c.lc.text_document_document_symbol_async(lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))), LIMIT
        )
        return "ok", got
    except JsonRpcException as e:
        return "error", e.code
    except TimeoutError:
        return "error", "timeout"


async def test_hostile_store(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    valid = root / "--home-valid--" / "good.jsonl"
    valid.parent.mkdir(parents=True)
    v = _valid()
    _write(valid, v)
    outside = tmp_path / "outside.jsonl"
    _write(outside, v)
    made: dict[str, Path] = {}
    for name, make in CASES.items():
        d = root / f"--{name}--"
        d.mkdir()
        make(d / "x.jsonl", v)
        made[name] = d / "x.jsonl"
    (root / "--symlink-out--").mkdir()
    (root / "--symlink-out--" / "x.jsonl").symlink_to(outside)
    made["symlink-out"] = root / "--symlink-out--" / "x.jsonl"
    failures: list[str] = []
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        for params in ({}, {"query": "orders"}):
            kind, got = await _call(c, "pi/listSessions", params)
            assert kind == "ok", (params, got)
            assert str(valid) in {s["session"] for s in got["sessions"]}
        for name, path in made.items():
            for method, extra in READS:
                kind, got = await _call(c, method, {"session": str(path), **extra})
                if kind == "error" and got not in DOCUMENTED:
                    failures.append(f"{name} {method} {extra}: {got}")
            if name in NO_SYMBOLS:
                continue
            kind, got = await _symbols(c, path)
            if kind == "error" and got not in DOCUMENTED:
                failures.append(f"{name} documentSymbol: {got}")
        for bad in ("x\x00.jsonl", str(root / "--fifo--" / "x\x00.jsonl")):
            for method in ("pi/getTree", "pi/buildContext", "pi/getEntry", "pi/setLabel"):
                kind, got = await _call(c, method, {"session": bad, "id": "x", "targetId": "x", "label": "l"})
                assert kind == "error" and got in DOCUMENTED, (bad, method, got)
            kind, got = await _symbols(c, Path(bad).absolute())
            assert kind == "ok" and got == [], got
        # the entry with a lone surrogate is kept, as pi's JSON.parse keeps it
        kind, tree = await _call(c, "pi/getTree", {"session": str(made["lone-surrogate"]), "filter": "all"})
        assert kind == "ok" and "ffff0001" in {r["id"] for r in tree["rows"]}
        kind, entry = await _call(c, "pi/getEntry", {"session": str(made["lone-surrogate"]), "id": "ffff0001"})
        assert kind == "ok" and entry["entry"]["message"]["content"][0]["text"] == "cut here: \ud83d"
        # the entries after a line too long to index are indexed
        kind, tree = await _call(c, "pi/getTree", {"session": str(made["huge-line"]), "filter": "all"})
        kind2, whole = await _call(c, "pi/getTree", {"session": str(valid), "filter": "all"})
        assert kind == kind2 == "ok" and [r["id"] for r in tree["rows"]] == [r["id"] for r in whole["rows"]]
        # a served file truncated to nothing leaves the listing, which still answers
        valid.write_bytes(b"")
        await asyncio.sleep(0.3)
        kind, got = await _call(c, "pi/listSessions", {})
        assert kind == "ok" and str(valid) not in {s["session"] for s in got["sessions"]}
        _write(valid, v)
        await asyncio.sleep(0.3)
        kind, got = await _call(c, "pi/listSessions", {})
        assert kind == "ok" and str(valid) in {s["session"] for s in got["sessions"]}
    assert not failures, failures
    shutil.rmtree(root)


def test_mid_file_rewrite_is_seen_live_and_through_the_cache(tmp_path: Path) -> None:
    from pi_server.store.cache import IndexCache
    from pi_server.store.index import SessionIndex

    v = _valid()
    f = tmp_path / "s.jsonl"
    _write(f, v[:12])
    idx = SessionIndex.open(str(f))
    cache = IndexCache(tmp_path / "state")
    cache.save(idx)
    # an editor saves it: same inode and header, a middle line rewritten, the file grown
    with open(f, "r+") as fh:
        fh.write("\n".join([v[0], *v[1:5], *v[6:12], *v[12:20]]) + "\n")
    appended, reset = idx.refresh()
    fresh = SessionIndex.open(str(f))
    assert reset and idx.ids == fresh.ids and list(idx.offsets) == list(fresh.offsets)
    got = cache.load(str(f))  # None (rebuilt) or brought up to date: never the stale prefix
    assert got is None or (got.ids == fresh.ids and list(got.lines) == list(fresh.lines))
    # a rewrite that keeps a newline at the old end: only the digest of the indexed bytes tells
    _write(f, v[:12])
    cache.save(SessionIndex.open(str(f)))
    lines = v[:12]
    old_id = json.loads(lines[11])["id"]
    lines[11] = lines[11].replace(old_id, "z" * len(old_id), 1)  # same length, new id
    with open(f, "r+") as fh:
        fh.write("\n".join([*lines, *v[12:20]]) + "\n")
    got = cache.load(str(f))
    fresh = SessionIndex.open(str(f))
    assert got is not None and got.ids == fresh.ids and list(got.offsets) == list(fresh.offsets)


def test_line_too_long_is_skipped_with_a_diagnostic(tmp_path: Path, monkeypatch: Any) -> None:
    from pi_server.store import scan
    from pi_server.store.index import SessionIndex

    monkeypatch.setattr(scan, "MAX_LINE", 1 << 20)
    monkeypatch.setattr(scan, "CHUNK", 64 << 10)
    v = _valid()
    f = tmp_path / "s.jsonl"
    _write(f, [v[0], '{"type":"custom","id":"x","data":"' + "y" * (3 << 20) + '"}', *v[1:]])
    idx = SessionIndex.open(str(f))
    assert len(idx) == len(v) - 1 and [d.code for d in idx.diagnostics] == ["line-too-long"]
    assert idx.line_of(0) == 2  # line numbers count the skipped line
    # an unfinished huge tail is skipped to its end, then what follows it is read
    with open(f, "ab") as fh:
        fh.write(b"z" * (2 << 20))
    idx.refresh()
    assert not idx.partial_tail and idx.size == f.stat().st_size
    with open(f, "ab") as fh:
        fh.write(b"\n" + _entry(v, message=_user("after")).encode() + b"\n")
    appended, reset = idx.refresh()
    assert appended == ["ffff0001"] and not reset


def test_deep_comb_gutters_are_shared_and_windows_cut_at_the_gutter_budget(tmp_path: Path) -> None:
    from pi_server.store.index import SessionIndex
    from pi_server.tree import outline

    f = tmp_path / "comb.jsonl"
    _chain(f, _valid(), 1_000, comb=True)
    out = outline.Outline(SessionIndex.open(str(f)))
    lay = out.layout(None, "all", "", frozenset())
    assert len(lay.nodes.up) < 2 * len(lay.rows)  # one gutter node per branch, not one per level per row
    whole = outline.get_tree(out, None, "all")
    # the first 1,000 rows (the chain, 0 to 999 gutters each) are past the budget: cut right there
    assert whole["total"] == 2_000 and len(whole["rows"]) == outline.MIN_ROWS
    assert sum(len(r["gutters"]) for r in whole["rows"]) > outline.MAX_GUTTERS
    deepest = max(whole["rows"], key=lambda r: r["indent"])
    assert [g["position"] for g in deepest["gutters"]] == list(range(len(deepest["gutters"])))
    # a client pages on from where the window was cut and reaches every row
    seen, offset = 0, 0
    while offset < whole["total"]:
        page = outline.get_tree(out, None, "all", offset=offset)
        assert page["rows"]
        seen += len(page["rows"])
        offset += len(page["rows"])
    assert seen == whole["total"] and len(whole["rows"]) < whole["total"]
