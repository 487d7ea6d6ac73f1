"""Every request pi-server sends to Anthropic equals pi 1.6.0's, on every model of the table at
every thinking level: branch summaries and both compaction passes (history and split turn).
pi 1.6.0's own generateBranchSummary and compact run against the loopback fake first; then
pi-server's against the same fake; the recorded bodies and beta headers are compared as sent.
Nothing is normalised: the prompts are built from the same file, so the bodies are the same
bytes' worth of JSON (key order aside, which each SDK sets its own way)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_oracle
from fake_anthropic import FakeAnthropic

from pi_server.llm.models import ANTHROPIC
from pi_server.store.index import SessionIndex
from pi_server.summaries import service
from pi_server.summaries.compaction import prepare_compaction
from pi_server.tree.paths import path_to

KEY = "sk-ant-test-0123456789abcdef"
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
FILE = ROOT / "tests" / "fixtures" / "pi16" / "02-context-edits.jsonl"
# a leaf and keep whose cut splits a turn with history before it: two requests per compaction
LEAF, KEEP = "cb846a44", 1
CASES = [(m, level) for m in sorted(ANTHROPIC) for level in LEVELS]


def _sent(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [{"body": r["body"], "beta": r["headers"].get("anthropic-beta")} for r in fake.requests]


@pytest.fixture(scope="module")
def pi_requests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    file = tmp_path_factory.mktemp("requests16") / FILE.name
    file.write_bytes(FILE.read_bytes())
    idx = SessionIndex.open(str(file))
    spec = {
        "cases": CASES,
        "branch": {"from": idx.ids[-1], "to": idx.ids[1]},
        "compaction": {"leaf": LEAF, "keep": KEEP},
    }
    with FakeAnthropic() as fake:
        pi = run_oracle("requests16.mjs", str(file), fake.url, spec, pi16=True)
        sent = _sent(fake)
    n = len(CASES)
    # in order: one branch summary per case, then per case the history and the turn prefix
    assert len(sent) == 3 * n
    return {"file": file, "pi": pi, "branchSent": sent[:n], "compactionSent": sent[n:]}


def _report(bad: list[tuple[Any, ...]], n: int) -> str:
    return f"{len(bad)} differences in {n} requests: " + "; ".join(map(str, bad[:8]))


def test_branch_summary_requests_equal_pi16(pi_requests: dict[str, Any], monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    idx = SessionIndex.open(str(pi_requests["file"]))
    assert [(c["model"], c["thinking"]) for c in pi_requests["pi"]["branch"]] == CASES

    async def ours(fake: FakeAnthropic) -> list[dict[str, Any]]:
        prepared: dict[int, Any] = {}  # what is summarized depends on the model's window alone
        for model_id, level in CASES:
            model = ANTHROPIC[model_id]
            if model.context_window not in prepared:
                prepared[model.context_window] = service.prepare(idx, idx.ids[-1], idx.ids[1], model, None, False)
            req, entries = prepared[model.context_window]
            await service.summarize(req, entries, model, level, base_url=fake.url)
        return _sent(fake)

    with FakeAnthropic() as fake:
        mine = asyncio.run(ours(fake))
    bad = []
    for (model_id, level), got, theirs in zip(CASES, mine, pi_requests["branchSent"], strict=True):
        bad += [(model_id, level, part) for part in ("body", "beta") if got[part] != theirs[part]]
    assert not bad, _report(bad, len(CASES))
    # the cases reach every shape: budgets, adaptive effort, effort markers, disabled thinking
    shapes = {(r["body"].get("thinking") or {}).get("type") for r in pi_requests["branchSent"]}
    assert shapes == {"enabled", "adaptive", "disabled", None}  # None: "off" where a model has no off
    assert any(m.get("output_config") for r in pi_requests["branchSent"] for m in r["body"]["messages"])


def test_compaction_requests_equal_pi16(pi_requests: dict[str, Any], monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    idx = SessionIndex.open(str(pi_requests["file"]))
    path = idx.read_entries(path_to(idx, idx.by_id[LEAF]))
    prep = prepare_compaction(path, KEEP)
    assert prep is not None and prep.split_turn and prep.to_summarize and prep.turn_prefix
    assert all(c["split"] for c in pi_requests["pi"]["compaction"])

    async def ours(fake: FakeAnthropic) -> list[dict[str, Any]]:
        for model_id, level in CASES:
            await service.compact(prep, ANTHROPIC[model_id], level, None, base_url=fake.url)
        return _sent(fake)

    with FakeAnthropic() as fake:
        mine = asyncio.run(ours(fake))
    assert len(mine) == len(pi_requests["compactionSent"]) == 2 * len(CASES)  # the history, then the turn prefix
    bad = []
    for n, (got, theirs) in enumerate(zip(mine, pi_requests["compactionSent"], strict=True)):
        model_id, level = CASES[n // 2]
        bad += [(model_id, level, ("history", "prefix")[n % 2], p) for p in ("body", "beta") if got[p] != theirs[p]]
    assert not bad, _report(bad, 2 * len(CASES))


def test_cases_cover_the_table() -> None:
    assert len({m for m, _ in CASES}) == len(ANTHROPIC) >= 18
    assert Path(FILE).exists()
