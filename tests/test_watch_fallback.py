"""When the OS refuses to watch, the server says so once and polls, so views stay correct.

Reproduction: the server runs in its own user namespace whose inotify limit is set to 0
(`/proc/sys/user/max_inotify_instances` or `max_inotify_watches`, which a namespace's
owner may lower for itself). inotify then fails for the server exactly as on a machine
whose limit is used up, while every other process keeps the global limit untouched.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_client import server

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
CLONE_NEWUSER = 0x10000000


def _namespaces_work() -> bool:
    probe = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    shutil.which("unshare") is None or not _namespaces_work(), reason="no unprivileged user namespaces"
)


def _limited(sysctl: str) -> Any:
    uid, gid = os.getuid(), os.getgid()

    def enter() -> None:  # in the child between fork and exec: single-threaded, as unshare needs
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        with open(f"/proc/sys/user/{sysctl}", "w") as f:
            f.write("0")

    return enter


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    files = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return {"root": str(root), "state": str(tmp_path / "state"), "files": [str(f) for f in files]}


@pytest.mark.parametrize(
    ("sysctl", "limit"),
    [
        ("max_inotify_instances", "fs.inotify.max_user_instances"),
        ("max_inotify_watches", "fs.inotify.max_user_watches"),
    ],
)
async def test_no_inotify_warns_once_and_polls(store, sysctl: str, limit: str) -> None:
    f = store["files"][0]
    argv = ["--sessions-dir", store["root"], "--state-dir", store["state"]]
    async with server(*argv, preexec_fn=_limited(sysctl)) as c:
        before = await c.call("pi/getTree", {"session": f, "filter": "all"})
        entry = {
            "type": "custom",
            "id": "feed0001",
            "parentId": before["leafId"],
            "timestamp": "2026-12-01T00:00:00.000Z",
            "customType": "x",
        }
        with open(f, "a") as fh:
            fh.write(json.dumps(entry) + "\n")
        t0 = time.monotonic()
        upd = await c.wait_for("pi/sessionUpdated", timeout=10)
        print(f"append seen by polling after {time.monotonic() - t0:.2f} s")
        assert upd == {"session": f, "appended": ["feed0001"], "leafId": "feed0001", "reset": False}
        tree = await c.call("pi/getTree", {"session": f, "filter": "all"})
        assert tree["total"] == before["total"] + 1 and tree["leafId"] == "feed0001"
        new = Path(store["root"]) / "--home-demo-notes--" / "2026-12-01T00-00-00-000Z_new.jsonl"
        shutil.copy(store["files"][1], new)
        await c.wait_for("pi/sessionsChanged", lambda p: str(new) in p["added"])
        new.unlink()
        await c.wait_for("pi/sessionsChanged", lambda p: str(new) in p["removed"])
        warnings = [m.message for m in c.lc.messages if "cannot watch" in m.message]
        assert len(warnings) == 1, c.lc.messages
        assert limit in warnings[0] and "every 1 s" in warnings[0]
