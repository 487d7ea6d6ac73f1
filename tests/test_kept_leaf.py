"""The leaf a read uses when none is asked for, one rule for every reader: a switch saved in the
state dir while the file has not grown since holds (getTree, buildContext, getSessionStats and
the command line alike); a pointer that does not hold, or that is not an entry id, is the file's
last entry, and a bad one takes nothing down."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_client import server

from pi_server.store.index import SessionIndex

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _session(tmp_path: Path) -> tuple[Path, SessionIndex]:
    root = tmp_path / "sessions"
    root.mkdir()
    src = max(SAMPLES.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    f = root / src.name
    shutil.copyfile(src, f)
    return f, SessionIndex.open(str(f))


def _cli_leaf(f: Path, state: Path) -> Any:
    r = subprocess.run(
        [sys.executable, "-m", "pi_server", "context", str(f), "--state-dir", str(state), "--format", "llm"],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=60,
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)["leafId"]


async def _server_leaves(tmp_path: Path, f: Path) -> tuple[Any, Any, Any]:
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        ctx = await c.call("pi/buildContext", {"session": str(f), "format": "llm"})
        tree = await c.call("pi/getTree", {"session": str(f), "filter": "all"})
        stats = await c.call("pi/getSessionStats", {"session": str(f)})
        edits = await c.call("pi/getContextEdits", {"session": str(f)})
        assert edits["leafId"] == ctx["leafId"]
        return ctx["leafId"], tree["leafId"], stats["branch"]["totalMessages"]


def _write_pointer(tmp_path: Path, f: Path, leaf: Any, size: int) -> None:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "leaves.json").write_text(json.dumps({str(f): {"leafId": leaf, "size": size}}))


async def test_a_saved_switch_holds_for_every_reader(tmp_path: Path) -> None:
    f, idx = _session(tmp_path)
    switched = idx.ids[len(idx) // 2]
    _write_pointer(tmp_path, f, switched, idx.size)
    ctx, tree, branch_messages = await _server_leaves(tmp_path, f)
    assert ctx == tree == switched
    assert _cli_leaf(f, tmp_path / "state") == switched
    whole = sum(1 for e in idx.read_entries(list(range(len(idx)))) if e.get("type") == "message")
    assert branch_messages < whole  # the stats' branch ends at the switched leaf too


async def test_a_pointer_that_is_not_an_id_is_the_last_entry(tmp_path: Path) -> None:
    f, idx = _session(tmp_path)
    for bad in (["a", "list"], {"an": "object"}, 7):
        _write_pointer(tmp_path, f, bad, idx.size)
        ctx, tree, _ = await _server_leaves(tmp_path, f)
        assert ctx == tree == idx.last_id, bad
        assert _cli_leaf(f, tmp_path / "state") == idx.last_id, bad


async def test_a_listing_shows_only_a_pointer_that_holds(tmp_path: Path) -> None:
    f, idx = _session(tmp_path)
    for bad in (["a", "list"], 7):
        _write_pointer(tmp_path, f, bad, idx.size)
        async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
            [info] = (await c.call("pi/listSessions", {}))["sessions"]
        assert info["leafId"] == idx.last_id, bad
