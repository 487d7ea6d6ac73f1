"""Every request pi-server sends to Anthropic equals pi 1.6.0's, on every model of the table at
every thinking level: branch summaries, both compaction passes (history and split turn) and
agent turns. pi 1.6.0's own generateBranchSummary, compact and AgentSession (setModel,
setThinkingLevel, prompt) run against the loopback fake first; then pi-server's against the same
fake (turns: the body a turn sends, from the session file pi wrote, at each prompt). The recorded
bodies and beta headers are compared as sent. Nothing is normalised: the prompts come from the
same files, so the bodies are the same JSON (key order aside, which each SDK sets its own way)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_oracle
from fake_anthropic import FakeAnthropic
from lsp_client import server

from pi_server.agent.tooldefs import READ_ONLY, TOOL_ORDER
from pi_server.agent.turn import Hooks, Snapshot, Turn
from pi_server.llm.formats import context_result
from pi_server.llm.models import ANTHROPIC, anthropic_model, clamp_thinking_level
from pi_server.store.index import SessionIndex
from pi_server.summaries import service
from pi_server.summaries.compaction import prepare_compaction
from pi_server.summaries.prompts import SUMMARIZATION_SYSTEM_PROMPT
from pi_server.tree.paths import path_to

KEY = "sk-ant-test-0123456789abcdef"
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
FILE = ROOT / "tests" / "fixtures" / "pi16" / "02-context-edits.jsonl"
# a leaf and keep whose cut splits a turn with history before it: two requests per compaction
LEAF, KEEP = "cb846a44", 1
CASES = [(m, level) for m in sorted(ANTHROPIC) for level in LEVELS]
PACKAGE_DIR = "/opt/pi/node_modules/@earendil-works/pi-coding-agent"


def _sent(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [{"body": r["body"], "beta": r["headers"].get("anthropic-beta")} for r in fake.requests]


@contextmanager
def _package_dir() -> Iterator[None]:
    """pi's install folder, named in its system prompt: the same for pi and pi-server."""
    old = os.environ.get("PI_PACKAGE_DIR")
    os.environ["PI_PACKAGE_DIR"] = PACKAGE_DIR
    try:
        yield
    finally:
        if old is None:
            del os.environ["PI_PACKAGE_DIR"]
        else:
            os.environ["PI_PACKAGE_DIR"] = old


@pytest.fixture(scope="module")
def pi_requests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    file = tmp_path_factory.mktemp("requests16") / FILE.name
    file.write_bytes(FILE.read_bytes())
    idx = SessionIndex.open(str(file))
    home = file.parent / "home"
    for d in ("project", "home/agent", "sessions"):
        (file.parent / d).mkdir(parents=True)
    (home / "agent" / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": KEY}}))
    # a small kept tail, so /compact after the prompts has something to summarize
    (home / "agent" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 10}}))
    spec = {
        "cases": CASES,
        "branch": {"from": idx.ids[-1], "to": idx.ids[1]},
        "compaction": {"leaf": LEAF, "keep": KEEP},
        "turns": {
            "cwd": str(file.parent / "project"),
            "agentDir": str(home / "agent"),
            "sessionDir": str(file.parent / "sessions"),
            "text": "Say hi.",
            # the tools pi-server gives a turn when the editor runs none of its own
            "tools": [t for t in TOOL_ORDER if t in READ_ONLY],
        },
    }
    with FakeAnthropic() as fake, _package_dir():
        pi = run_oracle("requests16.mjs", str(file), fake.url, spec, pi16=True)
        sent = _sent(fake)
    n = len(CASES)
    # in order: one branch summary per case, then per case the history and the turn prefix, then
    # the turns (the session's own compaction among them: pi's summarization prompt as its system)
    turns = [r for r in sent[3 * n :] if r["body"].get("system", [{}])[0].get("text") != SUMMARIZATION_SYSTEM_PROMPT]
    assert len(sent) > 4 * n + 2 and len(turns) == n + 2
    return {
        "file": file,
        "pi": pi,
        "branchSent": sent[:n],
        "compactionSent": sent[n : 3 * n],
        "turnSent": turns,
    }


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


