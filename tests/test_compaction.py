"""Compaction: the cut, what is summarized, and the requests equal pi's prepareCompaction/compact."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    load_json,  # noqa: F401 - keeps the oracle fixture importable
    run_oracle,
)

from pi_server.context.build import build_context  # noqa: F401
from pi_server.llm.models import ANTHROPIC
from pi_server.store.index import SessionIndex
from pi_server.summaries import compaction
from pi_server.summaries.compaction import prepare_compaction
from pi_server.tree.paths import path_to

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pi_compactions(oracle: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    rnd = random.Random(9)
    out = []
    for f in [f for f in oracle["files"] if f["kind"] == "generated"][:8]:
        idx = SessionIndex.open(f["file"])
        cases = [
            {
                "leaf": rnd.choice(idx.ids),
                "keep": rnd.choice([100, 300, 800, 2500, 20000]),
                "thinking": rnd.choice(["off", "medium", "high"]),
            }
            for _ in range(6)
        ]
        cases.append({"leaf": idx.ids[-1], "keep": 500, "thinking": "off"})
        out.append((f["file"], run_oracle("compaction.mjs", f["file"], cases)))
    return out


def test_preparation_and_requests_equal_pi(pi_compactions) -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    checked = split = 0
    for file, cases in pi_compactions:
        idx = SessionIndex.open(file)
        for case in cases:
            path = idx.read_entries(path_to(idx, idx.by_id[case["leaf"]]))
            prep = prepare_compaction(path, case["keep"])
            where = (file, case["leaf"], case["keep"])
            if case["prep"] is None:
                assert prep is None, where
                continue
            want = case["prep"]
            assert prep is not None, where
            assert prep.first_kept_entry_id == want["firstKeptEntryId"], where
            assert prep.to_summarize == want["messagesToSummarize"], where
            assert prep.turn_prefix == want["turnPrefixMessages"], where
            assert prep.split_turn == want["isSplitTurn"] and prep.tokens_before == want["tokensBefore"], where
            assert prep.previous_summary == want["previousSummary"], where
            assert (prep.read_files, prep.modified_files) == (want["readFiles"], want["modifiedFiles"]), where
            bodies = compaction.requests(prep, model, case["thinking"])
            split += "prefix" in bodies
            got = sorted(json.dumps(b, ensure_ascii=False, separators=(",", ":")) for b in bodies.values())
            assert [json.loads(b) for b in got] == [json.loads(b) for b in case["bodies"]], where
            texts = {k: "HISTORY SUMMARY" if k == "history" else "PREFIX SUMMARY" for k in bodies}
            summary = compaction.merge(prep, texts)
            assert case["result"]["summary"] == summary and case["result"]["tokensBefore"] == prep.tokens_before
            assert case["result"]["details"] == {"readFiles": prep.read_files, "modifiedFiles": prep.modified_files}
            checked += 1
    assert checked >= 30 and split >= 1
