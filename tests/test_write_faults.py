"""Writes under faults, with real server processes: two servers on one state dir, a disk
that fills, a state dir that cannot be written, kill -9 in the middle of writing."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, sample_store
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.store.index import SessionIndex


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    return sample_store(tmp_path)


def _args(store: dict[str, Any], *extra: str) -> list[str]:
    return ["--sessions-dir", store["root"], "--state-dir", store["state"], *extra]


def _append(path: str, entry: dict[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def _turn(path: str, n: int, done: bool) -> None:
    """pi's side of a turn: a user message (busy until its reply), or the reply."""
    last = SessionIndex.open(path).last_id
    if not done:
        msg: dict[str, Any] = {"role": "user", "content": f"turn {n}", "timestamp": n}
    else:
        msg = {
            "role": "assistant",
            "content": [{"type": "text", "text": f"reply {n}"}],
            "stopReason": "stop",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "timestamp": n,
        }
    _append(
        path,
        {
            "type": "message",
            "id": f"t{n:03d}{int(done)}xyz"[:8],
            "parentId": last,
            "timestamp": "2026-12-01T00:00:00.000Z",
            "message": msg,
        },
    )


def _lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


async def test_two_servers_on_one_state_dir_land_every_write_exactly_once(store) -> None:
    big = store["big"]
    target = SessionIndex.open(big).ids[0]
    acked: list[str] = []

    async def writes(c: Any, who: str, n: int) -> None:
        for i in range(n):
            label = f"{who}-{i}"
            await c.call("pi/setLabel", {"session": big, "targetId": target, "label": label})
            acked.append(label)
            await asyncio.sleep(0.005)

    async def pi_turns(k: int) -> None:
        for n in range(k):
            _turn(big, n, False)
            await asyncio.sleep(0.15)
            _turn(big, n, True)
            await asyncio.sleep(0.1)

    _turn(big, 900, False)  # a turn is running: the first writes queue
    async with server(*_args(store, "--busy-timeout", "8")) as a, server(*_args(store, "--busy-timeout", "8")) as b:
        await asyncio.gather(writes(a, "A", 30), writes(b, "B", 30))
        _turn(big, 900, True)
        await asyncio.gather(writes(a, "C", 40), writes(b, "D", 40), pi_turns(6))
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            pending = list((Path(store["state"]) / "pending").glob("*.json"))
            if not pending:
                break
            await asyncio.sleep(0.2)
        assert not pending, "queued writes never flushed"
    labels = [e["label"] for e in _lines(big) if e["type"] == "label" and e["label"][:2] in ("A-", "B-", "C-", "D-")]
    assert len(acked) == 140
    assert sorted(labels) == sorted(acked)  # every acknowledged write, exactly once
    ids = [e["id"] for e in _lines(big)[1:]]
    parents_ok = all(e["parentId"] in ids or e["parentId"] is None for e in _lines(big)[1:])
    assert parents_ok


async def test_disk_full_leaves_no_partial_line(store) -> None:
    big = store["big"]
    limit = os.path.getsize(big) + 40  # a part of the next line fits, not all of it

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    before = Path(big).read_bytes()
    async with server(*_args(store), preexec_fn=cap) as c:
        with pytest.raises(JsonRpcException) as info:
            await c.call("pi/setSessionName", {"session": big, "name": "x" * 200})
        assert info.value.code == -32005
        assert Path(big).read_bytes() == before  # the partial line was taken back
        _turn(big, 1, True)  # pi's next append is a whole line of its own
        await c.call("pi/getTree", {"session": big})
    idx = SessionIndex.open(big)
    assert not idx.diagnostics and idx.last_id == "t0011xyz"


async def test_state_dir_that_cannot_be_written(store) -> None:
    """A landed append is never reported failed; a switch whose state cannot be kept is."""
    big = store["big"]
    state = Path(store["state"])
    state.mkdir()
    (state / "leaves.json").mkdir()  # every write of the leaf pointers fails
    idx = SessionIndex.open(big)
    async with server(*_args(store)) as c:
        lab = await c.call("pi/setLabel", {"session": big, "targetId": idx.ids[0], "label": "kept"})
        assert lab["entryId"] == _lines(big)[-1]["id"]
        with pytest.raises(JsonRpcException) as info:
            await c.call("pi/switchBranch", {"session": big, "targetId": idx.ids[3]})
        assert info.value.code == -32005
        tree = await c.call("pi/getTree", {"session": big})
        assert tree["leafId"] == lab["entryId"]  # the leaf did not move
    assert sum(1 for e in _lines(big) if e.get("label") == "kept") == 1


async def test_kill_9_mid_write_leaves_whole_lines(store) -> None:
    big = store["big"]
    acked: list[str] = []
    async with server(*_args(store)) as c:
        pid = c.serving_pid()  # the process that writes

        async def writes() -> None:
            for i in range(10_000):
                got = await c.call("pi/setSessionName", {"session": big, "name": f"n{i}-" + "y" * 200_000})
                acked.append(got["entryId"])

        task = asyncio.ensure_future(writes())
        await asyncio.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises((JsonRpcException, ConnectionError, RuntimeError, asyncio.TimeoutError)):
            await task
    data = Path(big).read_bytes()
    assert data.endswith(b"\n")
    got = [json.loads(x) for x in data.splitlines()]  # every line whole
    assert acked and set(acked) <= {e["id"] for e in got}
    assert not SessionIndex.open(big).diagnostics


async def test_bundled_samples_are_served_read_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state"), "PI_CODING_AGENT_DIR": ""}
    files = sorted(SAMPLES.rglob("*.jsonl"))
    before = [f.read_bytes() for f in files]
    async with server(env=env) as c:
        listed = (await c.call("pi/listSessions", {}))["sessions"]
        assert {s["session"] for s in listed} == {str(f) for f in files}
        big = max(files, key=lambda f: f.stat().st_size)
        first = SessionIndex.open(str(big)).ids[0]
        for method, params in (
            ("pi/setLabel", {"targetId": first, "label": "x"}),
            ("pi/setSessionName", {"name": "x"}),
            ("pi/switchBranch", {"targetId": first, "persist": True}),
            ("pi/fork", {"leafId": first}),
        ):
            with pytest.raises(JsonRpcException) as info:
                await c.call(method, {"session": str(big), **params})
            assert info.value.code == -32005 and "--sessions-dir" in info.value.message, method
        assert (await c.call("pi/switchBranch", {"session": str(big), "targetId": first}))["leafId"] == first
    assert [f.read_bytes() for f in files] == before
    assert sorted(SAMPLES.rglob("*.jsonl")) == files
