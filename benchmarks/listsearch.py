"""`pi/listSessions {query}` on a generated store, through a real server over stdio:

    python benchmarks/listsearch.py STORE_DIR [--state DIR] [--runs N] [--source DIR]

STORE_DIR: a store written by pi 1.6.0's SessionManager (see benchmarks/search.py). The
server (no daemon) first builds its full-text index of the store (kept in the state dir,
so a second run starts with it built) and its listing; then each query is asked `--runs`
times, each answer timed to its last byte. `--source DIR`: run the server from another
source tree (e.g. `git archive` of an earlier commit) to measure it the same way.

    python benchmarks/listsearch.py STORE_DIR --index-cost

indexes the store into a fresh full-text database twice on this process's one core,
without and with the session picker's text (fulltext/picker.py), and prints the CPU time
and database size of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from search import QUERIES as SEARCH_QUERIES  # noqa: E402
from stdio import Client  # noqa: E402

# the word queries of benchmarks/search.py (a listing's query has no phrases or regexes),
# and words shorter than a trigram
QUERIES = [q for q in SEARCH_QUERIES if not q.startswith(("re:", '"'))] + ["a", "ok", "日"]


def built(c: Client, limit_s: float) -> float:
    """Wait until the full-text index holds the store; how long that took."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        got = c.request("pi/search", {"query": "the", "limit": 1})
        if got["indexedFiles"] and not got["pendingFiles"]:
            break
        time.sleep(0.5)
    return time.perf_counter() - t0


def index_cost(store: str, work: str) -> None:
    from pi_server.fulltext import picker
    from pi_server.fulltext.db import FullText
    from pi_server.store.discovery import iter_session_files

    files = list(iter_session_files([os.path.abspath(store)]))
    total = sum(os.path.getsize(f) for f in files)
    add = picker.add
    for label, hook in (("without the picker's text", lambda *_: None), ("with the picker's text", add)):
        picker.add = hook
        path = os.path.join(work, "index-cost.sqlite")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        ft = FullText(path)
        c0 = time.process_time()
        for f in files:
            while not ft.index_step(f):
                pass
        cpu = time.process_time() - c0
        ft.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        ft.close()
        size = os.path.getsize(path)
        print(f"{label}: {cpu:.1f} CPU s, {total / 1e6 / cpu:.1f} MB of session file per CPU s, {size / 1e6:.0f} MB")
    picker.add = add


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--state", default="/tmp/listsearch-bench/state")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--source")
    ap.add_argument("--index-cost", action="store_true")
    args = ap.parse_args()
    if args.index_cost:
        os.makedirs(os.path.dirname(os.path.abspath(args.state)), exist_ok=True)
        index_cost(args.store, os.path.dirname(os.path.abspath(args.state)))
        return
    store, state = os.path.abspath(args.store), os.path.abspath(args.state)
    if args.source:  # `python -m` puts the working directory first on the path
        os.environ["PYTHONPATH"] = os.path.abspath(args.source)
        os.chdir(args.source)
    os.makedirs(state, exist_ok=True)
    c = Client(["--no-daemon", "--sessions-dir", store, "--state-dir", state])
    c.initialize()
    t = time.perf_counter()
    n = len(c.request("pi/listSessions", {})["sessions"])
    print(f"{n} sessions listed in {time.perf_counter() - t:.1f} s; ", end="", flush=True)
    print(f"full-text index built in {built(c, 1800):.0f} s more")
    times: list[float] = []
    for q in QUERIES:
        took = []
        for _ in range(args.runs):
            t = time.perf_counter()
            got = c.request("pi/listSessions", {"query": q})
            took.append((c.last_byte - t) * 1000)
        times += took
        print(f"  {statistics.median(took):8.1f} ms  {len(got['sessions']):5d} sessions  {q}")
    plain = []  # the listing without a query: what describing every session costs
    for _ in range(args.runs):
        t = time.perf_counter()
        c.request("pi/listSessions", {})
        plain.append((c.last_byte - t) * 1000)
    c.close()
    print(f"  {statistics.median(plain):8.1f} ms  {n:5d} sessions  (no query)")
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    load = os.getloadavg()
    print(
        f"listSessions {{query}}: p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms"
        f" over {len(QUERIES)} queries x {args.runs} (load average {load[0]:.2f})"
    )


if __name__ == "__main__":
    main()
