"""Where a connector's start goes, against one running daemon (a small store):

    python benchmarks/connector.py [--runs N] [--json] [--against PYTHON]

Interleaved, one round at a time, so every side meets the same noise:
- `python -m pi_server` (as benchmarks/shared.py starts it): spawn -> `initialize` reply;
- the console script `pi-server` beside the interpreter (what editors start), the same;
- `python -c pass` and `python -S -c pass` (the interpreter without `site`, so without
  the editable install's import finder);
- the daemon alone: connect to its socket, greeting and `initialize` -> reply, in this
  process (no spawn).
Prints the medians, and the median of each round's (connector - `python -c pass`),
which moves far less with the load than either side does. `--against PYTHON` (another
checkout's environment, e.g. the main branch's) adds its `python -m pi_server` and
`python -c pass` to every round, each against its own daemon.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from stdio import Client  # noqa: E402

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}


def frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def spawn_to_reply(argv: list[str]) -> float:
    """Spawn -> the whole `initialize` reply read; then shutdown, exit and the process's end."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame(INIT))
    proc.stdin.flush()
    length = 0
    while True:
        line = proc.stdout.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    body = proc.stdout.read(length)
    took = time.perf_counter() - t0
    assert b'"capabilities"' in body, body[:200]
    proc.stdin.write(
        frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    proc.stdin.close()
    proc.stdout.read()
    proc.wait(timeout=10)
    return took


def spawn_bare(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - t0


def daemon_alone(args: list[str]) -> float:
    """The daemon's part: connect, greet, `initialize` -> reply, from this process."""
    from pi_server import rendezvous
    from pi_server.connector import parse_flags

    cfg = parse_flags(args)
    assert cfg is not None
    key = cfg.key()
    sock_path, _pid, _lock = rendezvous.paths(key)
    t0 = time.perf_counter()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(b"%s lsp %s\n" % (rendezvous.GREETING, key.encode()) + frame(INIT))
    buf = b""
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep and b"Content-Length" in head:
            length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                break
        chunk = s.recv(1 << 16)
        assert chunk, "the daemon closed"
        buf += chunk
    took = time.perf_counter() - t0
    s.close()
    return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--against", metavar="PYTHON", help="another environment's interpreter, measured alongside")
    a = ap.parse_args()
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="pi-server-bench-")
    py = sys.executable
    script = str(Path(py).parent / "pi-server")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp, "sessions")
        store.mkdir()
        args = ["--sessions-dir", str(store), "--state-dir", str(Path(tmp, "state"))]
        os.chdir(tmp)  # `-m pi_server` finds each environment's own install, not a checkout in the cwd
        warm = Client(args)  # starts the daemon and keeps it up
        warm.initialize()
        sides: dict[str, list[float]] = {"module": [], "script": [], "pass": [], "passNoSite": [], "daemon": []}
        if a.against:
            sides.update(againstModule=[], againstPass=[])
        for _ in range(3):  # warm the page cache and the daemon's first-connection work
            spawn_to_reply([py, "-m", "pi_server", *args])
            if a.against:  # its own daemon (the interpreter is part of the key)
                spawn_to_reply([a.against, "-m", "pi_server", *args])
        for _ in range(a.runs):
            if a.against:
                sides["againstModule"].append(spawn_to_reply([a.against, "-m", "pi_server", *args]))
                sides["againstPass"].append(spawn_bare([a.against, "-c", "pass"]))
            sides["module"].append(spawn_to_reply([py, "-m", "pi_server", *args]))
            if os.path.exists(script):
                sides["script"].append(spawn_to_reply([script, *args]))
            sides["pass"].append(spawn_bare([py, "-c", "pass"]))
            sides["passNoSite"].append(spawn_bare([py, "-S", "-c", "pass"]))
            sides["daemon"].append(daemon_alone(args))
        warm.close()
        for p in [py, a.against] if a.against else [py]:
            subprocess.run([p, "-m", "pi_server", "daemon", "stop", *args], capture_output=True)
    ms = {k: round(statistics.median(v) * 1000, 2) for k, v in sides.items() if v}
    out: dict[str, Any] = {f"{k}Ms": v for k, v in ms.items()}
    out["moduleMinusPassMs"] = round(
        statistics.median(m - p for m, p in zip(sides["module"], sides["pass"], strict=True)) * 1000, 2
    )
    if sides["script"]:
        out["scriptMinusPassMs"] = round(
            statistics.median(m - p for m, p in zip(sides["script"], sides["pass"], strict=True)) * 1000, 2
        )
    out["moduleOverPass"] = round(ms["module"] / ms["pass"], 2)
    if a.against:
        out["againstModuleMinusPassMs"] = round(
            statistics.median(m - p for m, p in zip(sides["againstModule"], sides["againstPass"], strict=True)) * 1000,
            2,
        )
        out["againstModuleOverPass"] = round(ms["againstModule"] / ms["againstPass"], 2)
        out["moduleOverAgainstModule"] = round(ms["module"] / ms["againstModule"], 3)
    out["runs"] = a.runs
    out["loadAverage"] = os.getloadavg()[0]
    print(json.dumps(out) if a.json else json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
