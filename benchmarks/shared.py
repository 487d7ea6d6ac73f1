"""The shared daemon's targets, side by side in one run:

    python benchmarks/shared.py [--work DIR] [--runs N] [--json]

- spawn a connector -> its `initialize` reply with the daemon running (at rest: its
  full-text index of the store built first), beside the
  spawn of `python3 -c pass` (interleaved);
- the first connector with no daemon yet (a fresh state dir each time);
- five clients on the 100,000-entry session: one index in memory, the RSS of every
  pi-server process (connectors, daemon, its workers) with one client and with five,
  each connector's RSS, the second client's first 200-row `/tree` window;
- after a daemon restart (`pi-server daemon stop`: indexes saved), the first window
  on the unchanged session, beside pi 1.6.0's open + context + tree of the same file,
  and the new daemon's RSS after it; the same with the session not read back at the
  daemon's start (its list of sessions in memory cleared: "cold").

Sockets go to a folder of this run (XDG_RUNTIME_DIR), so no other daemon is met.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run  # noqa: E402
from stdio import Client, rss_of  # noqa: E402


def children(pid: int) -> set[int]:
    kids: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids |= {int(k) for k in f.read().split()}
    except OSError:
        pass
    return kids | {g for k in kids for g in children(k)}


def status(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "pi_server", "daemon", "status", "--json", *args], capture_output=True, text=True
    )
    return json.loads(out.stdout)


def stop(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "pi_server", "daemon", "stop", *args], capture_output=True)


def spawn_times(args: list[str], runs: int) -> dict[str, float]:
    """Connector spawn -> `initialize` reply (daemon running), interleaved with `python3 -c pass`."""
    ours, bare = [], []
    for _ in range(runs):
        c = Client(args)
        c.initialize()
        ours.append(time.perf_counter() - c.t0)
        c.close()
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"])
        bare.append(time.perf_counter() - t)
    return {"connectorInitializeSeconds": statistics.median(ours), "pythonPassSeconds": statistics.median(bare)}


def first_start(store: str, runs: int) -> float:
    """The first connector, no daemon yet: spawn -> `initialize` reply (a new state dir each run)."""
    took = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as state:
            args = ["--sessions-dir", store, "--state-dir", state]
            c = Client(args)
            c.initialize()
            took.append(time.perf_counter() - c.t0)
            c.close()
            stop(args)
    return statistics.median(took)


def window(c: Client, path: str) -> float:
    t = time.perf_counter()
    c.request("pi/getTree", {"session": path, "limit": 200})
    return c.last_byte - t


def five_clients(args: list[str], path: str) -> dict[str, Any]:
    first = Client(args)
    first.initialize()
    window(first, path)  # the cold index
    daemon = status(args)["pid"]

    def total(clients: list[Client]) -> int:
        pids = {daemon, *children(daemon), *(c.proc.pid for c in clients)}
        return sum(rss_of(p) for p in pids)

    one = total([first])
    others = [Client(args) for _ in range(4)]
    for c in others:
        c.initialize()
    second = window(others[0], path)
    for c in others[1:]:
        window(c, path)
    clients = [first, *others]
    five = total(clients)
    st = status(args)
    out = {
        "oneClientRssBytes": one,
        "fiveClientsRssBytes": five,
        "connectorRssBytes": max(rss_of(c.proc.pid) for c in clients),
        "secondClientWindowSeconds": second,
        "sessionsIndexed": st["sessionsIndexed"],
        "daemonsRunning": 1,
    }
    for c in clients:
        c.close()
    return out


def after_restart(args: list[str], path: str, state: str, cold: bool = False) -> dict[str, Any]:
    """`pi-server daemon stop` (indexes saved), then a new connector's first window, and the
    new daemon's RSS after it. `cold`: the stopped daemon's list of sessions in memory is
    cleared first, so the new one reads the session from its cache only when asked (as after
    a kill -9)."""
    stop(args)
    if cold:
        from pi_server.store.cache import IndexCache

        IndexCache(state).save_listing(warm=[])
    c = Client(args)
    c.initialize()
    took = window(c, path)
    rss = rss_of(status(args)["pid"])
    c.close()
    return {"restartWindowSeconds": took, "restartDaemonRssBytes": rss}


def index_built(c: Client, limit_s: float = 300) -> float:
    """Wait until the daemon's full-text index holds the store (the daemon at rest, as it is
    once a store has been indexed); how long that took."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        got = c.request("pi/search", {"query": "the", "limit": 1})
        if got["indexedFiles"] and not got["pendingFiles"]:
            break
        time.sleep(0.2)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.environ.get("PI_BENCH_DIR", "/tmp/pi-server-bench"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--restarts", type=int, default=5, help="daemon restarts (and pi runs) the restart figure is the median of")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="pi-server-bench-")
    big = run.session(work, 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp, "store", "--bench--")
        store.mkdir(parents=True)
        try:
            os.link(big, store / big.name)
        except OSError:  # another file system
            shutil.copy(big, store / big.name)
        path = str(store / big.name)
        args = ["--sessions-dir", str(store.parent), "--state-dir", str(Path(tmp, "state"))]
        result: dict[str, Any] = {"firstStartSeconds": first_start(str(store.parent), 3)}
        warm = Client(args)  # keeps the daemon up while spawns are timed
        warm.initialize()
        result["fullTextIndexSeconds"] = index_built(warm)
        result.update(spawn_times(args, a.runs))
        warm.close()
        result.update(five_clients(args, path))
        # one restart is one sample of a short time: the median of several, and of pi's side too
        state = str(Path(tmp, "state"))
        restarts = [after_restart(args, path, state) for _ in range(a.restarts)]
        colds = [after_restart(args, path, state, cold=True)["restartWindowSeconds"] for _ in range(a.restarts)]
        result["restartColdWindowSeconds"] = statistics.median(colds)
        result["restartColdWindowAllSeconds"] = [round(t, 4) for t in colds]
        result["restartWindowSeconds"] = statistics.median(r["restartWindowSeconds"] for r in restarts)
        result["restartWindowAllSeconds"] = [round(r["restartWindowSeconds"], 4) for r in restarts]
        result["restartDaemonRssBytes"] = max(r["restartDaemonRssBytes"] for r in restarts)
        pis = [run.pi_json("1.6.0", "measure", str(big))["totalSeconds"] for _ in range(a.restarts)]
        result["pi16OpenContextTreeSeconds"] = statistics.median(pis)
        result["restartRatio"] = result["restartWindowSeconds"] / result["pi16OpenContextTreeSeconds"]
        result["restartColdRatio"] = result["restartColdWindowSeconds"] / result["pi16OpenContextTreeSeconds"]
        stop(args)
    print(json.dumps(result) if a.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
