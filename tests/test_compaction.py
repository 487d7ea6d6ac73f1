"""Compaction: the cut, what is summarized, the requests and the entry equal pi 1.6.0's
prepareCompaction / compact / appendCompaction (both against the same loopback fake Anthropic API)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic

from pi_server.context.build import context_for_path
from pi_server.llm.models import ANTHROPIC
from pi_server.llm.transcript import current_system_message
from pi_server.server.options import CompactionSettings
from pi_server.store.index import SessionIndex
from pi_server.summaries import compaction, service
from pi_server.summaries.compaction import prepare_compaction
from pi_server.tree.paths import path_to

KEY = "sk-ant-test-0123456789abcdef"
MODEL = ANTHROPIC["claude-sonnet-4-5"]


def _calls(prep: dict[str, Any] | None) -> int:
    """How many requests pi's compact sent for a preparation (history, then turn prefix)."""
    if prep is None:
        return 0
    split = prep["isSplitTurn"] and bool(prep["turnPrefixMessages"])
    return (1 if prep["messagesToSummarize"] or not split else 0) + (1 if split else 0)


@pytest.fixture(scope="module")
def pi_compactions(oracle16: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    rnd = random.Random(9)
    out = []
    with FakeAnthropic() as fake:
        for f in [f for f in oracle16["files"] if f["kind"] in ("generated", "pi16")][:12]:
            idx = SessionIndex.open(f["file"])
            cases = [
                {
                    "leaf": rnd.choice(idx.ids),
                    "keep": rnd.choice([1, 100, 300, 800, 2500, 20000]),
                    "thinking": rnd.choice(["off", "low", "medium", "high"]),
                    "custom": rnd.choice([None, None, "keep the paths"]),
                }
                for _ in range(6)
            ]
            cases.append({"leaf": idx.ids[-1], "keep": 500, "thinking": "off", "custom": None})
            fake.requests.clear()
            got = run_oracle("compaction.mjs", f["file"], fake.url, cases, pi16=True)
            it = iter(list(fake.requests))
            for case in got:
                case["requests"] = [next(it) for _ in range(_calls(case["prep"]))]
            assert next(it, None) is None
            out.append((f["file"], got))
    return out


def test_preparation_requests_and_entry_equal_pi(pi_compactions, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    checked = split = none = system = 0
    with FakeAnthropic() as fake:
        for file, cases in pi_compactions:
            idx = SessionIndex.open(file)
            for case in cases:
                path = idx.read_entries(path_to(idx, idx.by_id[case["leaf"]]))
                prep = prepare_compaction(path, case["keep"])
                where = (file, case["leaf"], case["keep"])
                if case["prep"] is None:
                    assert prep is None, where
                    none += 1
                    continue
                want = case["prep"]
                assert prep is not None, where
                assert prep.first_kept_entry_id == want["firstKeptEntryId"], where
                assert prep.to_summarize == want["messagesToSummarize"], where
                assert prep.turn_prefix == want["turnPrefixMessages"], where
                assert prep.split_turn == want["isSplitTurn"] and prep.tokens_before == want["tokensBefore"], where
                assert prep.previous_summary == want["previousSummary"], where
                assert (prep.read_files, prep.modified_files) == (want["readFiles"], want["modifiedFiles"]), where
                fake.requests.clear()
                summary, source, usage = asyncio.run(
                    service.compact(prep, MODEL, case["thinking"], case["custom"], base_url=fake.url)
                )
                assert source == "anthropic"
                assert [r["body"] for r in fake.requests] == [r["body"] for r in case["requests"]], where
                assert all("cache_control" not in r["raw"].decode() for r in fake.requests)
                result, entry = case["result"], case["entry"]
                assert summary == result["summary"] and usage == result["usage"], where
                assert entry["details"] == {"readFiles": prep.read_files, "modifiedFiles": prep.modified_files}
                mine = current_system_message(context_for_path(path).messages)
                theirs = entry.get("systemMessage")
                assert (mine is None) == (theirs is None), where
                if mine is not None:
                    assert {**mine, "timestamp": theirs["timestamp"]} == theirs, where
                    system += 1
                split += len(case["requests"]) > 1 or (prep.split_turn and not prep.to_summarize)
                checked += 1
    assert checked >= 40 and split >= 2 and none >= 2 and system >= 10, (checked, split, none, system)


def test_split_turn_prompt_and_budget() -> None:
    """The turn prefix is asked for with pi 1.6.0's checkpoint prompt; custom instructions reach it."""
    prep = compaction.Preparation(
        "x", [], [{"role": "user", "content": "do it", "timestamp": 1}], True, 10, "PREVIOUS", [], []
    )
    bodies = compaction.requests(prep, MODEL, "high", "keep paths")
    assert list(bodies) == ["prefix"]
    text = bodies["prefix"]["messages"][0]["content"][0]["text"]
    assert text.startswith("# Conversation\n[User]: do it\n\n# Instructions\nThe messages above are earlier context")
    assert text.endswith("Do not infer or recreate later messages.\n\nAdditional focus: keep paths")
    assert bodies["prefix"]["max_tokens"] == 64000 and bodies["prefix"]["thinking"]["budget_tokens"] == 16384
    # nothing before the turn: the previous summary is kept, not "No prior history."
    assert compaction.merge(prep, {"prefix": "P"}).startswith("PREVIOUS\n\n---\n\n**Turn Context (split turn):**")


def test_model_overrides() -> None:
    s = CompactionSettings(keep_recent_tokens=5000, model_overrides={"anthropic/claude-opus-4-6": (None, 1234)})
    assert s.for_model("anthropic", "claude-opus-4-6") == (16384, 1234)
    assert s.for_model("anthropic", "claude-sonnet-4-5") == (16384, 5000)
    assert CompactionSettings().for_model("anthropic", "x") == (16384, 20000)
