"""Branch summaries: the same entries, text and request as pi's generateBranchSummary."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic

from pi_server.llm.models import ANTHROPIC
from pi_server.store.index import SessionIndex
from pi_server.summaries.branch import finish_summary, prepare_branch_summary
from pi_server.summaries.client import SummaryError, complete, request_body

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-test-0123456789abcdef"


def _pairs(idx: SessionIndex, rnd: random.Random, n: int) -> list[dict[str, Any]]:
    pairs = []
    for i in range(n):
        p: dict[str, Any] = {"from": rnd.choice(idx.ids), "to": rnd.choice(idx.ids)}
        if i % 4 == 1:
            p["custom"] = "focus on the files"
        if i % 4 == 2:
            p["custom"], p["replace"] = "Just list the decisions.", True
        pairs.append(p)
    return pairs


@pytest.fixture(scope="module")
def pi_summaries(oracle: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    rnd = random.Random(5)
    for f in [f for f in oracle["files"] if f["kind"] == "generated"][:6]:
        idx = SessionIndex.open(f["file"])
        pairs = _pairs(idx, rnd, 8)
        out.append((f["file"], run_oracle("branch_summary.mjs", f["file"], pairs)))
    return out


def test_entries_text_and_files_equal_pi(pi_summaries) -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    checked = 0
    for file, cases in pi_summaries:
        idx = SessionIndex.open(file)
        for case in cases:
            req = prepare_branch_summary(
                idx, case["from"], case["to"], model.context_window, case.get("custom"), bool(case.get("replace"))
            )
            assert req.entry_ids == case["entryIds"], (file, case["from"], case["to"])
            assert req.common_ancestor == case["commonAncestorId"]
            if case["request"] is None:
                assert req.prompt is None and case["result"]["summary"] == "No content to summarize"
                continue
            pi_body = json.loads(case["request"]["body"])
            ours = request_body(model, req.prompt)
            assert ours == pi_body and list(ours) == list(pi_body), (file, case["from"])  # same keys, same order
            assert finish_summary(req, "## Goal\nA canned summary.") == case["result"]["summary"]
            assert req.read_files == case["result"]["readFiles"]
            assert req.modified_files == case["result"]["modifiedFiles"]
            checked += 1
    assert checked >= 20


def test_the_request_we_send_is_the_one_pi_sends(pi_summaries) -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    file, cases = pi_summaries[0]
    idx = SessionIndex.open(file)
    case = next(c for c in cases if c["request"] is not None)
    req = prepare_branch_summary(
        idx, case["from"], case["to"], model.context_window, case.get("custom"), bool(case.get("replace"))
    )
    with FakeAnthropic() as fake:
        text = asyncio.run(complete(request_body(model, req.prompt), KEY, base_url=fake.url))
    assert text == "## Goal\nA canned summary."
    got = fake.requests[0]
    assert got["path"] == case["request"]["path"] == "/v1/messages"
    assert got["body"] == json.loads(case["request"]["body"])
    headers = {k.lower(): v for k, v in got["headers"].items()}
    assert headers.get("x-api-key", headers.get("authorization", "").removeprefix("Bearer ")) == KEY


def test_errors_retries_and_the_key_never_leaks() -> None:
    model = ANTHROPIC["claude-sonnet-4-5"]
    body = request_body(model, "hello")
    with FakeAnthropic([(500, "overloaded"), (429, "slow down")]) as fake:  # retried by the SDK
        assert asyncio.run(complete(body, KEY, base_url=fake.url)).startswith("## Goal")
        assert len(fake.requests) == 3
    with FakeAnthropic([(400, f"bad request for {KEY}")]) as fake:
        with pytest.raises(SummaryError) as e:
            asyncio.run(complete(body, KEY, base_url=fake.url))
        assert "400" in str(e.value) and KEY not in str(e.value)
    with FakeAnthropic([(401, "invalid x-api-key")]) as fake:
        with pytest.raises(SummaryError) as e:
            asyncio.run(complete(body, KEY, base_url=fake.url))
        assert "401" in str(e.value) and KEY not in str(e.value)
    with FakeAnthropic(delay=3) as fake:
        with pytest.raises(SummaryError) as e:
            asyncio.run(complete(body, KEY, base_url=fake.url, timeout=0.5))
        assert "timed out" in str(e.value)
    with pytest.raises(SummaryError) as e:
        asyncio.run(complete(body, KEY, base_url="http://127.0.0.1:9"))
    assert KEY not in str(e.value)
