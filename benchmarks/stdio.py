"""pi-server over stdio, as an editor runs it: spawn, initialize, requests, timed.

A plain blocking JSON-RPC client (Content-Length framing, orjson), so what is
timed is the server and the pipe, not a client library. One measurement per fresh server:

    python benchmarks/stdio.py measure FILE [--leaf10k ID]

prints one JSON object: spawn -> `initialize` reply, spawn -> first answer
(a 200-row `/tree` window at the leaf plus the leaf's context, over the pipe),
RSS after indexing, warm 200-row windows p50/p99 (gutters shared per window, as the
editors ask) and warm `pi/buildContext`, these two
timed to the answer's last byte (decoding is the client's: this one decodes with orjson,
or with json.loads when an answer holds a lone surrogate, ~10 ms for a 260 KB window).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Client:
    """One pi-server process on pipes; notifications are counted and dropped."""

    def __init__(self, args: list[str]) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_server", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.notifications: list[tuple[float, dict[str, Any]]] = []
        self.last_byte = 0.0

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        out = self.proc.stdout
        assert out is not None
        length = 0
        while True:
            line = out.readline()
            if not line:
                raise EOFError("server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = out.read(length)
        self.last_byte = time.perf_counter()  # warm answers are timed to here: decoding is the client's
        try:  # as an editor decodes: fast (VS Code: JSON.parse)
            return orjson.loads(body)
        except orjson.JSONDecodeError:  # a lone surrogate, which JSON.parse keeps and orjson refuses
            return json.loads(body)

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            if "method" in msg:
                self.notifications.append((time.perf_counter(), msg))
                if "id" in msg:  # a server request (progress token): accept it
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def initialize(self, options: dict[str, Any] | None = None) -> Any:
        res = self.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": None, "capabilities": {}, "initializationOptions": options or {}},
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return res

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def startup(state: str) -> dict[str, float]:
    """spawn -> `initialize` reply, on an empty store: the first start with this state dir,
    then a usual start (the same client again)."""
    took = []
    with tempfile.TemporaryDirectory() as empty:  # nothing to index
        for _ in range(2):
            c = Client(["--sessions-dir", empty, "--state-dir", state])
            c.initialize()
            took.append(time.perf_counter() - c.t0)
            c.request("pi/listSessions", {})  # the server works after it
            took.append(time.perf_counter() - c.t0)
            c.close()
    return {
        "initializeFirstSeconds": took[0],
        "initializeSeconds": took[2],
        "firstRequestAfterSpawnSeconds": took[3],
    }


def measure(path: str, leaf10k: str | None) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as state,
        tempfile.TemporaryDirectory(dir=Path(path).parent) as roots,
    ):
        project = Path(roots) / "--home-dev-projects-big-monorepo--"  # pi's layout: one folder per cwd
        project.mkdir()
        session = str(project / Path(path).name)
        os.link(Path(path).resolve(), session)  # a hard link: roots are checked on real paths
        res: dict[str, Any] = startup(state)
        c = Client(["--sessions-dir", roots, "--state-dir", state])
        c.initialize()
        t_init = time.perf_counter() - c.t0
        s = time.perf_counter()
        tree = c.request("pi/getTree", {"session": session, "limit": 200, "offset": 0})
        ctx = c.request("pi/buildContext", {"session": session})
        first = time.perf_counter()
        res.update(
            initializeSeconds2=t_init,
            firstAnswerAfterInitSeconds=first - s,
            firstAnswerFromSpawnSeconds=first - c.t0,
            rssBytes=rss_of(c.proc.pid),
            rowsTotal=tree["total"],
            contextMessages=len(ctx["messages"]),
        )
        rnd = random.Random(7)
        lat = []
        for _ in range(200):
            off = rnd.randrange(0, max(1, tree["total"] - 200))
            s = time.perf_counter()
            c.request("pi/getTree", {"session": session, "offset": off, "limit": 200, "sharedGutters": True})
            lat.append(c.last_byte - s)
        lat.sort()
        res.update(windowP50Seconds=statistics.median(lat), windowP99Seconds=lat[int(len(lat) * 0.99) - 1])
        if leaf10k:
            c.request("pi/buildContext", {"session": session, "leafId": leaf10k})
            bc = []
            for _ in range(15):
                s = time.perf_counter()
                r = c.request("pi/buildContext", {"session": session, "leafId": leaf10k})
                bc.append(c.last_byte - s)
            res.update(buildContext10kP50Seconds=statistics.median(bc), buildContext10kMessages=len(r["messages"]))
        c.close()
    return res


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "measure":
        sys.exit(__doc__)
    leaf = sys.argv[sys.argv.index("--leaf10k") + 1] if "--leaf10k" in sys.argv else None
    print(json.dumps(measure(sys.argv[2], leaf)))
