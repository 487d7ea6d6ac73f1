"""No request waits behind another session's slow work: tree windows stay fast while
searched listings of a large store run back to back (a real server process)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

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
