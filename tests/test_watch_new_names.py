"""A session file added while the server watches is announced and listed, whatever its name and
however its folder came: a new folder made and filled at once, a folder moved in, or a folder
already watched.

A folder made and filled at once is watched only from just after it appeared, so the watcher
never names the files already in it: the server looks in each folder added. A name that is not
UTF-8 stops the watcher (it cannot name the file), so the change that stopped it is never
reported by the watcher: the check made when polling takes over must still announce the file as
added (`pi/sessionsChanged`), or a client that re-lists on that notification never shows it.
Then the store is still followed: a UTF-8 file added, an append to a known file, and the new
file's removal. Real server over stdio, started before the file exists.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from lsp_client import Client, server

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
FIRST = "Un café, s'il vous plaît."
NOT_UTF8 = b"caf\xe9.jsonl"  # copied from a Latin-1 disk


def _session_bytes(first: str) -> bytes:
    lines = [
        {"type": "session", "version": 3, "id": "01a22bc0-0000-7000-8000-00000000cafe",
         "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/home/demo/cafe"},
        {"type": "message", "id": "c0ffee01", "parentId": None, "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": first}], "timestamp": 1796032801000}},
    ]  # fmt: skip
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


def _add_cafe(root: Path, outside: Path, how: str, name: bytes) -> tuple[bytes, str]:
    """Add the file `name` under the root as `how` says; its path as bytes and as the server names it."""
    if how == "existing folder":
        folder = root / "--home-demo-notes--"
    else:
        folder = root / "--home-demo-cafe--"
    raw = os.fsencode(folder) + b"/" + name
    if how == "folder moved in":  # the file written first, its folder then moved under the root
        staged = outside / folder.name
        staged.mkdir()
        with open(os.fsencode(staged) + b"/" + name, "wb") as f:
            f.write(_session_bytes(FIRST))
        os.rename(staged, folder)
    else:
        folder.mkdir(exist_ok=True)
        with open(raw, "wb") as f:
            f.write(_session_bytes(FIRST))
    if name == NOT_UTF8:
        return raw, (folder / "caf").as_uri() + "%E9.jsonl"
    return raw, os.fsdecode(raw)


async def _listed(c: Client) -> dict[str, dict]:
    return {s["session"]: s for s in (await c.call("pi/listSessions", {}))["sessions"]}


@pytest.mark.parametrize("name", [NOT_UTF8, b"cafe.jsonl"], ids=["not utf8", "utf8"])
@pytest.mark.parametrize("how", ["new folder", "existing folder", "folder moved in"])
async def test_a_file_added_while_watching_is_announced(tmp_path: Path, how: str, name: bytes) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    argv = ("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state"))
    async with server(*argv) as c:
        before = await _listed(c)
        await asyncio.sleep(1.0)  # the watcher running for a while, every file indexed
        raw, uri = _add_cafe(root, outside, how, name)
        await c.wait_for("pi/sessionsChanged", lambda p: uri in p["added"], timeout=10)
        if name == NOT_UTF8 and how == "existing folder":  # its creation is named to the watcher: it stops
            assert any("not UTF-8" in m.message for m in c.lc.messages), c.lc.messages
        listed = await _listed(c)
        assert set(listed) - set(before) == {uri}
        assert listed[uri]["firstMessage"] == FIRST
        if name == NOT_UTF8:
            assert listed[uri]["displayPath"].endswith("caf\ufffd.jsonl")
        tree = await c.call("pi/getTree", {"session": uri, "filter": "all"})
        assert tree["leafId"] == "c0ffee01"

        # followed from now on (by polling once the watcher stopped): a UTF-8 file added, an append
        # to a known file, the new file removed
        plain = root / "--home-demo-cafe--" / "2026-12-01T00-00-00-000Z_plain.jsonl"
        plain.parent.mkdir(exist_ok=True)
        plain.write_bytes(_session_bytes("Un thé."))
        await c.wait_for("pi/sessionsChanged", lambda p: str(plain) in p["added"], timeout=10)
        known = next(s for s in before if s.endswith(".jsonl"))
        leaf = before[known]["leafId"]
        entry = {"type": "custom", "id": "feed0001", "parentId": leaf,
                 "timestamp": "2026-12-01T00:00:00.000Z", "customType": "x"}  # fmt: skip
        with open(known, "a") as f:
            f.write(json.dumps(entry) + "\n")
        upd = await c.wait_for("pi/sessionUpdated", lambda p: p["session"] == known, timeout=10)
        assert upd == {"session": known, "appended": ["feed0001"], "leafId": "feed0001", "reset": False}
        os.unlink(raw)
        await c.wait_for("pi/sessionsChanged", lambda p: uri in p["removed"], timeout=10)
        assert uri not in await _listed(c)
        warnings = [m.message for m in c.lc.messages if "watcher" in m.message]
        assert len(warnings) == (name == NOT_UTF8), c.lc.messages  # said once, and only for that name


async def test_the_changes_the_stopped_watcher_never_reported_are_announced(tmp_path: Path) -> None:
    """A file added, one removed and one grown in the batch that stops the watcher are all announced."""
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    argv = ("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state"))
    async with server(*argv) as c:
        before = await _listed(c)
        gone, grown = sorted(before)[:2]
        leaf = (await c.call("pi/getTree", {"session": grown, "filter": "all"}))["leafId"]
        await asyncio.sleep(1.0)  # the watcher running for a while, every file indexed
        entry = {"type": "custom", "id": "feed0001", "parentId": leaf,
                 "timestamp": "2026-12-01T00:00:00.000Z", "customType": "x"}  # fmt: skip
        # within one batch of the watcher (it waits 20 ms for more changes)
        raw, uri = _add_cafe(root, tmp_path, "existing folder", NOT_UTF8)
        os.unlink(gone)
        with open(grown, "a") as f:
            f.write(json.dumps(entry) + "\n")
        await c.wait_for("pi/sessionsChanged", lambda p: uri in p["added"], timeout=10)
        await c.wait_for("pi/sessionsChanged", lambda p: gone in p["removed"], timeout=10)
        upd = await c.wait_for("pi/sessionUpdated", lambda p: p["session"] == grown, timeout=10)
        assert upd == {"session": grown, "appended": ["feed0001"], "leafId": "feed0001", "reset": False}
        assert set(await _listed(c)) == set(before) - {gone} | {uri}
        assert len([m for m in c.lc.messages if "not UTF-8" in m.message]) == 1, c.lc.messages
