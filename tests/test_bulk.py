"""Worker processes for searched listings and the first index: the same answers as the
server's own path, a lost worker replaced, no process left behind."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_client import server
from test_hostile import CASES, _valid, _write

from pi_server.server import pool

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
QUERIES = ["orders", "ORDERS module", "repository pagination", "tests pass", "zzz-none", "  ", "the"]


def _store(root: Path) -> Path:
    """The samples, copies of them in other folders, and every hostile case beside them."""
    shutil.copytree(SAMPLES, root)
    for i, src in enumerate(sorted(SAMPLES.rglob("*.jsonl")) * 4):
        dst = root / f"--copy{i % 3}--" / f"{i:03d}-{src.name}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
    v = _valid()
    for name, make in CASES.items():
        if name in ("huge-line",):  # 70 MB: the listing's answer does not depend on it
            continue
        d = root / f"--{name}--"
        d.mkdir()
        make(d / "x.jsonl", v)
    outside = root.parent / "outside.jsonl"
    _write(outside, v)
    (root / "--symlink-out--").mkdir()
    (root / "--symlink-out--" / "x.jsonl").symlink_to(outside)
    return root


async def _listings(root: Path, state: Path, workers: str) -> list:
    out = []
    async with server("--sessions-dir", str(root), "--state-dir", str(state), env={"PI_SERVER_WORKERS": workers}) as c:
        for q in QUERIES:
            out.append(await c.call("pi/listSessions", {"query": q}))
            out.append(await c.call("pi/listSessions", {"query": q, "limit": 3}))
            out.append(await c.call("pi/listSessions", {"query": q, "cwd": "/home/demo/shop"}))
        out.append(await c.call("pi/listSessions", {}))
    return out


async def test_searched_listings_in_workers_equal_the_servers_own(tmp_path: Path) -> None:
    root = _store(tmp_path / "sessions")
    # cold (nothing indexed: the workers index while they search), then warm
    in_workers = await _listings(root, tmp_path / "state-w", "2")
    again = await _listings(root, tmp_path / "state-w", "2")
    here = await _listings(root, tmp_path / "state-0", "0")
    assert in_workers == here
    assert again == here
    counts = [len(r["sessions"]) for r in here]
    assert max(counts) > 10 and min(counts) == 0  # the queries tell sessions apart


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids |= {int(k) for k in f.read().split()}
        except FileNotFoundError:  # a thread that ended meanwhile has no children
            pass
    return kids


def _gone(pids: set[int], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{p}") for p in pids):
            return True
        time.sleep(0.05)
    return False


def _workers(pid: int) -> set[int]:
    return {k for k in _children(pid) if "pi_server.store.bulk" in Path(f"/proc/{k}/cmdline").read_text()}


@pytest.mark.parametrize("how", ["shutdown", "kill -9", "shutdown mid-index"])
async def test_no_worker_outlives_the_server(tmp_path: Path, how: str) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    if how == "shutdown mid-index":
        big = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
        for i in range(3000):
            (root / f"--p{i % 30}--").mkdir(exist_ok=True)
            shutil.copy(big, root / f"--p{i % 30}--" / f"{i}.jsonl")
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        pid = c.serving_pid()  # the daemon: its workers are its children
        if how != "shutdown mid-index":  # else the initial index starts them
            await c.call("pi/listSessions", {"query": "orders"})
        # a worker is seen once it runs its own program (between fork and exec it is the daemon's)
        deadline = time.monotonic() + 10
        while len(_workers(pid)) < min(2, os.cpu_count() or 1) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        workers = _workers(pid)
        assert len(workers) == min(2, os.cpu_count() or 1)
        if how == "kill -9":
            os.kill(pid, signal.SIGKILL)
        t = time.monotonic()
    if how != "kill -9":  # a client's shutdown leaves the daemon to others: stopping it is the end
        stop = [sys.executable, "-m", "pi_server", "daemon", "stop", "--sessions-dir", str(root)]
        subprocess.run([*stop, "--state-dir", str(tmp_path / "state")], check=True, timeout=60)
    assert _gone({pid}), "the server did not exit"
    assert time.monotonic() - t < 5  # not after the whole store is indexed
    assert _gone(workers), workers


def _files(tmp_path: Path, n: int) -> list[str]:
    big = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    out = []
    for i in range(n):
        p = tmp_path / "s" / f"--p--/{i}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(big, p)
        out.append(str(p))
    return out


async def _search(bulk: pool.BulkPool, files: list[str], tmp_path: Path) -> dict[str, object]:
    req = {"op": "search", "tokens": ["orders"], "state": str(tmp_path / "state"), "roots": [str(tmp_path / "s")]}
    return {path: hit async for path, hit in bulk.map(req, files, 2, urgent=True)}


def test_a_worker_silent_on_a_file_is_replaced_and_only_that_file_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pool, "BASE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(pool, "WALL_FACTOR", 2)  # a stopped worker uses no CPU: given up on wall time
    files = _files(tmp_path, 200)  # each indexed afresh: the batch takes the worker a while
    req = {"op": "search", "tokens": ["orders"], "state": str(tmp_path / "state"), "roots": [str(tmp_path / "s")]}
    slot = pool.Slot("test")
    got: dict[int, object] = {}
    try:
        slot.start()
        first = slot.proc
        assert first is not None

        def answer(i: int, value: object) -> None:
            got[i] = value
            if i == 0:  # stuck on a file from here: no answer comes
                os.kill(first.pid, signal.SIGSTOP)

        slot.run(req, files, answer)
        assert len(got) == len(files)
        lost = [i for i, v in got.items() if v == pool.FAILED]
        assert len(lost) == 1 and lost[0] > 0, lost
        assert all(v is True for i, v in got.items() if i != lost[0])
        assert first.poll() is not None  # killed and reaped
        assert slot.proc is not None and slot.proc.pid != first.pid
    finally:
        slot.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP])
async def test_a_worker_lost_between_batches_is_replaced_without_blaming_a_file(
    tmp_path: Path, monkeypatch, sig: int
) -> None:
    monkeypatch.setattr(pool, "BASE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(pool, "WALL_FACTOR", 2)  # a stopped worker uses no CPU: given up on wall time
    files = _files(tmp_path, 4)
    bulk = pool.BulkPool(1)
    try:
        assert bulk.ready()
        proc = bulk.slots[0].proc
        assert proc is not None
        os.kill(proc.pid, sig)
        await asyncio.sleep(0.2)
        got = await _search(bulk, files, tmp_path)
        assert len(got) == 4 and all(v is True for v in got.values()), got
        assert bulk.slots[0].proc is not None and bulk.slots[0].proc.pid != proc.pid
    finally:
        bulk.shutdown()
    assert proc.poll() is not None


def test_a_worker_spinning_on_a_file_is_stopped_by_its_cpu_time(tmp_path: Path, monkeypatch) -> None:
    """A worker busy on one file past its CPU budget is replaced, however long it waited for a core."""
    monkeypatch.setattr(pool, "WALL_FACTOR", 10_000)  # only the CPU budget can end it
    small = _files(tmp_path, 1)[0]
    lines = _valid()
    parent = json.loads(lines[-1])["id"]
    big = tmp_path / "s" / "--p--" / "big.jsonl"
    with open(big, "w") as f:
        f.write("\n".join(lines) + "\n")
        for i in range(20_000):
            eid = f"e{i:07x}"
            text = f"orders {i} " + "x" * 300
            msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
            entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
            f.write(json.dumps({**entry, "message": msg}) + "\n")
            parent = eid
    req = {"op": "search", "tokens": ["orders"], "state": str(tmp_path / "state"), "roots": [str(tmp_path / "s")]}
    slot = pool.Slot("test")
    got: dict[int, object] = {}
    try:
        slot.run(req, [small], got.__setitem__)  # started, imports done
        assert got == {0: True}
        monkeypatch.setattr(pool, "BASE_TIMEOUT_S", 0.02)
        monkeypatch.setattr(pool, "BYTES_PER_S", 10**12)
        slot.run(req, [str(big)], got.__setitem__)
        assert got == {0: pool.FAILED}
        monkeypatch.setattr(pool, "BASE_TIMEOUT_S", 10.0)
        slot.run(req, [str(big)], got.__setitem__)
        assert got == {0: True}
    finally:
        slot.stop()


@pytest.mark.parametrize("flush_ms", [0, 60_000])
def test_a_worker_batches_its_answers_into_frames(tmp_path: Path, flush_ms: int) -> None:
    """Each frame wakes the server's threads: answers wait `flushMs` for others (0: none)."""
    files = _files(tmp_path, 5)
    req = {"op": "search", "tokens": ["orders"], "state": str(tmp_path / "state"), "roots": [str(tmp_path / "s")]}
    slot = pool.Slot("test")
    try:
        slot.start()
        slot._send({**req, "flushMs": flush_ms, "items": files})
        frames = []
        while sum(map(len, frames)) < len(files):
            frames.append(slot._read_frame(files[0]))
        assert [i for frame in frames for i, _ in frame] == list(range(5))
        assert all(hit is True for frame in frames for _, hit in frame)
        assert len(frames) == (5 if flush_ms == 0 else 1)  # the last answer sends what waits
    finally:
        slot.stop()
