"""Summaries through the server: Anthropic on a loopback fake, the extractive fallback, failures."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from conftest import run_oracle
from fake_anthropic import FakeAnthropic
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.context.settings import settings_at
from pi_server.store.index import SessionIndex
from pi_server.summaries import summary_model
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
        left = (await c.call("pi/getTree", {"session": big}))["leafId"]
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
        assert summ["type"] == "branch_summary" and summ["parentId"] == parent and summ["fromId"] == left
        assert summ["fromHook"] is False and "usage" not in summ  # no model call, no usage
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
            # pi 1.6.0: the model's output limit fitted to the window, no cache_control
            assert body["max_tokens"] == 64000 and body["model"] == "claude-sonnet-4-5"
            assert "cache_control" not in fake.requests[0]["raw"].decode()
            assert s["usage"]["input"] == 10 and s["usage"]["output"] == 5
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
    # the sample is smaller than pi's 20,000 kept tokens: keep less, so there is something to compact
    init = {"compaction": {"keepRecentTokens": 1}}
    async with server(*_args(store), env=_env(store, None), init_options=init) as c:
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
            "fromHook",
        ]
        ctx = await c.call("pi/buildContext", {"session": big})
        assert ctx["messages"][0]["role"] == "compactionSummary" and ctx["entryIds"][0] == out["entryId"]
        with pytest.raises(JsonRpcException) as e:  # the leaf is a compaction now: nothing to compact
            await c.call("pi/compact", {"session": big})
        assert e.value.code == -32007 and e.value.data == {"kind": "NothingToCompact"}
        assert e.value.message == "Already compacted"
    with FakeAnthropic([("text", "## Goal\\nCompacted.")]) as fake:
        async with server(*_args(store), env=_env(store, KEY, fake.url), init_options=init) as c:
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


def _strip(entry: dict) -> dict:
    out = {k: v for k, v in entry.items() if k not in ("id", "timestamp")}
    if isinstance(out.get("systemMessage"), dict):
        out["systemMessage"] = {k: v for k, v in out["systemMessage"].items() if k != "timestamp"}
    return out


def _cases(idx: SessionIndex, rnd: random.Random) -> tuple[list[dict], list[dict]]:
    """Summarized switches from leaves the client can move to exactly (not a user or custom
    message, whose switch lands on the parent), and compactions at such leaves."""
    leaves = [
        i
        for p, i in enumerate(idx.ids)
        if idx.types[p] != "custom_message" and not (idx.types[p] == "message" and idx.roles[p] == "user")
    ]
    pairs = []
    while len(pairs) < 4:
        a, b = rnd.choice(leaves), rnd.choice(idx.ids)
        if a != b:
            pairs.append({"from": a, "to": b, "model": summary_model(settings_at(idx, a).model, None).id})
    compactions = []
    for leaf in rnd.sample(leaves, 3):
        s = settings_at(idx, leaf)
        model = summary_model(s.model, None).id
        # pi looks the override up by the session's own model
        key = f"{s.model['provider']}/{s.model['modelId']}" if s.model else f"anthropic/{model}"
        compactions.append({"leaf": leaf, "keep": 700, "thinking": s.thinking_level, "model": model, "key": key})
    return pairs, compactions


def _appended(path: str, before: int) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text().splitlines()[before:]]


async def test_written_entries_equal_pi16(store, oracle16) -> None:
    """pi/switchBranch with a summary and pi/compact write what pi 1.6.0's navigateTree
    (branchWithSummary) and compact (appendCompaction) write: same request bodies, same
    entries minus id and time, fromId the leaf left, the usage, the system message in force."""
    rnd = random.Random(12)
    files = [f["file"] for f in oracle16["files"] if f["kind"] == "generated"][:3]
    copies = []
    for i, f in enumerate(files):
        dst = Path(store["root"]) / "pi16" / f"{i}.jsonl"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dst)
        os.utime(dst, (1, 1))  # long unchanged: never busy
        copies.append(str(dst))
    init = {"compaction": {"keepRecentTokens": 5, "modelOverrides": {}}}
    checked = 0
    with FakeAnthropic() as fake:
        for f, copy in zip(files, copies, strict=True):
            idx = SessionIndex.open(f)
            pairs, comps = _cases(idx, rnd)
            for c in comps:  # the override this server gets for each case's model
                init["compaction"]["modelOverrides"][c["key"]] = {"keepRecentTokens": c["keep"]}
            fake.requests.clear()
            pi_pairs = run_oracle("branch_summary.mjs", f, fake.url, pairs, pi16=True)
            pi_pair_bodies = [r["body"] for r in fake.requests]
            fake.requests.clear()
            pi_comps = run_oracle("compaction.mjs", f, fake.url, comps, pi16=True)
            pi_comp_bodies = [r["body"] for r in fake.requests]
            fake.requests.clear()
            async with server(*_args(store), env=_env(store, KEY, fake.url), init_options=init) as c:
                for case in pi_pairs:
                    await c.call("pi/switchBranch", {"session": copy, "targetId": case["from"]})
                    n = len(Path(copy).read_text().splitlines())
                    await c.call("pi/switchBranch", {"session": copy, "targetId": case["to"], "summarize": True})
                    got = _appended(copy, n)
                    if case["entry"] is None:
                        assert got == [], case
                        continue
                    assert len(got) == 1 and _strip(got[0]) == _strip(case["entry"]), (copy, case["from"], case["to"])
                    assert got[0]["fromId"] == case["from"]
                    checked += 1
                for case in pi_comps:
                    await c.call("pi/switchBranch", {"session": copy, "targetId": case["leaf"]})
                    n = len(Path(copy).read_text().splitlines())
                    if case["prep"] is None:
                        with pytest.raises(JsonRpcException) as e:
                            await c.call("pi/compact", {"session": copy})
                        assert e.value.code == -32007
                        continue
                    await c.call("pi/compact", {"session": copy})
                    got = _appended(copy, n)
                    assert len(got) == 1 and _strip(got[0]) == _strip(case["entry"]), (copy, case["leaf"])
                    checked += 1
            ours = [r["body"] for r in fake.requests]
            assert ours == pi_pair_bodies + pi_comp_bodies
    assert checked >= 12
