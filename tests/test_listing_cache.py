"""The listing cache: a restart lists unchanged files from one file in the state dir, and the
answer always equals a listing that reads every file afresh (pi's SessionInfo, newest first):
files changed since are described again, new files listed, deleted ones gone, and a torn,
corrupt or foreign cache file is rebuilt, never trusted, even with two servers sharing it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Generator
from pathlib import Path
from typing import Any

import msgspec
from lsp_client import server

from pi_server.live.registry import Registry
from pi_server.server.options import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES
from pi_server.store.discovery import list_sessions
from pi_server.store.state import StateDir

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


LIMITS = {"busy_timeout": DEFAULT_BUSY_TIMEOUT, "max_live_entries": DEFAULT_MAX_LIVE_ENTRIES}


def drain(gen: Generator[None, None, Any]) -> Any:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def listing(reg: Registry) -> tuple[list[dict], list[str]]:
    """As the server lists: the known files first; files never indexed are then indexed (here
    on the spot, as when no worker process can start) and the whole store listed again."""
    listed, missing = drain(reg.list_known_steps(None))
    if missing:
        listed = drain(reg.list_steps())
    return listed, missing


def store(tmp: Path, copies: int = 4) -> Path:
    """The bundled samples, several times over (each copy a session of its own id)."""
    root = tmp / "sessions"
    for i in range(copies):
        for src in SAMPLES.rglob("*.jsonl"):
            dst = root / src.parent.name / f"{i:02d}{src.name[2:]}"
            dst.parent.mkdir(parents=True, exist_ok=True)
            lines = src.read_text().splitlines(keepends=True)
            header = json.loads(lines[0])
            header["id"] = f"{header['id'][:-2]}{i:02d}"
            dst.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    return root


def restart(root: Path, state: Path) -> Registry:
    """A new server on the same state dir, its cache read from disk."""
    return Registry(roots=[str(root)], state=StateDir(str(state)), **LIMITS)


def shutdown(reg: Registry) -> None:
    reg.save_all()


def fresh(root: Path) -> list[dict]:
    return list_sessions([str(root)])


def append_message(path: Path, text: str) -> None:
    """A user message appended after the last entry (as pi appends)."""
    last = json.loads(path.read_text().splitlines()[-1])
    entry = {
        "type": "message",
        "id": f"x{abs(hash(text)) % 10**7:07d}",
        "parentId": last["id"],
        "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1764583200000},
    }
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def warmed(tmp: Path) -> tuple[Path, Path]:
    root, state = store(tmp), tmp / "state"
    reg = restart(root, state)
    assert listing(reg)[0] == fresh(root)
    shutdown(reg)
    assert (state / "listing.msgpack").is_file()
    return root, state


def test_a_restart_lists_from_the_cache_what_a_fresh_listing_says(tmp_path: Path) -> None:
    root, state = warmed(tmp_path)
    before = (state / "listing.msgpack").stat().st_ino
    reg = restart(root, state)
    listed, missing = listing(reg)
    assert missing == []  # every file answered by the listing cache
    assert reg.sessions == {}  # and none of them read
    assert listed == fresh(root)
    assert len(listed) == 12
    shutdown(reg)
    assert (state / "listing.msgpack").stat().st_ino == before  # nothing changed: not written again


def test_changed_new_and_deleted_files_since_the_cache(tmp_path: Path) -> None:
    root, state = warmed(tmp_path)
    files = sorted(root.rglob("*.jsonl"))
    append_message(files[0], "grown since the cache")
    # rewritten in place with the same size: only the mtime and the content differ
    raw = files[1].read_bytes()
    files[1].write_bytes(raw.replace(b'"content"', b'"contenT"', 1))
    assert len(files[1].read_bytes()) == len(raw)
    os.utime(files[1], ns=(1, 1_000_000_000))
    # replaced by another file (a new inode) of the same size and mtime
    st = files[2].stat()
    other = files[2].with_suffix(".tmp")
    shutil.copyfile(files[3], other)
    other.write_bytes(files[3].read_bytes()[: st.st_size].ljust(st.st_size, b"\n"))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, files[2])
    files[4].unlink()
    new = files[5].parent / "2026-12-01T00-00-00-000Z_new.jsonl"
    shutil.copyfile(files[5], new)
    reg = restart(root, state)
    listed, missing = listing(reg)
    assert set(missing) == {str(files[0]), str(files[1]), str(files[2]), str(new)}
    assert listed == fresh(root)
    assert str(files[4]) not in {s["session"] for s in listed}
    # the same registry after more changes: files it knows are described again
    append_message(files[6], "grown while served")
    files[7].unlink()
    assert listing(reg)[0] == fresh(root)


def test_a_torn_corrupt_or_foreign_cache_is_rebuilt(tmp_path: Path) -> None:
    root, state = warmed(tmp_path)
    cache = state / "listing.msgpack"
    good = cache.read_bytes()
    want = fresh(root)
    path = str(sorted(root.rglob("*.jsonl"))[0])
    decoded = msgspec.msgpack.decode(good)
    rec = decoded["sessions"][path]
    foreign: list[Any] = [
        [1, 2, 3],
        {**decoded, "sessions": {path: {**rec, "info": [1]}}},
        {**decoded, "sessions": {path: {**rec, "info": {**rec["info"], "modified": 7}}}},
        {**decoded, "sessions": {path: {**rec, "info": {**rec["info"], "session": "/elsewhere.jsonl"}}}},
        {**decoded, "sessions": {path: {**rec, "info": {**rec["info"], "entryCount": "8"}}}},
        {**decoded, "sessions": {path: "not a record"}},
        {**decoded, "format": -1},
    ]
    broken = [good[: len(good) // 2], b"", b"\xc1garbage"] + [msgspec.msgpack.encode(f) for f in foreign]
    for data in broken:
        cache.write_bytes(data)
        reg = restart(root, state)
        assert listing(reg)[0] == want, data[:40]
        shutdown(reg)  # writes a good cache again
        assert listing(restart(root, state)) == (want, [])


def test_two_servers_sharing_the_state_dir(tmp_path: Path) -> None:
    root, state = warmed(tmp_path)
    a, b = restart(root, state), restart(root, state)
    files = sorted(root.rglob("*.jsonl"))
    for i, f in enumerate(files[:6]):
        append_message(f, f"change {i}")
        server, other = (a, b) if i % 2 else (b, a)
        assert listing(server)[0] == fresh(root)
        shutdown(server)  # each writes the cache as it knows it
        assert listing(other)[0] == fresh(root)
    for reg in (a, b, restart(root, state)):
        assert listing(reg)[0] == fresh(root)


async def test_two_server_processes_on_one_state_dir(tmp_path: Path) -> None:
    root, state = warmed(tmp_path)
    files = sorted(root.rglob("*.jsonl"))
    args = ("--sessions-dir", str(root), "--state-dir", str(state))

    async def listed(c: Any) -> list[dict]:
        return (await c.call("pi/listSessions", {}))["sessions"]

    async with server(*args) as a, server(*args) as b:
        assert await listed(a) == await listed(b) == fresh(root)
        append_message(files[0], "while two servers run")
        files[1].unlink()
        shutil.copyfile(files[2], files[2].parent / "2026-12-02T00-00-00-000Z_copy.jsonl")
        first, second = await asyncio.gather(listed(a), listed(b))
        assert first == second == fresh(root)
    # both wrote the listing cache at their shutdown, at the same time: a third server trusts
    # what it can read of it and answers as a fresh listing
    data = msgspec.msgpack.decode((state / "listing.msgpack").read_bytes())
    assert set(data["sessions"]) == {str(f) for f in root.rglob("*.jsonl")}
    async with server(*args) as c:
        assert await listed(c) == fresh(root)
