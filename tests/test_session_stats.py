"""pi/getSessionStats through a real server against pi 1.6.0's own getSessionStats: the pi16
session files, the recorded pi 1.6.0 run and the generated sessions, at their leaf and at
random leaves; `branch` against the same method over root → leaf alone."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

from conftest import run_oracle
from lsp_client import server

from pi_server.context.settings import replay
from pi_server.llm.models import anthropic_model
from pi_server.store.index import SessionIndex
from pi_server.tree.paths import path_to

PI16 = Path(__file__).resolve().parent / "fixtures" / "pi16"


def _model_at(path: str, leaf: str | None) -> str:
    """The model whose context window the server counts: pi-server's catalogue entry of the
    branch's model (pi's own catalogue knows newer models the server does not price)."""
    idx = SessionIndex.open(path)
    pos = idx.by_id[leaf] if leaf else len(idx) - 1
    return anthropic_model(replay(idx.read_entries(path_to(idx, pos))).model).id


def _files(tmp_path: Path, oracle16: dict[str, Any]) -> list[Path]:
    root = tmp_path / "sessions"
    root.mkdir()
    sources = sorted(PI16.glob("*.jsonl")) + sorted((PI16 / "recorded").glob("*.jsonl"))
    generated = [Path(f["file"]) for f in oracle16["files"] if f.get("kind") == "generated"]
    sources += random.Random(7).sample(generated, min(4, len(generated)))
    out = []
    for i, src in enumerate(sources):
        if src.name == "requests-1.6.0.jsonl":
            continue  # request bodies, not a session
        dst = root / f"{i:02d}-{src.name}"
        shutil.copyfile(src, dst)
        out.append(dst)
    return out


async def test_stats_equal_pi(tmp_path: Path, oracle16: dict[str, Any]) -> None:
    files = _files(tmp_path, oracle16)
    rng = random.Random(16)
    checked = 0
    narrower = 0
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        for f in files:
            idx = SessionIndex.open(str(f))
            leaves: list[str | None] = [None, *rng.sample(idx.ids, min(3, len(idx.ids)))]
            ours = []
            for leaf in leaves:
                params: dict[str, Any] = {"session": str(f)}
                if leaf is not None:
                    params["leafId"] = leaf
                ours.append(await c.call("pi/getSessionStats", params))
            cases = [[leaf, _model_at(str(f), leaf)] for leaf in leaves]
            theirs = run_oracle("stats16.mjs", str(f), cases, pi16=True)
            for leaf, a, b in zip(leaves, ours, theirs, strict=True):
                assert a == b, (f.name, leaf)
                checked += 1
                narrower += a["branch"]["totalMessages"] < a["totalMessages"]
    assert checked >= 4 * len(files) - 8
    assert narrower > 0  # branches exist in these files: a branch holds fewer messages than its file
