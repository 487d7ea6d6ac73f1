"""Long calls on a very large session against small requests on another, in one real server:

    python benchmarks/long_calls.py [--entries 1000000] [--work DIR] [--runs 3] [--json] [--against DIR]

One `pi-server serve --tcp` process (a fresh state dir each run), two raw TCP clients.
Client A runs, one after the other, on a chain of `--entries` entries: the first
`pi/getTree` of the file (its first index), `textDocument/documentSymbol`, a `pi/getTree`
window, `pi/buildContext`, `pi/compact` (against the loopback fake Anthropic API of the
tests). Meanwhile client B times small requests on a 20-entry session (a 50-row `pi/getTree`
window and `pi/listSessions`, alternately, 20 ms apart). Printed per long call: its time,
and B's p50 / p99 / max and count; the server's RSS before and after.

`--against DIR`: a folder holding another build's `pi_server` package (e.g. `git archive
<commit> pi_server | tar -x -C DIR`); each run then times that build and this one side by
side, and a table of B's worst p99 and max per long call, for both, ends the output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_anthropic import FakeAnthropicProcess  # noqa: E402
from tcp_peer import Peer, Server  # noqa: E402

TS = "2025-01-01T00:00:00.000Z"


def _user(eid: str, parent: str | None, text: str) -> str:
    msg = {"role": "user", "content": text, "timestamp": 1}
    return json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": msg})


def chain(path: Path, n: int) -> None:
    """`n` entries in one chain: user messages, then an assistant reply (so no turn runs)."""
    with open(path, "w") as f:
        f.write(json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": TS, "cwd": "/x"}) + "\n")
        prev = None
        for i in range(n - 1):
            eid = f"{i:08x}"
            f.write(_user(eid, prev, f"message {i}") + "\n")
            prev = eid
        reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop", "timestamp": 1}
        f.write(json.dumps({"type": "message", "id": f"{n - 1:08x}", "parentId": prev, "timestamp": TS, "message": reply}))
        f.write("\n")


class FastPeer(Peer):
    """A Peer that reads a large answer in linear time (the test client copies its buffer per chunk),
    and can leave it unparsed: parsing tens of megabytes holds this process's interpreter lock
    for a second or more, which would count in client B's times (measured in this process)."""

    def read_raw(self) -> bytes | None:
        buf = bytearray(self.buf)
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            buf += chunk
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = bytearray(rest)
        while len(body) < length:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            body += chunk
        self.buf = bytes(body[length:])
        return bytes(body[:length])

    def read(self) -> dict | None:
        raw = self.read_raw()
        return None if raw is None else json.loads(raw)

    def raw_reply(self, msg_id: int) -> bytes | None:
        """The unparsed response to `msg_id` (a large message is taken to be it: notifications are small)."""
        while True:
            raw = self.read_raw()
            if raw is None or len(raw) > 1 << 20:
                return raw
            msg = json.loads(raw)
            if msg.get("id") == msg_id and "method" not in msg:
                return raw


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class Small:
    """Client B's small requests, timed, until stopped."""

    def __init__(self, port: int, small: Path) -> None:
        self.peer = Peer(port, timeout=120)
        self.peer.initialize()
        self.small = small
        self.waits: list[float] = []
        self.next_id = 10
        self.last = ""
        self.slowest = ("", 0.0)

    def one(self) -> float:
        i = self.next_id
        self.next_id += 1
        self.last = "listSessions" if i % 2 else "getTree"
        if i % 2:
            self.peer.request(i, "pi/listSessions", {})
        else:
            self.peer.request(i, "pi/getTree", {"session": str(self.small), "limit": 50})
        t0 = time.monotonic()
        reply = self.peer.reply(i) or {}
        took = time.monotonic() - t0
        assert "result" in reply, reply
        return took

    def during(self, call: Any) -> tuple[Any, float, list[float]]:
        """(call's result, its time, the small requests' times while it ran)."""
        got: dict[str, Any] = {}

        def run() -> None:
            t0 = time.monotonic()
            got["reply"] = call()
            got["took"] = time.monotonic() - t0

        thread = threading.Thread(target=run)
        thread.start()
        waits = []
        self.slowest = ("", 0.0)
        while thread.is_alive():
            waits.append(self.one())
            if waits[-1] > self.slowest[1]:
                self.slowest = (self.last, waits[-1])
            time.sleep(0.02)
        thread.join()
        return got["reply"], got["took"], waits


