"""`pi-server search`: a real process asking a real daemon's (or an in-process server's) index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
CI_SESSION = "2026-11-30T09-02-08-000Z_01a22bb0-aa80-74da-8595-341ec49fc906.jsonl"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_server", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=120,
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    flags = ["--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")]
    yield root, flags
    run("daemon", "stop", *flags)


def _marked(snippet: str, ranges: list[list[int]]) -> list[str]:
    return [snippet[a:b] for a, b in ranges]


def test_json_names_the_entry_and_marks_the_match(store) -> None:
    root, flags = store
    r = run("search", "HealthCheck", "--json", *flags)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["pendingFiles"] == 0 and res["indexedFiles"] == 3
    session = str(root / "--home-demo-shop--" / CI_SESSION)
    hit = next(h for h in res["hits"] if h["entryId"] == "9ef4e3a8")
    assert hit["session"] == session and hit["role"] == "assistant"
    assert [m.lower() for m in _marked(hit["snippet"], hit["ranges"])] == ["healthcheck"]
    assert res["total"] == len(res["hits"])
    # --limit reaches the server
    one = json.loads(run("search", "the", "--json", "--limit", "1", *flags).stdout)
    assert len(one["hits"]) == 1 and one["total"] > 1


def test_text_output_one_group_per_hit(store) -> None:
    root, flags = store
    r = run("search", "healthcheck", *flags)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "9ef4e3a8" in line)
    assert str(root / "--home-demo-shop--" / CI_SESSION) in lines[at]
    assert "assistant" in lines[at]
    assert lines[at - 1].startswith("2026-11-30 09:02")  # the entry's time, then the session's title
    assert "»healthcheck«" in lines[at + 1].lower()
    assert lines[-1] == "(1 hit)"


def test_the_count_says_what_the_editors_say() -> None:
    from pi_server.search_cli import _count

    assert [_count(1, 1, False), _count(3, 3, False), _count(2, 7, False), _count(50, 302, True)] == [
        "1 hit",
        "3 hits",
        "2 of 7 hits",
        "50 of 302+ hits",
    ]


def test_without_a_daemon_the_same_hits(store) -> None:
    _, flags = store
    daemon = json.loads(run("search", "database container", "--json", *flags).stdout)
    alone = json.loads(run("search", "database container", "--json", "--no-daemon", *flags).stdout)
    assert daemon["hits"] and alone["hits"] == daemon["hits"]


def test_no_match_and_bad_queries(store) -> None:
    _, flags = store
    none = run("search", "zzqqxxnotthere", *flags)
    assert none.returncode == 0 and none.stdout == "" and "no entry matched" in none.stderr
    for q in ("re:(unclosed", "   "):
        bad = run("search", q, *flags)
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.startswith("pi-server: ") and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
