"""pi and pi-server side by side on one ~100,000-entry session, in one run.

    python benchmarks/run.py [--entries 100000] [--seed 1] [--runs 3] [--work DIR] [--write]

Generates the session with pi's own SessionManager (cached in DIR), measures
pi's SessionManager.open + buildSessionContext + getTree and ours, each in
fresh processes, and prints a table; --write puts it in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PI_SIDE = ROOT / "benchmarks" / "pi_side.mjs"
OURS = ROOT / "benchmarks" / "ours.py"


def run_json(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("PI_BENCH_DIR", "/tmp/pi-server-bench"))
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    session = work / f"session-{args.entries}-{args.seed}.jsonl"
    if not session.exists():
        print(f"generating {session} with pi's SessionManager ...", file=sys.stderr)
        gen = run_json(
            ["node", str(PI_SIDE), "generate", str(session), "--entries", str(args.entries), "--seed", str(args.seed)]
        )
        print(f"  {gen['entries']} entries, {gen['bytes'] / 1e6:.1f} MB in {gen['seconds']:.1f} s", file=sys.stderr)
    size = session.stat().st_size

    pi_runs, our_runs = [], []
    for i in range(args.runs):  # interleaved, so machine noise hits both alike
        print(f"run {i + 1}/{args.runs}", file=sys.stderr)
        pi_runs.append(run_json(["node", str(PI_SIDE), "measure", str(session)]))
        our_runs.append(run_json([sys.executable, str(OURS), "measure", str(session)]))

    pi_open = median_of(pi_runs, "openSeconds")
    pi_total = median_of(pi_runs, "totalSeconds")
    pi_rss = median_of(pi_runs, "rssBytes")
    ours_first = median_of(our_runs, "indexPlusFirstAnswerSeconds")
    ours_index = median_of(our_runs, "indexSeconds")
    ours_rss = median_of(our_runs, "indexRssBytes")
    ours_rss_delta = median_of(our_runs, "indexRssDeltaBytes")
    o = our_runs[0]
    rows = [
        ("cold index", f"{pi_open:.2f} s (open)", f"{ours_index:.2f} s", ours_index / pi_open, "—"),
        (
            "cold index + first answer (200-row /tree window)",
            f"{pi_open:.2f} s (open)",
            f"{ours_first:.2f} s",
            ours_first / pi_open,
            "≤ 0.2×",
        ),
        (
            "open + context + tree",
            f"{pi_total:.2f} s",
            f"{median_of(our_runs, 'indexSeconds') + median_of(our_runs, 'firstTreeSeconds') + median_of(our_runs, 'contextSeconds'):.2f} s",
            (
                median_of(our_runs, "indexSeconds")
                + median_of(our_runs, "firstTreeSeconds")
                + median_of(our_runs, "contextSeconds")
            )
            / pi_total,
            "—",
        ),
        (
            "context of the leaf",
            f"{median_of(pi_runs, 'contextSeconds') * 1000:.0f} ms",
            f"{median_of(our_runs, 'contextSeconds') * 1000:.0f} ms",
            median_of(our_runs, "contextSeconds") / median_of(pi_runs, "contextSeconds"),
            "—",
        ),
        (
            "RSS after indexing (process)",
            f"{pi_rss / 2**20:.0f} MiB",
            f"{ours_rss / 2**20:.0f} MiB",
            ours_rss / pi_rss,
            "≤ 0.1×",
        ),
        (
            "RSS of the index itself (over the interpreter's)",
            f"{(pi_rss - median_of(pi_runs, 'baselineRssBytes')) / 2**20:.0f} MiB",
            f"{ours_rss_delta / 2**20:.0f} MiB",
            ours_rss_delta / (pi_rss - median_of(pi_runs, "baselineRssBytes")),
            "—",
        ),
    ]
    singles = [
        ("200-row window anywhere, warm, p50", f"{median_of(our_runs, 'windowP50Seconds') * 1000:.1f} ms", "≤ 5 ms"),
        ("200-row window anywhere, warm, p99", f"{median_of(our_runs, 'windowP99Seconds') * 1000:.1f} ms", "—"),
        (
            f"context build, {o['context10kMessages']}-message path, warm p50",
            f"{median_of(our_runs, 'context10kWarmP50Seconds') * 1000:.1f} ms",
            "≤ 20 ms",
        ),
        (
            f"context build, {o['context10kMessages']}-message path, cold",
            f"{median_of(our_runs, 'context10kColdSeconds') * 1000:.0f} ms",
            "—",
        ),
    ]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/run.py --write` on this project's CI machine kind "
        f"({os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, node "
        f"{subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}), "
        f"medians of {args.runs} interleaved runs, each in a fresh process.",
        "",
        f"Session: {o['entries']:,} entries, {size / 1e6:.1f} MB, generated by pi's own `SessionManager` "
        f"(`benchmarks/pi_side.mjs generate`, seed {args.seed}); {o['rowsTotal']:,} rows in the default /tree view; "
        f"the leaf's context has {o['contextMessages']:,} messages.",
        "",
        "## pi 0.73.1 and pi-server side by side",
        "",
        "| what | pi | pi-server | ratio | target |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, a, b, ratio, target in rows:
        lines.append(f"| {name} | {a} | {b} | {ratio:.2f}× | {target} |")
    lines += ["", "## pi-server alone", "", "| what | pi-server | target |", "| --- | --- | --- |"]
    for name, b, target in singles:
        lines.append(f"| {name} | {b} | {target} |")
    lines += [
        "",
        "Raw figures (JSON, one object per run):",
        "",
        "```json",
        json.dumps({"pi": pi_runs, "piServer": our_runs}, indent=None),
        "```",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        notes = ROOT / "docs" / "benchmarks-notes.md"
        extra = notes.read_text() if notes.exists() else ""
        doc = ROOT / "docs" / "benchmarks.md"
        old = doc.read_text() if doc.exists() else ""
        begin, end = "<!-- daemon:begin -->", "<!-- daemon:end -->"
        daemon = old[old.index(begin) : old.index(end) + len(end)] if begin in old and end in old else ""
        doc.write_text(text + ("\n" + extra if extra else "") + ("\n" + daemon + "\n" if daemon else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
