"""A session file whose name is not UTF-8 stops the folder watcher (it cannot name the file):
the append that stopped it still reaches the clients, later ones by polling (or by a listing
that reads them first), and the user is told why in words that fit (not an inotify limit).
Real server over stdio."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from lsp_client import server

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _entry(eid: str, parent: str) -> bytes:
    msg = {"role": "user", "content": [{"type": "text", "text": "Un café"}], "timestamp": 1}
    entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-12-01T00:00:00.000Z", "message": msg}
    return (json.dumps(entry) + "\n").encode()


async def test_appends_to_a_name_that_is_not_utf8_reach_the_client(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--home-x--"
    folder.mkdir(parents=True)
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as f:
        f.write(max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size).read_bytes())
    uri = (folder / "caf").as_uri() + "%E9.jsonl"
    async with server("--sessions-dir", str(folder.parent), "--state-dir", str(tmp_path / "state")) as c:
        tree = await c.call("pi/getTree", {"session": uri})
        with open(raw, "ab") as f:  # another writer (pi): the first change the watcher sees
            f.write(_entry("cafe0001", tree["leafId"]))
        note = await c.wait_for("pi/sessionUpdated", lambda p: "cafe0001" in p["appended"])
        assert note["session"] == uri
        # the watcher stopped before that append was reported: polling now, a change waits up to 1 s
        assert any("watcher" in m.message for m in c.lc.messages)
        with open(raw, "ab") as f:
            f.write(_entry("cafe0002", "cafe0001"))
        # a listing that reads the grown file first reports it, as the watcher would have
        listed = await c.call("pi/listSessions", {})
        assert [s["leafId"] for s in listed["sessions"] if s["session"] == uri] == ["cafe0002"]
        note = await c.wait_for("pi/sessionUpdated", lambda p: "cafe0002" in p["appended"])
        assert note == {"session": uri, "appended": ["cafe0002"], "leafId": "cafe0002", "reset": False}
        warnings = [m.message for m in c.lc.messages if "watcher" in m.message]
        assert len(warnings) == 1, c.lc.messages
        assert "not UTF-8" in warnings[0] and "every 1 s" in warnings[0] and "sysctl" not in warnings[0]


async def _search_until_indexed(c: object, params: dict, files: int) -> dict:
    for _ in range(200):  # the index is built in the background
        got = await c.call("pi/search", params)  # type: ignore[attr-defined]
        if got["pendingFiles"] == 0 and got["indexedFiles"] >= files:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"not indexed: {got}")


async def test_a_name_that_is_not_utf8_is_searched(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--home-x--"
    folder.mkdir(parents=True)
    data = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size).read_bytes()
    (folder / "good.jsonl").write_bytes(data)
    with open(os.fsencode(folder) + b"/caf\xe9.jsonl", "wb") as f:
        f.write(data)
    uri = (folder / "caf").as_uri() + "%E9.jsonl"
    argv = ("--sessions-dir", str(folder.parent), "--state-dir", str(tmp_path / "state"))
    for _run in range(2):  # the second run from the index kept on disk
        async with server(*argv) as c:
            got = await _search_until_indexed(c, {"query": "repository"}, 2)
            by_file = {h["session"] for h in got["hits"]}
            assert by_file == {str(folder / "good.jsonl"), uri}
            only = await c.call("pi/search", {"query": "repository", "sessions": [uri]})
            assert only["hits"] and {h["session"] for h in only["hits"]} == {uri}
            assert only["total"] * 2 == got["total"]
