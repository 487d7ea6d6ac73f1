"""pi/search: the full-text index of every entry, kept current from the watcher and
across restarts, against real pi-server processes."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsp_client import server


def _entry(i: int, parent: str | None, role: str, content: Any, ts: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"e{i:07x}",
        "parentId": parent,
        "timestamp": f"2026-01-0{1 + ts // 10}T10:00:{ts % 10:02d}.000Z",
        "message": {"role": role, "content": content, "timestamp": 1},
    }


def write_session(path: Path, texts: list[str], start_ts: int = 0) -> list[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"}
    lines, ids, parent = [json.dumps(header)], [], None
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        e = _entry(i + 1 + start_ts * 100, parent, role, content, start_ts + i)
        lines.append(json.dumps(e, ensure_ascii=False))
        ids.append(e["id"])
        parent = e["id"]
    path.write_text("\n".join(lines) + "\n")
    return ids


def append(path: Path, entry: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "sessions"
    a = root / "--w--" / "a.jsonl"
    b = root / "--w--" / "b.jsonl"
    ids_a = write_session(a, ["please refactor the parser", "I refactored the Parser module", "日本語のテキスト検索"])
    ids_b = write_session(b, ["fix the flaky test", "the test is fixed now"], start_ts=5)
    argv = ["--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")]
    return {"root": root, "a": a, "b": b, "ids_a": ids_a, "ids_b": ids_b, "argv": argv, "state": tmp_path / "state"}


async def search_until(c: Any, params: dict[str, Any], pred: Any, timeout: float = 10.0) -> dict[str, Any]:
    """Ask until the answer satisfies `pred` (the index is built in the background)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await c.call("pi/search", params)
        if pred(got) or asyncio.get_running_loop().time() > deadline:
            return got
        await asyncio.sleep(0.05)


def _ready(got: dict[str, Any]) -> bool:
    return got["pendingFiles"] == 0 and got["indexedFiles"] >= 2


async def test_words_phrases_regex_cjk(store: dict[str, Any]) -> None:
    async with server(*store["argv"]) as c:
        got = await search_until(c, {"query": "PARSER"}, _ready)
        assert [h["entryId"] for h in got["hits"]] == [store["ids_a"][1], store["ids_a"][0]]  # newest first
        assert got["total"] == 2
        h = got["hits"][0]
        assert h["session"] == str(store["a"]) and h["role"] == "assistant" and h["type"] == "message"
        assert h["firstMessage"] == "please refactor the parser"
        s, e = h["ranges"][0]
        assert h["snippet"][s:e].lower() == "parser"
        # every word must match in the entry, as substrings
        got = await c.call("pi/search", {"query": "refactor pars"})
        assert {x["entryId"] for x in got["hits"]} == set(store["ids_a"][:2])
        got = await c.call("pi/search", {"query": '"refactored the parser"'})
        assert [x["entryId"] for x in got["hits"]] == [store["ids_a"][1]]
        got = await c.call("pi/search", {"query": "re:fla+ky\\s+te"})
        assert [x["entryId"] for x in got["hits"]] == [store["ids_b"][0]]
        got = await c.call("pi/search", {"query": "検索"})  # two characters: below a trigram
        assert [x["entryId"] for x in got["hits"]] == [store["ids_a"][2]]
        got = await c.call("pi/search", {"query": "テキスト"})
        assert [x["entryId"] for x in got["hits"]] == [store["ids_a"][2]]
        got = await c.call("pi/search", {"query": "the", "roles": ["user"], "limit": 1})
        assert got["total"] == 2 and len(got["hits"]) == 1 and got["hits"][0]["role"] == "user"
        got = await c.call("pi/search", {"query": "the", "sessions": [str(store["b"])]})
        assert {x["session"] for x in got["hits"]} == {str(store["b"])}


async def test_bad_queries_are_invalid_params(store: dict[str, Any]) -> None:
    from pygls.exceptions import JsonRpcException

    async with server(*store["argv"]) as c:
        for q in ["re:(unclosed", "   ", "re:"]:
            with pytest.raises(JsonRpcException) as e:
                await c.call("pi/search", {"query": q})
            assert e.value.code == -32602, q
        # an unclosed quote is read as plain words, quote kept, as pi's picker reads it
        got = await search_until(c, {"query": "flaky test"}, _ready)
        assert [x["entryId"] for x in got["hits"]] == [store["ids_b"][0]]
        got = await c.call("pi/search", {"query": '"flaky test'})
        assert got["total"] == 0