def one_run(work: Path, big_src: Path, extra_env: dict[str, str]) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(dir=work))
    folder = tmp / "tcp-sessions" / "--x--"
    folder.mkdir(parents=True)
    big, small = folder / "big.jsonl", folder / "small.jsonl"
    shutil.copy(big_src, big)  # a copy: the compaction appends to it
    chain(small, 20)
    out: dict[str, Any] = {}
    with FakeAnthropicProcess() as fake:  # its parsing of requests would count in B's times here
        env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake", **extra_env}
        srv = Server(tmp, env=env)
        try:
            a = FastPeer(srv.port, timeout=600)
            a.initialize()
            b = Small(srv.port, small)
            for _ in range(20):  # warm: B's session indexed, its listing cached
                b.one()
            out["rssBeforeMiB"] = srv.rss_kb() / 1024
            calls = [
                ("first getTree (index)", "pi/getTree", {"session": str(big), "limit": 50}),
                ("documentSymbol", "textDocument/documentSymbol", {"textDocument": {"uri": big.as_uri()}}),
                ("getTree window", "pi/getTree", {"session": str(big), "limit": 200, "offset": 500_000}),
                ("buildContext", "pi/buildContext", {"session": str(big)}),
                ("compact", "pi/compact", {"session": str(big)}),
            ]
            peak = 0.0
            for n, (name, method, params) in enumerate(calls):
                rid = 100 + n

                def call(rid: int = rid, method: str = method, params: dict = params) -> Any:
                    a.request(rid, method, params)
                    return a.raw_reply(rid)

                raw, took, waits = b.during(call)
                reply = None if raw is None else json.loads(raw)  # parsed once B stopped timing
                assert reply is not None and "result" in reply, (name, str(reply)[:300])
                peak = max(peak, srv.rss_kb() / 1024)
                out[name] = {
                    "s": round(took, 3),
                    "n": len(waits),
                    "p50ms": round(1000 * statistics.median(waits), 1),
                    "p99ms": round(1000 * _pct(waits, 0.99), 1),
                    "maxms": round(1000 * max(waits), 1),
                    "slowest": b.slowest[0],
                }
                print(name, out[name], file=sys.stderr)
            out["rssAfterMiB"] = srv.rss_kb() / 1024
            out["compactRequests"] = fake.requests()
            a.close()
            b.peer.close()
            out["log"] = [ln for ln in srv.log.read_text().splitlines() if "took" in ln or "diag" in ln]
        finally:
            srv.close()
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _run_build(work: Path, src: Path, env: dict[str, str], folder: Path | None) -> dict[str, Any]:
    """One run of this build, or (`folder`) of the build there: the server is started from that
    folder (`python -m` puts the working folder first on the module path)."""
    if folder is None:
        return one_run(work, src, env)
    here = os.getcwd()
    os.chdir(folder)
    try:
        return one_run(work, src, {**env, "PYTHONPATH": str(folder)})
    finally:
        os.chdir(here)


CALLS = ("first getTree (index)", "documentSymbol", "getTree window", "buildContext", "compact")


def _table(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Client B's worst p99 and max (ms) per long call over the runs, per build; RSS after (MiB)."""
    names = list(runs)
    lines = [f"{'long call':24}" + "".join(f"{n + ' p99':>14}{n + ' max':>14}" for n in names)]
    for call in CALLS:
        row = f"{call:24}"
        for n in names:
            row += f"{max(r[call]['p99ms'] for r in runs[n]):>14.0f}{max(r[call]['maxms'] for r in runs[n]):>14.0f}"
        lines.append(row)
    lines.append(f"{'RSS after (MiB)':24}" + "".join(f"{max(r['rssAfterMiB'] for r in runs[n]):>28.0f}" for n in names))
    lines.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "pi-bench-long"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--env", action="append", default=[], help="K=V for the server's environment")
    ap.add_argument("--against", help="a folder holding another build's pi_server package, timed side by side")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"chain-{args.entries}.jsonl"
    if not src.exists():
        print(f"generating {src} ...", file=sys.stderr)
        chain(src.with_suffix(".tmp"), args.entries)
        src.with_suffix(".tmp").rename(src)
    env = dict(kv.split("=", 1) for kv in args.env)
    builds = {"this": None} if args.against is None else {"before": Path(args.against).resolve(), "this": None}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in builds}
    for i in range(args.runs):
        for name, folder in builds.items():
            print(f"run {i + 1}/{args.runs} ({name}), load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
            runs[name].append(_run_build(work.resolve(), src.resolve(), env, folder))
            for ln in runs[name][-1].pop("log"):
                print("  log:", ln[-200:], file=sys.stderr)
    print(_table(runs))
    if args.json:
        print(json.dumps(runs if args.against else runs["this"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