def _turn_body(idx: SessionIndex, user_id: str) -> dict[str, Any]:
    """What a turn prompted at the leaf before `user_id` sends: pi/prompt's snapshot of the file
    there, the user message, and the turn's own body."""
    entry = idx.read_entry(idx.by_id[user_id])
    ctx = context_result(idx, entry["parentId"], fmt="llm")
    snap = Snapshot(ctx["messages"], anthropic_model(ctx["model"]), ctx["thinkingLevel"] or "off", [], None, "")
    turn = Turn("t", snap, KEY, Hooks(_unused, _unused, _unused, _unused, _unused))
    turn.messages.append(entry["message"])
    return turn.body()


def _unused(*_: Any) -> Any:
    raise AssertionError("building a body calls no hook")


def test_turn_requests_equal_pi16(pi_requests: dict[str, Any], monkeypatch) -> None:
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    turns = pi_requests["pi"]["turns"]
    idx = SessionIndex.open(turns["file"])
    assert [(t["model"], t["thinking"]) for t in turns["prompts"]] == [*CASES, CASES[-1], CASES[-1]]
    bad = []
    for t, theirs in zip(turns["prompts"], pi_requests["turnSent"], strict=True):
        body = _turn_body(idx, t["userId"])
        beta = ",".join(body.pop("betas", [])) or None
        bad += [
            (t["model"], t["thinking"], p)
            for p, ok in (("body", body == theirs["body"]), ("beta", beta == theirs["beta"]))
            if not ok
        ]
    assert not bad, _report(bad, len(CASES) + 2)
    # after the branch summary, the summary and the prompt go out as two user messages
    roles = [m["role"] for m in pi_requests["turnSent"][-1]["body"]["messages"]]
    assert any(a == b == "user" for a, b in zip(roles, roles[1:], strict=False)), roles
    # pi clamps a level the model lacks ("off" on claude-fable-5 is "minimal"), and so do we
    assert any(t["effective"] != t["thinking"] for t in turns["prompts"])
    for t in turns["prompts"]:
        assert clamp_thinking_level(ANTHROPIC[t["model"]], t["thinking"]) == t["effective"], t


async def test_new_session_turn_through_the_server(pi_requests: dict[str, Any]) -> None:
    """A real server's first turn in a new session equals pi's first prompt (claude-fable-5 at
    "off", which pi runs at "minimal"), request and beta header."""
    base = pi_requests["file"].parent
    home = base / "server-home"
    (home / "agent").mkdir(parents=True)
    settings = {"defaultProvider": "anthropic", "defaultModel": CASES[0][0], "defaultThinkingLevel": CASES[0][1]}
    (home / "agent" / "settings.json").write_text(json.dumps(settings))
    env = {
        "HOME": str(home),
        "ANTHROPIC_API_KEY": KEY,
        "PI_CODING_AGENT_DIR": str(home / "agent"),
        "PI_PACKAGE_DIR": PACKAGE_DIR,
    }
    with FakeAnthropic() as fake:
        env["ANTHROPIC_BASE_URL"] = fake.url
        argv = ["--sessions-dir", str(base / "server-sessions"), "--state-dir", str(base / "server-state")]
        async with server(*argv, env=env) as c:
            r = await c.call("pi/prompt", {"cwd": str(base / "project"), "text": "Say hi."})
            await c.wait_for(
                "pi/agentEvent", lambda p: p["turnId"] == r["turnId"] and p["event"]["type"] == "agent_end", 90
            )
        (ours,) = _sent(fake)
    theirs = pi_requests["turnSent"][0]
    assert ours["beta"] == theirs["beta"]
    assert ours["body"] == theirs["body"]
    assert theirs["body"]["output_config"] == {"effort": "low"}  # "minimal" on an adaptive model


def test_cases_cover_the_table() -> None:
    assert len({m for m, _ in CASES}) == len(ANTHROPIC) >= 18
    assert Path(FILE).exists()