async def test_append_rewrite_delete_are_followed(store: dict[str, Any]) -> None:
    async with server(*store["argv"]) as c:
        await search_until(c, {"query": "parser"}, _ready)
        append(store["b"], _entry(999, store["ids_b"][-1], "user", "a zebracorn appears", 30))
        t0 = asyncio.get_running_loop().time()
        got = await search_until(c, {"query": "zebracorn"}, lambda g: g["total"] == 1, timeout=5)
        assert got["total"] == 1 and got["hits"][0]["entryId"] == f"e{999:07x}"
        assert asyncio.get_running_loop().time() - t0 < 1.0
        write_session(store["a"], ["an entirely different conversation"])  # rewritten
        got = await search_until(c, {"query": "parser"}, lambda g: g["total"] == 0)
        assert got["total"] == 0
        got = await search_until(c, {"query": "different conversation"}, lambda g: g["total"] == 1)
        assert got["total"] == 1
        os.unlink(store["b"])
        got = await search_until(c, {"query": "zebracorn"}, lambda g: g["total"] == 0)
        assert got["total"] == 0


async def test_restart_does_not_index_again(store: dict[str, Any]) -> None:
    async with server(*store["argv"]) as c:
        await search_until(c, {"query": "parser"}, _ready)
    db = store["state"] / "fulltext.sqlite"
    chunks = sqlite3.connect(db).execute("SELECT id FROM chunks ORDER BY id").fetchall()
    assert chunks
    async with server(*store["argv"]) as c:
        got = await search_until(c, {"query": "parser"}, _ready)
        assert got["total"] == 2
    assert sqlite3.connect(db).execute("SELECT id FROM chunks ORDER BY id").fetchall() == chunks


async def test_corrupt_index_is_set_aside_and_rebuilt(store: dict[str, Any]) -> None:
    store["state"].mkdir(parents=True, exist_ok=True)
    (store["state"] / "fulltext.sqlite").write_bytes(b"this is not a database" * 100)
    async with server(*store["argv"]) as c:
        listed = await c.call("pi/listSessions", {})
        assert len(listed["sessions"]) == 2
        got = await search_until(c, {"query": "parser"}, _ready)
        assert got["total"] == 2
    assert any(p.name.startswith("fulltext.sqlite.bad-") for p in store["state"].iterdir())


async def test_catastrophic_regex_answers_incomplete_and_never_freezes(store: dict[str, Any]) -> None:
    write_session(store["root"] / "--w--" / "c.jsonl", ["a" * 40 + "!", "aaa"], start_ts=20)
    async with server(*store["argv"]) as c:
        await search_until(c, {"query": "parser"}, lambda g: g["pendingFiles"] == 0 and g["indexedFiles"] >= 3)
        slow = asyncio.ensure_future(c.call("pi/search", {"query": "re:(a+)+$"}))
        await asyncio.sleep(0.3)
        listed = await c.call("pi/listSessions", {})  # the daemon keeps answering meanwhile
        assert len(listed["sessions"]) == 3 and not slow.done()
        got = await asyncio.wait_for(slow, 30)
        assert got.get("incomplete") is True
        got = await c.call("pi/search", {"query": "re:fla+ky"})  # the next regex runs afresh
        assert got["total"] == 1 and "incomplete" not in got


async def test_hostile_file_never_stops_the_others(store: dict[str, Any]) -> None:
    bad = store["root"] / "--w--" / "0-hostile.jsonl"
    odd = [
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"type": "message", "id": "x1", "message": {"role": 5, "content": {"a": 1}}}),
        json.dumps({"type": "message", "id": "x2", "message": "str", "timestamp": []}),
        json.dumps({"type": "custom_message", "id": "x3", "content": [None, 1, {"type": "text"}]}),
        json.dumps({"type": "label", "id": "x4", "label": "quokkafind " + "y" * 3_000_000}),
    ]
    bad.write_text(json.dumps({"type": "session", "id": "h", "cwd": "/w"}) + "\n" + "\n".join(odd) + "\n")
    async with server(*store["argv"]) as c:
        got = await search_until(c, {"query": "parser"}, lambda g: g["pendingFiles"] == 0 and g["indexedFiles"] >= 3)
        assert got["total"] == 2
        got = await c.call("pi/search", {"query": "quokkafind"})
        assert [h["entryId"] for h in got["hits"]] == ["x4"]


