"""The full-text index on a generated store: first index speed, index size, query times.

    python benchmarks/search.py STORE_DIR [--db PATH] [--queries-only]

STORE_DIR: a store written by pi 1.6.0's SessionManager, e.g.
    node benchmarks/pi_side.mjs generate-store /tmp/fts-bench/store --files 2000 --total-mb 1024
(PI_PACKAGE_DIR pointing at pi 1.6.0). The index is built on this process's one core, as
the server's index thread builds it; queries run as pi/search runs them.
`--queries-only` asks an index built by an earlier run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from pi_server.fulltext import search
from pi_server.fulltext.db import FullText
from pi_server.fulltext.query import parse
from pi_server.server.fulltext import RegexProcess

QUERIES = [
    "function",
    "refactor",
    "error",
    "import",
    "config",
    "database",
    "timeout",
    "parser",
    "test",
    "bash",
    "fix the test",
    "update config file",
    "read src index",
    "error handling code",
    "run the build",
    '"the test"',
    '"import from"',
    '"git status"',
    '"no such file"',
    '"return value"',
    "日本語",
    "検索",
    "中文",
    "テスト",
    "数据库",
    "re:err(or|no)",
    "re:import \\w+ from",
    "re:timeout\\s*=\\s*\\d+",
    "re:def \\w+_test",
    "re:TODO.*fix",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--db", default="/tmp/fts-bench/fulltext.sqlite")
    ap.add_argument("--queries-only", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    ft = FullText(args.db) if args.queries_only else build(args.store, args.db)
    query_times(ft)


def build(store: str, db: str) -> FullText:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    files = sorted(str(p) for p in Path(store).rglob("*.jsonl"))
    total_bytes = sum(os.path.getsize(f) for f in files)
    ft = FullText(db)
    t0, c0 = time.monotonic(), time.process_time()
    for f in files:
        while not ft.index_step(f):
            pass
    ft.flush()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    ft.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db_bytes = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    text = indexed_text(files)
    print(f"files {len(files)}, {total_bytes / 1e6:.0f} MB of session files, {text / 1e6:.0f} MB of text indexed")
    print(f"first index: {wall:.1f} s wall, {cpu:.1f} s CPU")
    print(f"  {text / 1e6 / cpu:.1f} MB/s of indexed text per CPU s (target >= 20)")
    print(f"  {total_bytes / 1e6 / cpu:.1f} MB/s of session file per CPU s")
    print(f"index size: {db_bytes / 1e6:.0f} MB = {db_bytes / text:.2f}x the text indexed (target <= 0.5)")
    return ft


def query_times(ft: FullText) -> None:
    regex = RegexProcess()
    times = []
    for q in QUERIES:
        t = time.monotonic()
        got = search.run(ft, parse(q), 50, 0, None, None, None, matcher=regex.match)
        ms = (time.monotonic() - t) * 1000
        times.append(ms)
        print(f"  {ms:8.1f} ms  {got['total']:7d} hits{' (incomplete)' if got.get('incomplete') else ''}  {q}")
    regex.stop()
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(f"queries: p50 {statistics.median(times):.1f} ms (target <= 20), p99 {p99:.1f} ms (target <= 100)")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


def indexed_text(files: list[str]) -> int:
    """Characters of entry text the index holds (re-extracted from the files)."""
    from pi_server.fulltext.extract import entry_text, parse_line

    n = 0
    for f in files:
        with open(f, "rb") as fh:
            for line in fh:
                e = parse_line(line)
                if e is not None:
                    n += len(entry_text(e).encode())
    return n


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
