"""Shared fixtures: pi's own answers (the oracle), generated once per run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "pi"
ORACLE_SCRIPT = ROOT / "tests" / "oracle" / "generate.mjs"
CACHE = ROOT / ".oracle-cache"
SEED = int(os.environ.get("PI_ORACLE_SEED", "1"))

sys.setrecursionlimit(100_000)  # pi's getTree output nests as deep as the tree


def _have_pi() -> bool:
    return (ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir() and shutil.which("node") is not None


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
    digest = hashlib.sha256(ORACLE_SCRIPT.read_bytes()).hexdigest()[:16]
    out = CACHE / f"{digest}-{SEED}"
    manifest = out / "manifest.json"
    if not manifest.exists():
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        env = {**os.environ, "HOME": "/home/oracle"}
        subprocess.run(
            ["node", str(ORACLE_SCRIPT), str(out), "--seed", str(SEED)],
            check=True,
            cwd=ROOT,
            env=env,
            timeout=600,
        )
    return load_json(manifest)


@pytest.fixture(autouse=True)
def _oracle_home(monkeypatch: pytest.MonkeyPatch) -> None:
    # pi's tool titles shorten paths under $HOME; the oracle ran with this one
    monkeypatch.setenv("HOME", "/home/oracle")


@pytest.fixture
def decoded_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lengths of the lines the index parses from now on (to check that only new bytes are read)."""
    import pi_server.store.index as index_mod

    real = index_mod.nav_decoder
    seen: list[int] = []

    class Counting:
        def decode(self, raw: bytes) -> object:
            seen.append(len(raw))
            return real.decode(raw)

    monkeypatch.setattr(index_mod, "nav_decoder", Counting())
    return seen


def run_oracle(script: str, *args: Any, timeout: float = 300) -> Any:
    """Run one of tests/oracle/*.mjs with pi installed; its stdout is JSON."""
    argv = [a if isinstance(a, str) else json.dumps(a) for a in args]
    res = subprocess.run(
        ["node", str(ROOT / "tests" / "oracle" / script), *argv],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
    return json.loads(res.stdout)
