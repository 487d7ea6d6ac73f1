"""Hostile input beyond the store's files: names that are not UTF-8, lone surrogates, numbers
JSON cannot hold. Each case drives real pi-server processes, across a restart where the
index cache is involved."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsp_client import server

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _sample() -> bytes:
    return max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size).read_bytes()


async def test_a_name_that_is_not_utf8_is_listed_and_served(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    folder = root / "--home-x--"
    folder.mkdir(parents=True)
    (folder / "good.jsonl").write_bytes(_sample())
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as f:
        f.write(_sample())
    uri = (folder / "caf").as_uri() + "%E9.jsonl"
    for _run in range(2):  # the second run starts from the index and listing caches
        async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
            for params in ({}, {"query": "orders"}):
                got = await c.call("pi/listSessions", params)
                by = {s["session"]: s for s in got["sessions"]}
                assert set(by) == {str(folder / "good.jsonl"), uri}, params
                assert by[uri]["displayPath"] == str(folder / "caf\ufffd.jsonl")
                assert "displayPath" not in by[str(folder / "good.jsonl")]
            tree = await c.call("pi/getTree", {"session": uri})
            assert tree["total"] > 1
            label = await c.call("pi/setLabel", {"session": uri, "targetId": tree["leafId"], "label": "L"})
            named = await c.call("pi/setSessionName", {"session": uri, "name": "café"})
            switched = await c.call("pi/switchBranch", {"session": uri, "targetId": tree["rows"][0]["id"]})
            assert switched["leafId"] != named["entryId"]
            note = await c.wait_for("pi/sessionUpdated", lambda p: named["entryId"] in p["appended"])
            assert note["session"] == uri
        with open(raw, "rb") as f:
            ids = {json.loads(line).get("id") for line in f}
        assert {label["entryId"], named["entryId"]} <= ids


async def test_a_lone_surrogate_in_the_first_message_is_served_and_cached(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--home-x--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    msg = {"role": "user", "content": [{"type": "text", "text": "X"}], "timestamp": 1}
    entry = {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
    line = json.dumps({**entry, "message": msg}).replace('"X"', '"cut \\ud83d"')
    session = folder / "s.jsonl"
    session.write_text(json.dumps(header) + "\n" + line + "\n")
    state = tmp_path / "state"
    for _run in range(2):
        async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(state)) as c:
            tree = await c.call("pi/getTree", {"session": str(session)})  # the run's first request
            assert [r["id"] for r in tree["rows"]] == ["a0000001"]
            for params in ({}, {"query": "cut"}):
                got = await c.call("pi/listSessions", params)
                assert [s["firstMessage"] for s in got["sessions"]] == ["cut \ud83d"], params
        assert len(list((state / "index").iterdir())) == 1  # the file's index is cached