async def test_full_disk_answers_what_is_indexed_and_resumes(store: dict[str, Any]) -> None:
    """The daemon's files may not grow past 64 KiB (RLIMIT_FSIZE, as a full disk refuses a
    write): search answers from what is indexed, the rest pending; once the limit is lifted
    indexing resumes by itself."""
    import random
    import resource

    rnd = random.Random(5)
    words = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(4, 12))) for _ in range(400_000)
    ]
    texts = [" ".join(words[i : i + 10_000]) for i in range(0, len(words), 10_000)] + ["the wombatquill is here"]
    async with server(*store["argv"]) as c:
        await search_until(c, {"query": "parser"}, _ready)
        pid = c.serving_pid()
        hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (64 << 10, hard))
        try:
            write_session(store["root"] / "--w--" / "big.jsonl", texts, start_ts=40)
            log = store["state"] / "daemon.log"
            deadline = asyncio.get_running_loop().time() + 20
            while "full-text index: cannot write" not in log.read_text(errors="replace"):
                assert asyncio.get_running_loop().time() < deadline, "the write was never refused"
                await asyncio.sleep(0.1)
            got = await c.call("pi/search", {"query": "parser"})
            assert got["total"] == 2 and got["pendingFiles"] >= 1
            got = await c.call("pi/search", {"query": "wombatquill"})
            assert got["total"] == 0 and got["pendingFiles"] >= 1
            assert len((await c.call("pi/listSessions", {}))["sessions"]) == 3  # still serving
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
        got = await search_until(c, {"query": "wombatquill"}, lambda g: g["total"] == 1, timeout=30)
        assert got["total"] == 1 and got["pendingFiles"] == 0
        assert got["hits"][0]["entryId"] == f"e{len(texts) + 4000:07x}"
        got = await c.call("pi/search", {"query": words[123_456]})
        assert got["total"] >= 1


async def test_an_index_of_another_format_is_set_aside_and_rebuilt(store: dict[str, Any]) -> None:
    store["state"].mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(store["state"] / "fulltext.sqlite")
    old.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES('format', '1');")
    old.commit()
    old.close()
    async with server(*store["argv"]) as c:
        got = await search_until(c, {"query": "parser"}, _ready)
        assert got["total"] == 2
    assert any(p.name.startswith("fulltext.sqlite.bad-") for p in store["state"].iterdir())


async def test_long_sessions_span_many_chunks(store: dict[str, Any]) -> None:
    """Entries in every chunk of a long session are found and named exactly; phrases match
    across any whitespace; text outside ASCII is matched case-insensitively."""
    filler = " ".join(f"word{i}" for i in range(3000))  # ~26 KB: a chunk holds one or two
    texts = [f"{filler} marker{i:03d}" for i in range(40)]
    texts[7] = f"{filler} the\n\t quick  brown fox"
    texts[33] = f"{filler} ÉCOLE Ünïcode ΣΟΦΊΑ"
    texts[20] = f"{filler} \u212aELVIN alpha\u00a0\u3000beta"  # the Kelvin sign lower-cases to k
    ids = write_session(store["root"] / "--w--" / "long.jsonl", texts, start_ts=20)
    async with server(*store["argv"]) as c:
        await search_until(c, {"query": "parser"}, lambda g: g["pendingFiles"] == 0 and g["indexedFiles"] >= 3)
        for i in (0, 19, 39):
            got = await c.call("pi/search", {"query": f"marker{i:03d}"})
            assert [h["entryId"] for h in got["hits"]] == [ids[i]]
        got = await c.call("pi/search", {"query": "word2999", "limit": 100})
        assert got["total"] == 40 and len({h["entryId"] for h in got["hits"]}) == 40
        got = await c.call("pi/search", {"query": '"the quick brown"'})
        assert [h["entryId"] for h in got["hits"]] == [ids[7]]
        got = await c.call("pi/search", {"query": "école ünÏcode σοφία"})
        assert [h["entryId"] for h in got["hits"]] == [ids[33]]
        got = await c.call("pi/search", {"query": '"kelvin alpha beta"'})
        assert [h["entryId"] for h in got["hits"]] == [ids[20]]
        got = await c.call("pi/search", {"query": '"quick fox"'})
        assert got["total"] == 0
