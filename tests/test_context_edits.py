"""pi/editContext and pi/getContextEdits through a real server, checked with pi 1.6.0's own
buildSessionContext: the target is gone (or replaced) at the new leaf and back above the edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_oracle
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.store.index import SessionIndex
from pi_server.tree.paths import path_to

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _pi_context(path: str, leaf: str) -> list[dict]:
    return run_oracle("context16.mjs", path, {"leaf": leaf}, pi16=True)["agent"]


async def test_edit_context_as_pi_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    big = str(max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size))
    idx = SessionIndex.open(big)
    on_path = [p for p in range(len(idx)) if idx.roles[p] == "user"]
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        before = await c.call("pi/buildContext", {"session": big})
        leaf = before["leafId"]
        path_users = [e for e, m in zip(before["entryIds"], before["messages"], strict=True) if m["role"] == "user"]
        target, other = path_users[0], path_users[-1]
        omit = await c.call("pi/editContext", {"session": big, "targetId": target, "replacement": None})
        rep = await c.call(
            "pi/editContext", {"session": big, "targetId": other, "replacement": {"content": "[redacted]"}}
        )
        assert not omit["queued"] and not rep["queued"]
        ctx = await c.call("pi/buildContext", {"session": big})
        assert ctx["leafId"] == rep["entryId"] and target not in ctx["entryIds"]
        edits = await c.call("pi/getContextEdits", {"session": big})
        assert [(e["targetId"], e["replacement"], e["applied"]) for e in edits["edits"]] == [
            (target, None, True),
            (other, {"content": "[redacted]"}, True),
        ]
        above = await c.call("pi/getContextEdits", {"session": big, "leafId": leaf})
        assert above["edits"] == []
        now = SessionIndex.open(big)
        branch = set(path_to(now, now.by_id[rep["entryId"]]))
        off = next(idx.ids[p] for p in on_path if now.by_id[idx.ids[p]] not in branch)
        with pytest.raises(JsonRpcException) as refused:
            await c.call("pi/editContext", {"session": big, "targetId": off, "replacement": None})
        assert refused.value.code == -32602 and "not on the active branch" in refused.value.message
        with pytest.raises(JsonRpcException) as missing:
            await c.call("pi/editContext", {"session": big, "targetId": "nope", "replacement": None})
        assert missing.value.code == -32002
    last = json.loads(Path(big).read_text().splitlines()[-1])
    assert last == {**last, "type": "context_edit", "targetId": other, "replacement": {"content": "[redacted]"}}
    ours = ctx["messages"]
    assert ours == _pi_context(big, rep["entryId"])
    assert any(m.get("content") == "[redacted]" for m in ours)
    assert _pi_context(big, leaf) == (await _ours_at(root, tmp_path, big, leaf))


async def _ours_at(root: Path, tmp_path: Path, session: str, leaf: str) -> list[dict]:
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state2")) as c:
        ctx = await c.call("pi/buildContext", {"session": session, "leafId": leaf})
    return ctx["messages"]
