"""The typed write API: entries in pi's key order, a summary switch as one queued write, old queues read."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from pi_server.live import ops
from pi_server.live.registry import Registry
from pi_server.server.options import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES
from pi_server.store.state import StateDir

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


LIMITS = {"busy_timeout": DEFAULT_BUSY_TIMEOUT, "max_live_entries": DEFAULT_MAX_LIVE_ENTRIES}


def _registry(tmp_path: Path) -> tuple[Registry, str]:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    big = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return Registry(roots=[str(root)], state=StateDir(str(tmp_path / "state")), **LIMITS), str(big)


def _lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def test_appends_have_pis_key_order(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    first = live.index.ids[0]
    w = reg.write(live, [ops.LabelOp(targetId=first, label="x"), ops.NameOp(name="  named  ")])
    label, name = _lines(big)[-2:]
    assert list(label) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
    assert list(name) == ["type", "id", "parentId", "timestamp", "name"]
    assert name["name"] == "named" and name["parentId"] == label["id"]
    assert w.ids == [[label["id"]], [name["id"]]] and w.appended == [label["id"], name["id"]]
    cleared = reg.write(live, [ops.LabelOp(targetId=first, label="")])
    assert "label" not in _lines(big)[-1] and cleared.last_id == _lines(big)[-1]["id"]


def test_switch_with_summary_label_and_persist_is_one_write(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    target = live.index.ids[len(live.index) // 2]
    summary = {"summary": "s", "readFiles": ["a"], "modifiedFiles": []}
    out, written = reg.switch(live, target, "kept", True, summary)
    s, lab, marker = _lines(big)[-3:]
    assert s["type"] == "branch_summary" and out["summaryEntryId"] == s["id"]
    # pi 1.6.0's branchWithSummary (no model call here: no usage)
    assert list(s) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"]
    assert lab["targetId"] == s["id"] and lab["parentId"] == s["id"]
    assert marker["data"] == {"leafId": s["id"]} and marker["parentId"] == s["id"]
    assert written.appended == [s["id"], lab["id"], marker["id"]]
    assert reg.state.leaf(big) is None  # the file holds the leaf now: no pointer written


def test_a_queued_summary_switch_keeps_its_label_and_marker(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    reg.turns[live.path] = object()  # a turn of ours runs: writes wait
    target = live.index.ids[1]
    summary = {"summary": "later", "readFiles": [], "modifiedFiles": []}
    out, written = reg.switch(live, target, "L", True, summary)
    assert written.queued and out["summaryEntryId"] is None
    assert [op["op"] for op in reg.state.pending(big)] == ["summary"]
    assert reg.state.leaf(big)["leafId"] == out["leafId"]  # the switch itself is kept meanwhile
    del reg.turns[live.path]
    flushed = reg.flush(live)
    s, lab, marker = _lines(big)[-3:]
    assert flushed == [s["id"], lab["id"], marker["id"]]
    assert s["parentId"] == out["leafId"] and lab["targetId"] == s["id"] and marker["data"]["leafId"] == s["id"]
    assert reg.state.pending(big) == []


def test_queues_written_by_earlier_versions_still_flush(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    leaf = live.leaf_id
    old = [
        {"op": "summary", "parentId": leaf, "summary": "old", "details": {"readFiles": [], "modifiedFiles": []}},
        {"op": "label", "targetId": "<the summary entry>", "label": "from an old queue"},
        {"op": "bogus"},
        {"op": "name", "name": "n"},
    ]
    reg.state.set_pending(big, old)
    reg.flush(live)
    s, lab, name = _lines(big)[-3:]
    assert s["summary"] == "old" and lab["targetId"] == s["id"] and lab["label"] == "from an old queue"
    assert name["type"] == "session_info"


def test_busy_reads_pis_turn_from_the_file(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    assert not reg.busy(live)
    user = {"type": "message", "id": "u9", "parentId": live.leaf_id, "timestamp": "2026-12-01T00:00:00.000Z"}
    user["message"] = {"role": "user", "content": "go", "timestamp": int(time.time() * 1000)}
    with open(big, "a") as f:
        f.write(json.dumps(user) + "\n")
    reg.refresh(big)
    assert reg.busy(live)
    assert not reg.busy(live, now=time.time() + reg.busy_timeout + 1)


def test_the_level_in_use_is_recorded_after_a_jump_above_a_thinking_change(tmp_path: Path) -> None:
    reg, big = _registry(tmp_path)
    live = reg.get(big)
    app = reg.appender(live)
    app.append_thinking_level_change("low")
    user = app.append_message({"role": "user", "content": "go", "timestamp": int(time.time() * 1000)})
    assert app.record_thinking_level() is None  # at the file's last entry: the branch's level holds
    app.append_thinking_level_change("high")
    out, _ = reg.switch(live, user, None, False)  # above the change to high: the branch says low
    eid = app.record_thinking_level()
    last = _lines(big)[-1]
    assert eid == last["id"] and last["type"] == "thinking_level_change"
    assert last["thinkingLevel"] == "high" and last["parentId"] == out["leafId"]
    assert app.record_thinking_level() is None  # recorded once


def test_a_turn_pi_starts_right_behind_a_queued_write_holds_the_rest(tmp_path: Path, monkeypatch: Any) -> None:
    # pi's user message lands between one queued write and the re-read after it: the re-read
    # takes it in, so the next write must still see that the file changed and ask if pi is busy
    # (the real race, two servers against pi's turns, is tests/test_races.py)
    from pi_server.live import appends, queue

    reg, big = _registry(tmp_path)
    live = reg.get(big)
    first = live.index.ids[0]
    reg.turns[live.path] = object()
    for k in range(3):
        assert reg.write(live, [ops.LabelOp(targetId=first, label=f"Q{k}")]).queued
    del reg.turns[live.path]
    real = appends.append_lines

    def and_then_pi(path: str, entries: list[dict[str, Any]], roots: tuple[str, ...]) -> None:
        real(path, entries, roots)
        monkeypatch.setattr(appends, "append_lines", real)
        user = {"role": "user", "content": "next", "timestamp": 1}
        line = {"type": "message", "id": "feedbeef", "parentId": entries[-1]["id"], "timestamp": "t", "message": user}
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")

    monkeypatch.setattr(appends, "append_lines", and_then_pi)
    queue.flush(reg.state, live, pi_busy=lambda: True)
    labels = [e["label"] for e in _lines(big) if e.get("type") == "label" and e.get("label", "").startswith("Q")]
    assert labels == ["Q0"]
    assert len(reg.state.pending(big)) == 2
