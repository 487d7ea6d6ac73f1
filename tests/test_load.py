"""No request waits behind another session's slow work: tree windows stay fast while
searched listings of a large store run back to back (a real server process)."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

from lsp_client import server

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


async def test_tree_windows_stay_fast_during_searched_listings(tmp_path: Path) -> None:
    big = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    root = tmp_path / "sessions"
    for i in range(800):
        p = root / f"--p{i % 20}--" / f"{i:04d}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(big, p)
    one = str(root / "--p0--" / "0000.jsonl")
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        await c.call("pi/listSessions", {})  # initial indexing done
        await c.call("pi/getTree", {"session": one, "limit": 20})
        stop = False
        searched = 0

        async def listings() -> None:
            nonlocal searched
            words = ["orders", "repository", "tests pass", "pagination", "orders module", "zzz"]
            while not stop:
                await c.call("pi/listSessions", {"query": words[searched % len(words)]})
                searched += 1

        task = asyncio.ensure_future(listings())
        await asyncio.sleep(0.2)
        waits = []
        for i in range(40):
            t = time.monotonic()
            await c.call("pi/getTree", {"session": one, "offset": i % 10, "limit": 20})
            waits.append(time.monotonic() - t)
            await asyncio.sleep(0.03)
        stop = True
        await task
    waits.sort()
    assert searched >= 2
    assert waits[int(len(waits) * 0.9)] < 0.15, waits


def _append_lines(files: list[Path], stop: list[bool], rate: int = 100) -> int:
    """Append user messages to `files` in turn, `rate` lines a second, as pi does during turns."""
    last = {f: json.loads(f.read_text().splitlines()[-1])["id"] for f in files}
    n = 0
    start = time.monotonic()
    while not stop[0]:
        f = files[n % len(files)]
        eid = f"a{n:07x}"
        line = {
            "type": "message",
            "id": eid,
            "parentId": last[f],
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": f"appended {n}"}], "timestamp": 1},
        }
        with open(f, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        last[f] = eid
        n += 1
        time.sleep(max(0.0, start + n / rate - time.monotonic()))
    return n


async def test_fifty_concurrent_requests_on_a_large_store_being_appended_to(tmp_path: Path) -> None:
    big = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    root = tmp_path / "sessions"
    files = []
    for i in range(3000):
        p = root / f"--p{i % 30}--" / f"{i:04d}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(big, p)
        files.append(p)
    rng = random.Random(14)
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        # initial indexing of 3,000 files done (a minute on a busy machine)
        await asyncio.wait_for(c.lc.protocol.send_request_async("pi/listSessions", {}), 300)
        stop = [False]
        appender = asyncio.get_running_loop().run_in_executor(None, _append_lines, files[:10], stop)
        # the same load without, then with, searched listings: what listings add is the server's
        # doing; the rest is what this (shared, 2-core) machine gives any request
        base, base_timeouts = await _load(c, files, rng, searched=0.0)
        lat, timeouts = await _load(c, files, rng, searched=0.05)
        stop[0] = True
        appended = await appender
    p99_base = _p(base["tree"] + base["context"], 0.99)
    fast = lat["tree"] + lat["context"]
    p50, p99 = _p(fast, 0.5), _p(fast, 0.99)
    print(
        f"\nwithout listings: {len(base['tree'] + base['context'])} tree/context requests,"
        f" p50 {_p(base['tree'] + base['context'], 0.5) * 1000:.0f} ms, p99 {p99_base * 1000:.0f} ms;"
        f" with 5% searched listings: {len(fast)}, p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,"
        f" tree p99 {_p(lat['tree'], 0.99) * 1000:.0f} ms, context p99 {_p(lat['context'], 0.99) * 1000:.0f} ms,"
        f" {len(lat['search'])} searched listings (max {max(lat['search'], default=0):.1f} s);"
        f" {appended} lines appended; {base_timeouts + timeouts} timeouts"
    )
    assert appended >= 1500 and base_timeouts == timeouts == 0 and len(lat["search"]) >= 5
    # no request waits behind a searched listing (seconds of work, in the worker processes). The
    # 100 ms p99 target is measured and reported (docs/protocol.md), not asserted: on 2 shared
    # cores the tail follows what else the machine runs
    assert p99 <= max(0.5, 3 * p99_base), (p99, p99_base)


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


async def _load(c: Any, files: list[Path], rng: random.Random, searched: float) -> tuple[dict[str, list[float]], int]:
    """50 clients, each sending a request every 0.5-1.5 s for 8 s: tree windows and contexts of
    any session (half of them on the ones being appended to), `searched` of them searched listings."""
    lat: dict[str, list[float]] = {"tree": [], "context": [], "search": []}
    timeouts = 0
    deadline = time.monotonic() + 8

    async def client() -> None:
        nonlocal timeouts
        while time.monotonic() < deadline:
            await asyncio.sleep(rng.uniform(0.5, 1.5))
            session = str(rng.choice(files[:10] if rng.random() < 0.5 else files))
            r = rng.random()
            if r < searched:
                kind, method, params = "search", "pi/listSessions", {"query": rng.choice(["orders", "zzz"])}
            elif r < searched + (1 - searched) / 2:
                kind, method = "tree", "pi/getTree"
                params = {"session": session, "offset": rng.randrange(20), "limit": 50}
            else:
                kind, method, params = "context", "pi/buildContext", {"session": session}
            t = time.monotonic()
            try:
                await asyncio.wait_for(c.lc.protocol.send_request_async(method, params), 30)
            except TimeoutError:
                timeouts += 1
                continue
            lat[kind].append(time.monotonic() - t)

    await asyncio.gather(*(client() for _ in range(50)))
    return lat, timeouts
