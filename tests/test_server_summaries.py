"""Summaries through the server: Anthropic on a loopback fake, the extractive fallback, failures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.store.index import SessionIndex
from pi_server.summaries.prompts import BRANCH_SUMMARY_PREAMBLE

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
KEY = "sk-ant-api03-secret-test-key-0000"


@pytest.fixture
def store(tmp_path: Path) -> dict:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    big = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return {
        "root": str(root),
        "state": str(tmp_path / "state"),
        "big": str(big),
        "home": str(tmp_path / "home"),
        "log": str(tmp_path / "server.log"),
    }


def _args(store: dict) -> list[str]:
    return ["--sessions-dir", store["root"], "--state-dir", store["state"], "--log-file", store["log"]]


def _env(store: dict, key: str | None, url: str | None = None) -> dict[str, str]:
    env = {"HOME": store["home"], "ANTHROPIC_API_KEY": key or "", "PI_CODING_AGENT_DIR": store["home"] + "/agent"}
    if url:
        env["ANTHROPIC_BASE_URL"] = url
    return env


async def test_extractive_without_a_key(store) -> None:
    big = store["big"]
    idx = SessionIndex.open(big)
    first_user = next(i for i, r in enumerate(idx.roles) if r == "user")
    before = Path(big).read_bytes()
    async with server(*_args(store), env=_env(store, None)) as c:
        s = await c.call("pi/summarizeBranch", {"session": big, "targetId": idx.ids[first_user]})
        assert s["source"] == "extractive" and s["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal\n")
        assert "## Next Steps" in s["summary"] and s["entryIds"] and s["commonAncestorId"] == idx.ids[first_user]
        assert Path(big).read_bytes() == before  # writes nothing
        out = await c.call(
            "pi/switchBranch", {"session": big, "targetId": idx.ids[first_user], "summarize": True, "label": "tried-it"}
        )
        lines = [json.loads(x) for x in Path(big).read_text().splitlines()[-2:]]
        summ, label = lines
        parent = idx.parents[first_user]
        assert summ["type"] == "branch_summary" and summ["parentId"] == parent and summ["fromId"] == parent
        assert summ["details"] == {"readFiles": s["readFiles"], "modifiedFiles": s["modifiedFiles"]}
        assert out["summaryEntryId"] == summ["id"] and label["targetId"] == summ["id"]
        assert out["editorText"] and out["leafId"] == label["id"]
        ctx = await c.call("pi/buildContext", {"session": big})
        assert ctx["messages"][-1]["role"] == "branchSummary" and ctx["messages"][-1]["summary"] == summ["summary"]


async def test_anthropic_summary_and_failures(store) -> None:
    big = store["big"]
    idx = SessionIndex.open(big)
    target = idx.ids[2]
    with FakeAnthropic([("text", "## Goal\nFrom the fake."), (400, f"no good {KEY}")]) as fake:
        async with server(*_args(store), env=_env(store, KEY, fake.url)) as c:
            s = await c.call(
                "pi/summarizeBranch", {"session": big, "targetId": target, "customInstructions": "mention tests"}
            )
            assert s["source"] == "anthropic" and s["summary"].startswith(
                BRANCH_SUMMARY_PREAMBLE + "## Goal\nFrom the fake."
            )
            body = fake.requests[0]["body"]
            assert body["max_tokens"] == 2048 and body["model"] == "claude-sonnet-4-5"
            assert "Additional focus: mention tests" in body["messages"][0]["content"][0]["text"]
            before = Path(big).read_bytes()
            tree = await c.call("pi/getTree", {"session": big})
            with pytest.raises(JsonRpcException) as e:
                await c.call("pi/switchBranch", {"session": big, "targetId": target, "summarize": True})
            assert e.value.code == -32004 and e.value.data == {"kind": "SummaryFailed"}
            assert "400" in e.value.message and KEY not in e.value.message
            assert Path(big).read_bytes() == before  # a failed summary cancels the switch
            assert (await c.call("pi/getTree", {"session": big}))["leafId"] == tree["leafId"]
    assert KEY not in Path(store["log"]).read_text()


async def test_auth_json_key_is_used(store) -> None:
    agent = Path(store["home"]) / "agent"
    agent.mkdir(parents=True)
    (agent / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": KEY}}))
    big = store["big"]
    with FakeAnthropic() as fake:
        env = _env(store, None, fake.url)
        async with server(*_args(store), env=env) as c:
            s = await c.call("pi/summarizeBranch", {"session": big, "targetId": SessionIndex.open(big).ids[2]})
            assert s["source"] == "anthropic"
        headers = {k.lower(): v for k, v in fake.requests[0]["headers"].items()}
        assert KEY in (headers.get("x-api-key", "") + headers.get("authorization", ""))


async def test_cancel_request_cancels_the_http_call(store) -> None:
    import asyncio

    from lsprotocol import types as lsp

    big = store["big"]
    target = SessionIndex.open(big).ids[2]
    before = Path(big).read_bytes()
    with FakeAnthropic(delay=4) as fake:
        async with server(*_args(store), env=_env(store, KEY, fake.url)) as c:
            proto = c.lc.protocol
            fut = asyncio.ensure_future(
                proto.send_request_async("pi/switchBranch", {"session": big, "targetId": target, "summarize": True})
            )
            for _ in range(1500):  # the SDK's first import alone can take seconds on a busy machine
                if fake.requests:
                    break
                await asyncio.sleep(0.02)
            assert fake.requests  # the HTTP call is in flight
            begun = [r for rs in c.lc.progress_reports.values() for r in rs]
            assert any(isinstance(r, lsp.WorkDoneProgressBegin) and r.title == "Summarizing branch" for r in begun)
            msg_id = next(k for k, f in proto._request_futures.items() if not f.done())
            proto.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
            with pytest.raises(JsonRpcException) as e:
                await asyncio.wait_for(fut, 3)  # well before the fake would answer
            assert e.value.code == -32800
            assert Path(big).read_bytes() == before


async def test_compact_offline_and_with_anthropic(store) -> None:
    big = store["big"]
    async with server(*_args(store), env=_env(store, None)) as c:
        out = await c.call("pi/compact", {"session": big})
        last = json.loads(Path(big).read_text().splitlines()[-1])
        assert last["type"] == "compaction" and last["id"] == out["entryId"] and out["queued"] is False
        assert last["firstKeptEntryId"] == out["firstKeptEntryId"] and last["tokensBefore"] == out["tokensBefore"]
        assert list(last) == [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
        ]
        ctx = await c.call("pi/buildContext", {"session": big})
        assert ctx["messages"][0]["role"] == "compactionSummary" and ctx["entryIds"][0] == out["entryId"]
        with pytest.raises(JsonRpcException) as e:  # the leaf is a compaction now: nothing to compact
            await c.call("pi/compact", {"session": big})
        assert e.value.code == -32004
    with FakeAnthropic([("text", "## Goal\\nCompacted.")]) as fake:
        async with server(*_args(store), env=_env(store, KEY, fake.url)) as c:
            await c.call("pi/getTree", {"session": big})
            with open(big, "a") as fh:  # something new to compact (a finished answer: not busy)
                fh.write(
                    json.dumps(
                        {
                            "type": "message",
                            "id": "more0001",
                            "parentId": out["entryId"],
                            "timestamp": "2026-12-01T00:00:00.000Z",
                            "message": {
                                "role": "assistant",
                                "content": [{"type": "text", "text": "more"}],
                                "stopReason": "stop",
                                "timestamp": 1,
                            },
                        }
                    )
                    + "\n"
                )
            await c.wait_for("pi/sessionUpdated")
            out2 = await c.call("pi/compact", {"session": big, "customInstructions": "be brief"})
            assert out2["summary"].startswith("## Goal") and out2["queued"] is False
            body = fake.requests[0]["body"]
            text = body["messages"][0]["content"][0]["text"]
            assert "<previous-summary>" in text and "Additional focus: be brief" in text
            assert body["max_tokens"] > 2048
