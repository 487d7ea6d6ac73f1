"""Live sessions: how long an editor's action takes to move a running pi's leaf, and pi's own
move to reach the editor. Real processes: pi 1.6.0 in RPC mode with pi-server's extension
(editors/pi), the loopback fake Anthropic API, the daemon started by real connectors, and an LSP
client (tests/lsp_client.py) that stamps each notification as it is read.

    python benchmarks/live.py [--runs 20]

- editor → pi: `pi/switchBranch` (no summary) sent → its reply, which pi sends once it has
  moved its in-memory leaf (checked with pi's RPC `get_tree` after each).
- pi → editor: pi's own `/tree`-style move (`navigateTree` in an extension command, sent as an
  RPC prompt) → the editor reads the `pi/sessionUpdated` carrying the new leaf. The clock starts
  when the command is written to pi's stdin, so pi's reading and running it are included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import node22  # noqa: E402
from fake_anthropic import FakeAnthropic  # noqa: E402
from live_pi import Pi, live_env  # noqa: E402
from lsp_client import server  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def measure(runs: int, tmp: Path) -> dict[str, Any]:
    seen: list[tuple[float, dict[str, Any]]] = []
    lock = threading.Lock()

    class Stamped(list):
        """The client's notification record, each note stamped as it is read."""

        def append(self, note: Any) -> None:
            if note[0] == "pi/sessionUpdated":
                with lock:
                    seen.append((time.monotonic(), note[1]))
            super().append(note)

    with FakeAnthropic() as fake:
        fake.default = ("text", "An answer.")
        env = live_env(tmp, fake.url)
        pi = Pi(node22(), env, tmp / "project", tmp / "pi.log")
        try:
            pi.prompt("First.")
            pi.prompt("Second.")
            async with server(env=env) as c:
                c.notes = Stamped(c.notes)
                session = None
                while session is None:
                    for info in (await c.call("pi/listSessions", {}))["sessions"]:
                        if info.get("live", {}).get("pid") == pi.pid:
                            session = info["session"]
                    await asyncio.sleep(0.05)
                lines = [json.loads(x) for x in Path(session).read_text().splitlines()[1:]]
                answers = [e["id"] for e in lines if e.get("message", {}).get("role") == "assistant"]
                to_pi, to_editor = [], []
                for i in range(runs):
                    target = answers[i % 2]
                    t0 = time.monotonic()
                    r = await c.call("pi/switchBranch", {"session": session, "targetId": target})
                    to_pi.append(time.monotonic() - t0)
                    assert r["leafId"] == target == await asyncio.to_thread(pi.leaf), r
                for i in range(runs):
                    target = answers[i % 2]  # the editor's loop left pi on the other one
                    with lock:
                        mark = len(seen)
                    t0 = time.monotonic()
                    done = asyncio.ensure_future(asyncio.to_thread(pi.call, "prompt", message=f"/test-goto {target}"))
                    while True:
                        assert time.monotonic() - t0 < 10, "pi's move never reached the editor"
                        with lock:
                            hit = next((t for t, p in seen[mark:] if p.get("leafId") == target), None)
                        if hit is not None:
                            break
                        await asyncio.sleep(0.001)
                    to_editor.append(hit - t0)
                    await done
        finally:
            pi.close()
    return {"runs": runs, "editorToPi": to_pi, "piToEditor": to_editor}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pi-server-live-") as tmp:
        got = asyncio.run(measure(args.runs, Path(tmp)))
    for key, what in (("editorToPi", "editor action → pi's moved leaf"), ("piToEditor", "pi's move → editor")):
        xs = got[key]
        print(
            f"{what}: p50 {statistics.median(xs) * 1000:.1f} ms, p90 {pct(xs, 0.9) * 1000:.1f} ms, "
            f"max {max(xs) * 1000:.1f} ms ({len(xs)} runs)"
        )


if __name__ == "__main__":
    main()
