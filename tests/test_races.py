"""Races and tears with real processes: symlinks swapped while a server reads and writes,
kill -9 in the middle of a write, two servers flushing around pi's turns.

Each test runs a bounded number of rounds (and stops at a time limit); the counts
it prints are the figures the fixes are measured by.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, node22
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.agent.tools import run_local

SECRET = "SECRET-OUTSIDE-7f3a"
INSIDE = "INSIDE-PROJECT-7f3a"  # as long as SECRET: the two files have the same layout

# flips `target` between a regular file (mode "file": a hard link to `inside`) or a symlink to
# `inside` (mode "link", for a folder), and a symlink to `outside`, until `stop` exists
SWAPPER = r"""
import os, sys, time
mode, target, inside, outside, stop, budget = sys.argv[1:7]
tmp = target + ".swap"
end = time.monotonic() + float(budget)
while time.monotonic() < end and not os.path.exists(stop):
    try:
        os.symlink(outside, tmp); os.replace(tmp, target)
        os.link(inside, tmp) if mode == "file" else os.symlink(inside, tmp)
        os.replace(tmp, target)
    except OSError:
        try: os.unlink(tmp)
        except OSError: pass
"""


class Swapper:
    def __init__(self, tmp: Path, mode: str, target: Path, inside: Path, outside: Path, budget: float) -> None:
        self.stop = tmp / f"stop-{target.name}"
        self.target, self.inside, self.mode = target, inside, mode
        args = [mode, str(target), str(inside), str(outside), str(self.stop), str(budget)]
        self.proc = subprocess.Popen([sys.executable, "-c", SWAPPER, *args])

    def finish(self) -> None:
        self.stop.touch()
        self.proc.wait(timeout=30)
        self.target.unlink(missing_ok=True)
        os.link(self.inside, self.target) if self.mode == "file" else self.target.symlink_to(self.inside)


def _session(marker: str, filler: int = 60) -> str:
    """A small session whose first user message holds `marker`, then entries enough that the
    file's last 4 KiB (its fingerprint) never see the marker."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "sess-0001", "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "u0000001",
            "parentId": None,
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": marker}], "timestamp": 1},
        },
    ]
    parent = "u0000001"
    for n in range(filler):
        eid = f"a{n:07d}"
        msg = {"role": "assistant", "content": [{"type": "text", "text": f"reply {n} " + "x" * 80}]}
        msg |= {"stopReason": "stop", "provider": "anthropic", "model": "claude-sonnet-4-5", "timestamp": 2 + n}
        lines.append(
            {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-12-01T10:00:02.000Z", "message": msg}
        )
        parent = eid
    return "".join(json.dumps(x) + "\n" for x in lines)


@pytest.fixture
def swap_store(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "sessions"
    proj = root / "--p--"
    proj.mkdir(parents=True)
    real = proj / "real.jsonl"
    real.write_text(_session(INSIDE))
    target = proj / "s.jsonl"
    os.link(real, target)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.jsonl").write_text(_session(SECRET))
    return {"root": root, "proj": proj, "real": real, "target": target, "outside": outside, "state": tmp_path / "state"}


def _args(s: dict[str, Path], *extra: str) -> list[str]:
    return ["--sessions-dir", str(s["root"]), "--state-dir", str(s["state"]), *extra]


async def _try(c: Any, method: str, params: dict[str, Any]) -> Any:
    try:
        return await c.call(method, params)
    except JsonRpcException as e:
        return {"error": e.code}


async def test_session_swapped_for_a_symlink_out_of_the_roots(tmp_path: Path, swap_store: dict[str, Path]) -> None:
    """Reads and labels of a session file flipped between itself and a symlink to a file
    outside the roots: no read returns the outside file's data, no label lands in it."""
    s = swap_store
    target, outside_file = str(s["target"]), s["outside"] / "o.jsonl"
    before = outside_file.read_bytes()
    async with server(*_args(s)) as c:
        tree = await c.call("pi/getTree", {"session": target})
        assert tree["total"] > 0
        sw = Swapper(tmp_path, "file", s["target"], s["real"], outside_file, 20)
        leaks = reads = labels = 0
        try:
            deadline = time.monotonic() + 4
            while reads < 4000 and time.monotonic() < deadline:  # 50 at a time: back to back in the server
                batch = [_try(c, "pi/getEntry", {"session": target, "id": "u0000001"}) for _ in range(50)]
                for got in await asyncio.gather(*batch):
                    reads += 1
                    leaks += SECRET in json.dumps(got)
            deadline = time.monotonic() + 3
            while labels < 1000 and time.monotonic() < deadline:
                label = {"session": target, "targetId": "u0000001"}
                await asyncio.gather(*[_try(c, "pi/setLabel", {**label, "label": f"L{labels + k}"}) for k in range(20)])
                labels += 20
        finally:
            sw.finish()
    grown = outside_file.read_bytes()[len(before) :].count(b"\n")
    print(f"{leaks} of {reads} reads returned outside data; {grown} of {labels} labels appended outside")
    assert reads >= 200 and labels >= 50
    assert leaks == 0
    assert outside_file.read_bytes() == before


async def test_project_folder_swapped_during_forks(tmp_path: Path, swap_store: dict[str, Path]) -> None:
    """Forks while the session's folder flips between itself and a symlink out of the roots:
    no fork is created outside."""
    s = swap_store
    shutil.copy(s["outside"] / "o.jsonl", s["outside"] / "s.jsonl")  # the swapped folder reads alike
    real = s["root"] / ".p-real"  # the folder is a symlink to this one, inside the roots
    s["proj"].rename(real)
    s["proj"].symlink_to(real)
    target = str(s["target"])
    async with server(*_args(s)) as c:
        await c.call("pi/getTree", {"session": target})
        sw = Swapper(tmp_path, "link", s["proj"], real, s["outside"], 20)
        forks = made = 0
        try:
            deadline = time.monotonic() + 4
            while forks < 300 and time.monotonic() < deadline:
                got = await _try(c, "pi/fork", {"session": target, "leafId": "a0000003"})
                forks += 1
                made += "session" in got
        finally:
            sw.finish()
    escaped = [p.name for p in s["outside"].iterdir() if p.name not in ("o.jsonl", "s.jsonl")]
    print(f"{len(escaped)} of {forks} forks ({made} answered) created outside the roots")
    assert forks >= 30
    assert escaped == []


def test_tools_race_a_symlink_swap(tmp_path: Path) -> None:
    """The agent's read and grep while a file (and a folder) of the cwd flip to symlinks out of
    it: the outside file's text never comes back."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET + "\n")
    keep = cwd / ".keep.txt"
    keep.write_text(INSIDE + "\n")
    os.link(keep, cwd / "f.txt")
    (cwd / ".sub-real").mkdir()
    (cwd / ".sub-real" / "f.txt").write_text(INSIDE + "\n")
    (cwd / "sub").symlink_to(cwd / ".sub-real")
    files = Swapper(tmp_path, "file", cwd / "f.txt", keep, outside / "f.txt", 30)
    folder = Swapper(tmp_path, "link", cwd / "sub", cwd / ".sub-real", outside, 30)
    calls = leaks = 0
    try:
        deadline = time.monotonic() + 6
        plan = [
            ("read", {"path": "f.txt"}),
            ("grep", {"pattern": "7f3a", "path": "f.txt"}),
            ("read", {"path": "sub/f.txt"}),
            ("grep", {"pattern": "7f3a", "path": "sub", "context": 1}),
            ("find", {"pattern": "*.txt", "path": "sub"}),
        ]
        while calls < 1000 and time.monotonic() < deadline:
            name, a = plan[calls % len(plan)]
            result, _ = run_local(name, a, str(cwd), timeout=10)
            calls += 1
            leaks += SECRET in json.dumps(result)
    finally:
        files.finish()
        folder.finish()
    print(f"{leaks} of {calls} tool calls returned the outside file")
    assert calls >= 100
    assert leaks == 0


# ---------------------------------------------------------------- kill -9 during a large append

KILLER = r"""
import os, re, signal, sys, time
pid, path, size, budget = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
end = time.monotonic() + budget
while time.monotonic() < end:
    if os.stat(path).st_size != size:  # the append has begun: kill it part way
        os.kill(pid, signal.SIGKILL)
        print("killed", flush=True)
        break
"""


class Raw:
    """A pi-server process over stdio with a bare JSON-RPC client: nothing waits on it once killed."""

    def __init__(self, args: list[str]) -> None:
        cmd = [sys.executable, "-m", "pi_server", *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The response (result or error), or None when the server died first."""
        assert self.proc.stdout is not None
        self.next_id += 1
        try:
            self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        except BrokenPipeError:
            return None
        while True:
            size = 0
            while (line := self.proc.stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    size = int(line.split(b":")[1])
            if not line:
                return None
            msg = json.loads(self.proc.stdout.read(size))
            if msg.get("id") == self.next_id and "method" not in msg:
                return msg

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


class Pi:
    """pi 1.6.0's SessionManager in a node process (tests/oracle/pi_session.mjs)."""

    def __init__(self) -> None:
        script = ROOT / "tests" / "oracle" / "pi_session.mjs"
        self.proc = subprocess.Popen(
            [node22(), str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )

    def ask(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        assert "error" not in out, out
        return out

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


def test_kill_during_a_large_label_then_pis_append(swap_store: dict[str, Path]) -> None:
    """kill -9 of a server while it appends a large label, then pi's next append (pi's own
    SessionManager, loaded before) or a restarted server's: the next entry is never glued
    onto a partial line and lost."""
    s = swap_store
    target = str(s["real"])
    pi = Pi()
    mine: list[str] = []
    rounds = kills = 0
    try:
        pi.ask(f"open {target}")
        deadline = time.monotonic() + 30
        while rounds < 5 and time.monotonic() < deadline:
            rounds += 1
            srv = Raw(_args(s))
            try:
                srv.call("pi/getTree", {"session": target})
                size = str(os.path.getsize(target))
                killer = subprocess.Popen(
                    [sys.executable, "-c", KILLER, str(srv.proc.pid), target, size, "20"],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                big = "L" * (16 << 20)  # 16 MB: a write long enough that the kill lands inside it
                srv.call("pi/setLabel", {"session": target, "targetId": "u0000001", "label": big})
                kills += "killed" in (killer.communicate(timeout=30)[0] or "")
            finally:
                srv.close()
            if rounds % 2 == 0:  # the next append is pi-server's own, after a restart
                srv = Raw(_args(s))
                try:
                    got = srv.call("pi/setLabel", {"session": target, "targetId": "u0000001", "label": "after"})
                    mine.append((got or {}).get("result", {}).get("entryId") or "no answer")
                finally:
                    srv.close()
            mine.append(pi.ask(f"append pi entry {rounds}")["id"])
        seen = set(pi.ask(f"ids {target}")["ids"])
    finally:
        pi.close()
    lost = [i for i in mine if i not in seen]
    from pi_server.store.index import SessionIndex

    ours = set(SessionIndex.open(target).ids)
    print(f"{kills} kills in {rounds} rounds; {len(lost)} of {len(mine)} next entries lost")
    assert kills >= 3
    assert lost == []
    assert all(i in ours for i in mine)  # pi-server reads them too


# ---------------------------------------------------------------- temp files of killed writes

TEMP = re.compile(r"\..+\.[a-z0-9_]{8}")

WATCHER = r"""
import os, re, signal, sys, time
pid, folder, budget = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
name = re.compile(r"\..+\.jsonl\.[a-z0-9_]{8}")
end = time.monotonic() + budget
old = set(os.listdir(folder))
while time.monotonic() < end:
    if any(name.fullmatch(n) for n in set(os.listdir(folder)) - old):  # a fork is being written: kill it
        os.kill(pid, signal.SIGKILL)
        print("killed", flush=True)
        break
"""


def _temps(*folders: Path) -> list[Path]:
    return [p for f in folders if f.is_dir() for p in f.rglob("*") if TEMP.fullmatch(p.name) and p.is_file()]


def test_temp_files_of_killed_writes_are_cleaned_at_start(swap_store: dict[str, Path]) -> None:
    s = swap_store
    big = s["proj"] / "big.jsonl"
    big.write_text(_session("big", filler=40_000))  # a fork of it takes a while to write
    kills = 0
    for _ in range(3):
        srv = Raw(_args(s))
        try:
            srv.call("pi/getTree", {"session": str(big)})
            watcher = subprocess.Popen(
                [sys.executable, "-c", WATCHER, str(srv.proc.pid), str(s["proj"]), "20"],
                stdout=subprocess.PIPE,
                text=True,
            )
            srv.call("pi/fork", {"session": str(big), "leafId": "a0039000"})
            kills += "killed" in (watcher.communicate(timeout=30)[0] or "")
        finally:
            srv.close()
    left = _temps(s["proj"], s["state"])
    print(f"{kills} kills left {len(left)} temp files, {sum(p.stat().st_size for p in left)} bytes")
    assert kills >= 1 and left
    srv = Raw(_args(s))
    try:
        deadline = time.monotonic() + 20
        while _temps(s["proj"], s["state"]) and time.monotonic() < deadline:
            srv.call("pi/listSessions", {})
            time.sleep(0.1)
        assert _temps(s["proj"], s["state"]) == []
        assert (srv.call("pi/getTree", {"session": str(big)}) or {}).get("result", {}).get("total")
    finally:
        srv.close()


# ---------------------------------------------------------------- two servers and pi's turns


def _pi_message(path: str, eid: str, parent: str | None, role: str, n: int) -> None:
    msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": f"turn {n}"}], "timestamp": n}
    if role == "assistant":
        msg |= {"stopReason": "stop", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    line = {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-12-01T11:00:00.000Z", "message": msg}
    with open(path, "a") as fh:  # one write, O_APPEND: as pi's appendFileSync
        fh.write(json.dumps(line) + "\n")


async def test_two_servers_wait_for_pis_turn_to_end(tmp_path: Path, swap_store: dict[str, Path]) -> None:
    """Writes queued on two servers sharing a state dir, while pi runs turn after turn: none
    lands inside a turn (as a child of pi's user message), whichever server flushes it."""
    s = swap_store
    big = str(s["real"])
    users: set[str] = set()
    last = "a0000059"

    def pi(role: str, n: int) -> None:
        nonlocal last
        eid = f"{'u' if role == 'user' else 'r'}{n:07d}"
        _pi_message(big, eid, last, role, n)
        last = eid
        if role == "user":
            users.add(eid)

    pi("user", 0)  # a turn runs: the writes queue
    async with server(*_args(s, "--busy-timeout", "20")) as a, server(*_args(s, "--busy-timeout", "20")) as b:
        for c in (a, b):
            await c.call("pi/getTree", {"session": big})
        for k in range(60):
            got = await (a if k % 2 else b).call(
                "pi/setLabel", {"session": big, "targetId": "u0000001", "label": f"Q{k}"}
            )
            assert got["queued"]
        for n in range(1, 6):  # pi ends its turn and starts the next one at once
            pi("assistant", n)
            await asyncio.sleep(0.005)
            pi("user", n)
            await asyncio.sleep(0.3)
        pi("assistant", 99)  # the last turn ends: the rest may land
        deadline = time.monotonic() + 20
        while list((s["state"] / "pending").glob("*.json")) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    entries = [json.loads(x) for x in Path(big).read_text().splitlines()[1:]]
    labels = [e for e in entries if e["type"] == "label" and e.get("label", "").startswith("Q")]
    inside = [e for e in labels if e["parentId"] in users]
    print(f"{len(inside)} of {len(labels)} queued writes landed inside pi's turns")
    assert len(labels) == 60
    assert inside == []
