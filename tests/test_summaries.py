"""Branch summaries: the same entries, text, request and result as pi 1.6.0's generateBranchSummary.

pi 1.6.0 (node 22) and pi-server both talk to the same loopback fake Anthropic
API; the request bodies it records are compared as parsed JSON.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic

from pi_server.context.settings import settings_at
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.models import ANTHROPIC
from pi_server.store.index import SessionIndex
from pi_server.summaries import service
from pi_server.summaries.branch import prepare_branch_summary, serialize_conversation
from pi_server.summaries.client import SummaryError, complete, complete_with_usage, request_body

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-test-0123456789abcdef"
MODEL = ANTHROPIC["claude-sonnet-4-5"]


def _pairs(idx: SessionIndex, rnd: random.Random, n: int) -> list[dict[str, Any]]:
    pairs: list[dict[str, Any]] = []
    while len(pairs) < n:
        p: dict[str, Any] = {"from": rnd.choice(idx.ids), "to": rnd.choice(idx.ids)}
        if p["from"] == p["to"]:
            continue  # pi's navigateTree does nothing then
        if len(pairs) % 4 == 1:
            p["custom"] = "focus on the files"
        if len(pairs) % 4 == 2:
            p["custom"], p["replace"] = "Just list the decisions.", True
        if len(pairs) % 4 == 3:
            p["model"] = "claude-opus-4-7"  # adaptive thinking, a 1M window
        pairs.append(p)
    return pairs


def _with_requests(cases: list[dict[str, Any]], requests: list[dict[str, Any]]) -> None:
    """pi sent one request per case that had messages to summarize, in order."""
    it = iter(requests)
    for case in cases:
        case["request"] = next(it) if case["entryIds"] and case["messages"] else None
    assert next(it, None) is None


@pytest.fixture(scope="module")
def pi_summaries(oracle16: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    rnd = random.Random(5)
    with FakeAnthropic() as fake:
        for f in [f for f in oracle16["files"] if f["kind"] in ("generated", "pi16")][:9]:
            idx = SessionIndex.open(f["file"])
            fake.requests.clear()
            cases = run_oracle("branch_summary.mjs", f["file"], fake.url, _pairs(idx, rnd, 8), pi16=True)
            _with_requests(cases, list(fake.requests))
            out.append((f["file"], cases))
    return out


def test_entries_request_and_result_equal_pi(pi_summaries, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    checked = thinking = edited = adaptive = 0
    with FakeAnthropic() as fake:
        for file, cases in pi_summaries:
            idx = SessionIndex.open(file)
            for case in cases:
                where = (file, case["from"], case["to"])
                model = ANTHROPIC[case.get("model") or MODEL.id]
                req = prepare_branch_summary(
                    idx, case["from"], case["to"], model.context_window, case.get("custom"), bool(case.get("replace"))
                )
                assert req.entry_ids == case["entryIds"] and req.common_ancestor == case["commonAncestorId"], where
                level = settings_at(idx, case["from"]).thinking_level
                assert level == case["thinking"], where
                if case["result"] is None:
                    continue
                entries = idx.read_entries([idx.by_id[i] for i in req.entry_ids])
                fake.requests.clear()
                ours = asyncio.run(service.summarize(req, entries, model, level, base_url=fake.url))
                if case["request"] is None:
                    assert req.prompt is None and ours.summary == case["result"]["summary"] == "No content to summarize"
                    assert not fake.requests and ours.usage is None
                    continue
                assert len(fake.requests) == 1, where
                got, want = fake.requests[0], case["request"]
                assert got["body"] == want["body"], where
                # the SDK orders the wire keys its own way; the body we build has pi's order (its
                # betas go out as the anthropic-beta header)
                built = request_body(model, req.prompt, level)
                assert [k for k in built if k != "betas"] == list(want["body"]), where
                assert got["headers"].get("anthropic-beta") == want["headers"].get("anthropic-beta"), where
                assert ",".join(built.get("betas", [])) == (want["headers"].get("anthropic-beta") or ""), where
                assert got["path"].split("?")[0] == want["path"].split("?")[0] == "/v1/messages"
                assert "cache_control" not in got["raw"].decode()
                assert serialize_conversation(convert_to_llm(req.messages)[0]) == case["serialized"], where
                result = case["result"]
                assert ours.summary == result["summary"] and ours.usage == result["usage"], where
                assert (ours.read_files, ours.modified_files) == (result["readFiles"], result["modifiedFiles"])
                checked += 1
                thinking += level not in ("off", None)
                edited += any(e.get("type") == "context_edit" for e in entries)
                adaptive += got["body"].get("thinking", {}).get("type") == "adaptive"
    assert checked >= 30 and thinking >= 3 and edited >= 1 and adaptive >= 1, (checked, thinking, edited, adaptive)


def test_errors_retries_and_the_key_never_leaks() -> None:
    body = request_body(MODEL, "hello")
    with FakeAnthropic([(500, "overloaded"), (429, "slow down")]) as fake:  # retried by the SDK
        text, usage = asyncio.run(complete_with_usage(body, KEY, model=MODEL, base_url=fake.url))
        assert text.startswith("## Goal") and usage and usage["totalTokens"] == 15
        assert len(fake.requests) == 3
    with FakeAnthropic([("text", "cut off")]) as fake:
        fake.replies = [("sse", _cut_off())]
        with pytest.raises(SummaryError) as e:  # pi 1.6.0: a length stop is a failed summary
            asyncio.run(complete(body, KEY, base_url=fake.url))
        assert "token cap" in str(e.value)
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


def _cut_off() -> list[bytes]:
    from fake_anthropic import sse_blocks

    return sse_blocks([{"type": "text", "text": "partial"}], stop="max_tokens")
