"""Session listing: pi's SessionInfo fields, newest first, non-sessions skipped."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from conftest import load_json

from pi_server.store.discovery import all_messages_text, list_sessions, session_info
from pi_server.store.index import SessionIndex


def test_session_info_equals_pi(oracle: dict[str, Any]) -> None:
    for f in oracle["files"]:
        if f["kind"] == "fixture":
            continue
        want = load_json(f["expected"])["sessionInfo"]
        idx = SessionIndex.open(f["file"])
        got = session_info(idx)
        assert got["session"] == want["path"]
        for key in ("id", "cwd", "created", "modified", "messageCount", "firstMessage"):
            assert got[key] == want[key], (f["file"], key)
        assert got.get("name") == want.get("name")
        assert got.get("parentSession") == want.get("parentSessionPath")
        assert got["entryCount"] == len(idx)
        assert all_messages_text(idx) == want["allMessagesText"]


def test_list_is_newest_first_and_skips_non_sessions(oracle: dict[str, Any], tmp_path: Path) -> None:
    root = Path(oracle["files"][0]["file"]).parent.parent
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "junk.jsonl").write_text("not json\n")
    (tmp_path / "proj" / "empty.jsonl").write_text("")
    (tmp_path / "proj" / "other.jsonl").write_text('{"type":"message","id":"a"}\n')
    sessions = list_sessions([str(root), str(tmp_path)])
    files = {f["file"] for f in oracle["files"] if f["kind"] != "fixture"}
    assert {s["session"] for s in sessions} == files
    mods = [s["modified"] for s in sessions]
    assert mods == sorted(mods, reverse=True)


def test_query_and_cwd_filters(oracle: dict[str, Any]) -> None:
    root = str(Path(oracle["files"][0]["file"]).parent.parent)
    every = list_sessions([root])
    first = every[0]
    word = first["firstMessage"].split()[0]
    hits = list_sessions([root], query=word.upper())
    assert first["session"] in {s["session"] for s in hits}
    assert list_sessions([root], query="zzzz-no-such-word-zzzz") == []
    by_cwd = list_sessions([root], cwd=first["cwd"])
    assert by_cwd and all(s["cwd"] == first["cwd"] for s in by_cwd)
    assert len(list_sessions([root], limit=2)) == 2
    assert os.path.isabs(first["session"])
