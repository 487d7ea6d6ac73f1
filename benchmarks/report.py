"""docs/benchmarks.md from one run's figures: each row with its target and whether it is met."""

from __future__ import annotations

import json
import statistics
from typing import Any

NOTES = "benchmarks-notes.md"


def med(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def ms(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 0.1 else f"{s * 1000:.0f} ms"


def sec(s: float) -> str:
    return f"{s:.2f} s"


def mib(b: float) -> str:
    return f"{b / 2**20:.0f} MiB"


def verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else f"**not met** ({value / limit:.1f}× the target)"


def session_rows(main: dict[str, list[dict[str, Any]]]) -> list[str]:
    p16, p73, us, io = main["pi16"], main["pi073"], main["ours"], main["stdio"]
    pi_total, pi73_total = med(p16, "totalSeconds"), med(p73, "totalSeconds")
    first, first_io = med(us, "firstAnswerSeconds"), med(io, "firstAnswerFromSpawnSeconds")
    init = med(io, "initializeSeconds")
    rss16, rss73, rss_io = med(p16, "rssBytes"), med(p73, "rssBytes"), med(io, "rssBytes")
    init1, first_req = med(io, "initializeFirstSeconds"), med(io, "firstRequestAfterSpawnSeconds")
    rows = [
        ("start-up: spawn → `initialize` reply over stdio", "—", "—", ms(init), "—", "≤ 150 ms", verdict(init, 0.150)),
        ("start-up, first start with a new state dir or client set-up", "—", "—", ms(init1), "—", "—", "—"),
        ("start-up: spawn → first `pi/listSessions` answer (empty store)", "—", "—", ms(first_req), "—", "—", "—"),
        (
            "cold index + first answer (200-row `/tree` window at the leaf + the leaf's context), "
            "start-up excluded; pi: open + context + tree",
            sec(pi_total),
            sec(pi73_total),
            sec(first),
            f"{first / pi_total:.2f}×",
            "≤ 0.3×",
            verdict(first / pi_total, 0.3),
        ),
        (
            "the same over stdio from spawn, start-up included (pi's figure excludes its own start-up)",
            sec(pi_total),
            sec(pi73_total),
            sec(first_io),
            f"{first_io / pi_total:.2f}×",
            "≤ 0.45×",
            verdict(first_io / pi_total, 0.45),
        ),
        (
            "RSS after indexing and the first answer (process)",
            mib(rss16),
            mib(rss73),
            mib(rss_io),
            f"{rss_io / rss16:.2f}×",
            "≤ 0.2×",
            verdict(rss_io / rss16, 0.2),
        ),
        (
            "RSS after indexing, core alone in-process (no server)",
            mib(rss16),
            mib(rss73),
            mib(med(us, "indexRssBytes")),
            f"{med(us, 'indexRssBytes') / rss16:.2f}×",
            "—",
            "—",
        ),
    ]
    w50, w99 = med(io, "windowP50Seconds"), med(io, "windowP99Seconds")
    rows += [
        ("warm 200-row window anywhere, over stdio, p50", "—", "—", ms(w50), "—", "≤ 5 ms", verdict(w50, 0.005)),
        ("warm 200-row window anywhere, over stdio, p99", "—", "—", ms(w99), "—", "≤ 15 ms", verdict(w99, 0.015)),
        ("warm 200-row window, in-process, p50", "—", "—", ms(med(us, "windowP50Seconds")), "—", "—", "—"),
    ]
    c10 = med(us, "context10kWarmP50Seconds")
    rows.append(
        (
            f"warm {us[0]['context10kMessages']:,}-message context, in-process, p50",
            "—",
            "—",
            ms(c10),
            "—",
            "≤ 15 ms",
            verdict(c10, 0.015),
        )
    )
    if all("buildContext10kP50Seconds" in r for r in io):
        b10 = med(io, "buildContext10kP50Seconds")
        rows.append(
            ("`pi/buildContext` of it over stdio, warm p50", "—", "—", ms(b10), "—", "≤ 40 ms", verdict(b10, 0.040))
        )
    rows.append(
        (
            "context of the leaf alone (pi: `buildSessionContext`)",
            ms(med(p16, "contextSeconds")),
            ms(med(p73, "contextSeconds")),
            ms(med(us, "contextSeconds")),
            f"{med(us, 'contextSeconds') / med(p16, 'contextSeconds'):.2f}×",
            "—",
            "—",
        )
    )
    head = "| what | pi 1.6.0 | pi 0.73.1 | pi-server | ratio to 1.6.0 | target | |"
    return [head, "| --- | --- | --- | --- | --- | --- | --- |"] + ["| " + " | ".join(r) + " |" for r in rows]


def daemon_rows(d: dict[str, Any]) -> list[str]:
    cold, warm, app = d["cold"], d["warm"], d["append"]
    p16, p73 = d["pi200"]["1.6.0"], d["pi200"]["0.73.1"]
    full16 = p16["listSeconds"] + p16["openAllSeconds"]
    full73 = p73["listSeconds"] + p73["openAllSeconds"]
    ratio = cold["fullIndexSeconds"] / full16
    l16, l73 = d["pi3000"]["1.6.0"], d["pi3000"]["0.73.1"]
    rows = [
        (
            "append → `pi/sessionUpdated` at the client, p50",
            "—",
            "—",
            ms(app["p50"]),
            "—",
            "≤ 10 ms",
            verdict(app["p50"], 0.010),
        ),
        ("append → `pi/sessionUpdated` at the client, p99", "—", "—", ms(app["p99"]), "—", "—", "—"),
        (
            f"cold start, {cold['files']} files / {cold['bytes'] / 1e6:.0f} MB: first answer (any session)",
            "—",
            "—",
            sec(cold["firstAnswerSeconds"]),
            "—",
            "—",
            "—",
        ),
        (
            "cold full index vs pi's `list` + opening each file",
            sec(full16),
            sec(full73),
            sec(cold["fullIndexSeconds"]),
            f"{ratio:.2f}×",
            "≤ 0.2×",
            verdict(ratio, 0.2),
        ),
        (
            f"server RSS after the full index (its worker processes: {mib(cold.get('workersRssBytes', 0))})",
            mib(p16["maxRssBytes"]),
            mib(p73["maxRssBytes"]),
            mib(cold["rssBytes"]),
            f"{cold['rssBytes'] / p16['maxRssBytes']:.2f}×",
            "—",
            "—",
        ),
        (
            f"warm restart, {warm['sessions']:,} files: `pi/listSessions` after `initialized` (pi: `listAll`)",
            ms(l16["listAllSeconds"]),
            ms(l73["listAllSeconds"]),
            ms(warm["listSeconds"]),
            f"{warm['listSeconds'] / l16['listAllSeconds']:.2f}×",
            "≤ 150 ms",
            verdict(warm["listSeconds"], 0.150),
        ),
    ]
    head = "| what | pi 1.6.0 | pi 0.73.1 | pi-server | ratio to 1.6.0 | target | |"
    return [head, "| --- | --- | --- | --- | --- | --- | --- |"] + ["| " + " | ".join(r) + " |" for r in rows]


def scale_rows(scale: dict[int, dict[str, list]], sizes: dict[int, int]) -> list[str]:
    lines = [
        "| entries | MB | pi 1.6.0 open + context + tree | pi-server index | pi-server index + first answer | ratio "
        "| pi 1.6.0 context | pi-server context | pi 1.6.0 RSS | pi-server RSS | ratio | runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in sorted(scale):
        p, o = scale[n]["pi16"], scale[n]["ours"]
        first = med(o, "firstAnswerSeconds")
        if any("error" in r for r in p):
            lines.append(
                f"| {n:,} | {sizes[n] / 1e6:.0f} | fails: `{p[0]['error'][:90]}` | {sec(med(o, 'indexSeconds'))} "
                f"| {sec(first)} | — | — | {ms(med(o, 'contextSeconds'))} | — | {mib(med(o, 'indexRssBytes'))} | — "
                f"| {len(o)} |"
            )
            continue
        tot = med(p, "totalSeconds")
        rss_p, rss_o = med(p, "rssBytes"), med(o, "indexRssBytes")
        lines.append(
            f"| {n:,} | {sizes[n] / 1e6:.0f} | {sec(tot)} | {sec(med(o, 'indexSeconds'))} | {sec(first)} "
            f"| {first / tot:.2f}× | {ms(med(p, 'contextSeconds'))} | {ms(med(o, 'contextSeconds'))} "
            f"| {mib(rss_p)} | {mib(rss_o)} | {rss_o / rss_p:.2f}× | {len(p)} |"
        )
    return lines


def render(meta: dict[str, Any], main: dict[str, list], scale: dict[int, dict], daemon: dict | None) -> str:
    us = main["ours"][0]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {meta['date']} by `python benchmarks/run.py --write` (one command; `--smoke` for a quick check)"
        f" on a {meta['cores']}-core machine shared with other work, {meta['python']}; pi 1.6.0 on node"
        f" {meta['node16']}, pi 0.73.1 on node {meta['node073']}. Medians of {meta['runs']} interleaved runs,"
        " each side in a fresh process.",
        "",
        f"Session: {us['entries']:,} entries, {meta['mainBytes'] / 1e6:.1f} MB, generated by pi 1.6.0's own"
        f" `SessionManager` (`benchmarks/pi_side.mjs generate`, seed 1); {us['rowsTotal']:,} rows in the default"
        f" `/tree` view; the leaf's context has {us['contextMessages']:,} messages.",
        "",
        "## One session",
        "",
        *session_rows(main),
        "",
    ]
    if daemon is not None:
        lines += [
            "## The daemon",
            "",
            "Real stdio client; stores generated by pi 1.6.0's own `SessionManager`"
            " (`benchmarks/pi_side.mjs generate-store`); both pi versions measured on the same stores in the same run.",
            "",
            *daemon_rows(daemon),
            "",
        ]
    lines += [
        "## Scaling",
        "",
        "pi-server in-process (`benchmarks/ours.py`), pi 1.6.0 in node 22, on sessions generated by pi 1.6.0"
        " with the same seed.",
        "",
        *scale_rows(scale, meta["sizes"]),
        "",
        "Raw figures of the run: `last-run.json` in the work directory; the medians above:",
        "",
        "```json",
        json.dumps(
            {
                k: {
                    s: {key: med(v, key) for key in v[0] if isinstance(v[0][key], (int, float))}
                    for s, v in main.items()
                }
                for k in ["main"]
            }
        ),
        "```",
        "",
    ]
    return "\n".join(lines)
