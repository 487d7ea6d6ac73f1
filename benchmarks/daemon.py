"""The daemon's speed, with pi's own numbers for the same stores in the same run.

    python benchmarks/daemon.py [--work DIR] [--smoke] [--json]

(run by benchmarks/run.py, which writes the tables)

1. append -> pi/sessionUpdated latency at a real LSP client, over 200 appends;
2. cold start on a 200-file / ~500 MB store (by default): first answer, full index, RSS,
   against pi's SessionManager.list + opening each file;
3. warm restart (index cache) on a 3,000-file store: pi/listSessions after
   `initialized` (median of 3 restarts), against pi's SessionManager.listAll.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import register_lsp_features  # noqa: E402
from stdio import rss_of  # noqa: E402

from pi_server.server.app import converter_factory  # noqa: E402


def node_json(version: str, *args: str) -> dict:
    from run import pi_json

    return pi_json(version, *args)


class Session:
    def __init__(self) -> None:
        self.lc = LanguageClient(converter_factory=converter_factory)
        register_lsp_features(self.lc)
        self.updates: dict[str, float] = {}
        updates = self.updates

        def on_update(params: dict) -> None:
            now = time.perf_counter()
            for eid in params.get("appended", []):
                updates[eid] = now

        def ignore(params: dict) -> None:
            pass

        self.lc.feature("pi/sessionUpdated")(on_update)
        self.lc.feature("pi/sessionsChanged")(ignore)
        self.lc.feature("pi/savePoint")(ignore)

    async def start(self, roots: str, state: str) -> None:
        await self.lc.start_io(sys.executable, "-m", "pi_server", "--sessions-dir", roots, "--state-dir", state)

    async def initialize(self) -> None:
        await self.lc.initialize_session(
            lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"), initialization_options={})
        )

    def progress_done(self) -> bool:
        return any(
            isinstance(r, lsp.WorkDoneProgressEnd) for reports in self.lc.progress_reports.values() for r in reports
        )

    @property
    def pid(self) -> int:
        return self.lc._server.pid  # type: ignore[union-attr]

    async def call(self, method: str, params: dict) -> dict:
        return await self.lc.protocol.send_request_async(method, params)

    async def stop(self) -> None:
        await self.lc.shutdown_session()


async def append_latency(work: Path, n: int = 200) -> dict:
    roots = work / "append" / "sessions"
    shutil.rmtree(work / "append", ignore_errors=True)
    shutil.copytree(ROOT / "pi_server" / "samples", roots)
    f = sorted(roots.rglob("*.jsonl"))[0]
    s = Session()
    await s.start(str(roots), str(work / "append" / "state"))
    await s.initialize()
    await s.call("pi/getTree", {"session": str(f)})
    lat = []
    parent = None
    with open(f, "a") as fh:
        for i in range(n):
            eid = f"b{i:07x}"
            line = (
                json.dumps(
                    {
                        "type": "custom",
                        "id": eid,
                        "parentId": parent,
                        "timestamp": "2026-12-01T00:00:00.000Z",
                        "customType": "bench",
                    }
                )
                + "\n"
            )
            t0 = time.perf_counter()
            fh.write(line)
            fh.flush()
            while eid not in s.updates:
                await asyncio.sleep(0.0005)
            lat.append(s.updates[eid] - t0)
            parent = eid
            await asyncio.sleep(0.02)  # appends arrive as a pi turn writes them, not in one burst
    await s.stop()
    lat.sort()
    return {"appends": n, "p50": statistics.median(lat), "p99": lat[int(n * 0.99) - 1], "max": lat[-1]}


async def cold_start(store: Path, work: Path) -> dict:
    state = work / "cold-state"
    shutil.rmtree(state, ignore_errors=True)
    files = sorted(store.rglob("*.jsonl"))
    pick = random.Random(3).choice(files)
    s = Session()
    await s.start(str(store), str(state))
    t0 = time.perf_counter()
    await s.initialize()
    await s.call("pi/getTree", {"session": str(pick), "limit": 200})
    first = time.perf_counter() - t0
    while not s.progress_done():
        await asyncio.sleep(0.01)
    full = time.perf_counter() - t0
    rss = rss_of(s.pid)
    workers = sum(rss_of(k) for k in worker_pids(s.pid))
    await s.stop()
    return {
        "firstAnswerSeconds": first,
        "fullIndexSeconds": full,
        "rssBytes": rss,
        "workersRssBytes": workers,
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
    }


def worker_pids(pid: int) -> list[int]:
    """The server's worker processes (searched listings and the first index run there)."""
    kids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return [k for k in kids if b"pi_server.store.bulk" in Path(f"/proc/{k}/cmdline").read_bytes()]


async def warm_restart(store: Path, work: Path, runs: int = 3) -> dict:
    """pi/listSessions on a server restarted over the index cache a first run built, timed
    from the `initialize` reply to the answer read; the median of `runs` restarts."""
    state = work / "warm-state"
    shutil.rmtree(state, ignore_errors=True)
    s = Session()  # first run builds the index cache
    await s.start(str(store), str(state))
    await s.initialize()
    while not s.progress_done():
        await asyncio.sleep(0.05)
    await s.stop()
    each, count = [], 0
    for _ in range(runs):
        s = Session()
        await s.start(str(store), str(state))
        await s.initialize()
        t0 = time.perf_counter()
        listed = await s.call("pi/listSessions", {})
        each.append(time.perf_counter() - t0)
        count = len(listed["sessions"])
        await s.stop()
    return {"listSeconds": statistics.median(each), "listSecondsEach": each, "sessions": count}


def store(work: Path, name: str, files: int, mb: int) -> Path:
    d = work / name
    if not (d / ".done").exists():
        shutil.rmtree(d, ignore_errors=True)
        print(f"generating {d} with pi 1.6.0's SessionManager ...", file=sys.stderr)
        node_json("1.6.0", "generate-store", str(d), "--files", str(files), "--total-mb", str(mb))
        (d / ".done").write_text("")
    return d


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.environ.get("PI_BENCH_DIR", "/tmp/pi-server-bench"))
    ap.add_argument("--smoke", action="store_true", help="small stores, few appends")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        s200, s3000, appends = store(work, "store20", 20, 20), store(work, "store100", 100, 5), 30
    else:
        s200, s3000, appends = store(work, "store200", 200, 500), store(work, "store3000", 3000, 100), 200

    print("append latency ...", file=sys.stderr)
    app = asyncio.run(append_latency(work, appends))
    print("cold start ...", file=sys.stderr)
    cold = asyncio.run(cold_start(s200, work))
    pi200 = {v: node_json(v, "list", str(s200)) for v in ("1.6.0", "0.73.1")}
    print("warm restart ...", file=sys.stderr)
    warm = asyncio.run(warm_restart(s3000, work))
    pi3000 = {v: node_json(v, "list", str(s3000)) for v in ("1.6.0", "0.73.1")}
    out = {"append": app, "cold": cold, "warm": warm, "pi200": pi200, "pi3000": pi3000}
    if args.json:
        print(json.dumps(out))
    else:
        from report import daemon_rows

        print("\n".join(daemon_rows(out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
