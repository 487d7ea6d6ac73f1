"""A searched pi/listSessions answered from the full-text index (fulltext/picker.py): the
same sessions as the scan of every file (store/discovery.py), on a varied store, as files
are appended to, rewritten and deleted, and while indexing is under way."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsp_client import server
from test_search import search_until, write_session

from pi_server.fulltext import db as ftdb
from pi_server.fulltext import picker, pickertext
from pi_server.fulltext.db import FullText
from pi_server.store.discovery import is_within, iter_session_files, query_tokens, search_text
from pi_server.store.index import NotASession, SessionIndex

WORDS = [
    "parser", "Parser", "PARSER", "refactor", "database", "timeout", "flaky", "test", "config", "the",
    "a", "is", "检索", "検索", "日本語", "数据库", "テスト", "ΟΔΟΣ", "οδός", "İstanbul", "Straße", "STRASSE",
    "naïve", "🙂", "x", "zebra", "quokka", "it's", "e.g.", "l'été",
]  # fmt: skip
QUERIES = [
    "parser", "PARSER", "pars", "the", "a", "is", "x", "zz", "refactor database", "flaky test config",
    "检索", "検", "日本", "日本語 parser", "οδος", "οδοσ", "ΟΔΟΣ", "istanbul", "i̇stanbul", "straße", "strasse",
    "naïve", "🙂", "zebra quokka", "tool-only-word", "custom-only-word", "named", "renamed", "projectname",
    "it's", "e.g", "l'été", "  parser   the ", "nomatchatall", "bash-only-word", "summary-only-word",
]  # fmt: skip


def _header(sid: str, version: int = 3) -> dict[str, Any]:
    return {"type": "session", "version": version, "id": sid, "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"}


def _msg(i: int, role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"m{i:06x}",
        "parentId": None,
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {"role": role, "content": content, "timestamp": 1700000000000 + i, **extra},
    }


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))


def _entry(rng: random.Random, i: int) -> dict[str, Any]:
    """A random entry of the kinds a session holds (only user and assistant text is searched)."""
    k = rng.randrange(14)
    if k < 4:
        return _msg(i, "user", _text(rng))
    if k < 7:
        blocks: list[Any] = [{"type": "text", "text": _text(rng)} for _ in range(rng.randint(0, 3))]
        blocks.insert(rng.randint(0, len(blocks)), {"type": "thinking", "thinking": "tool-only-word"})
        if rng.random() < 0.3:
            blocks.append({"type": "toolCall", "id": "c", "name": "bash", "arguments": {"cmd": "tool-only-word"}})
        if rng.random() < 0.1:
            blocks.append({"type": "text", "text": 7})  # not a string: joined as ""
        return _msg(i, "assistant" if k < 6 else "user", blocks)
    if k == 7:
        return _msg(i, "toolResult", [{"type": "text", "text": "tool-only-word " + _text(rng)}], toolCallId="c")
    if k == 8:
        e = _msg(i, "user", "dropped")
        del e["message"]["content"]  # no content: pi leaves the message out
        return e
    if k == 9:
        name = rng.choice(["  named  ", "renamed", "", "projectname Parser", 5, None])
        return {"type": "session_info", "id": f"n{i:06x}", "parentId": None, "timestamp": "2026", "name": name}
    if k == 10:
        return {"type": "custom_message", "id": f"c{i:06x}", "customType": "x", "content": "custom-only-word"}
    if k == 11:
        return _msg(i, "bashExecution", None, command="bash-only-word", output="bash-only-word")
    if k == 12:
        return {"type": "compaction", "id": f"k{i:06x}", "summary": "summary-only-word", "firstKeptEntryId": "x"}
    return _msg(i, "user", [{"type": "image", "data": "AAAA"}, {"type": "text", "text": _text(rng)}])


def _lines(rng: random.Random, n: int, start: int = 0) -> list[bytes]:
    return [json.dumps(_entry(rng, start + i), ensure_ascii=rng.random() < 0.5).encode() for i in range(n)]


def _write(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def varied_store(root: Path, rng: random.Random, n: int = 40) -> dict[str, Path]:
    """Plain sessions of every kind of entry, and the files the index leaves to the scan."""
    for i in range(n):
        _write(root / f"--p{i % 3}--" / f"s{i:03d}.jsonl", [json.dumps(_header(f"s{i}")).encode(), *_lines(rng, 30)])
    odd = {
        "v2": [json.dumps(_header("v2", 2)).encode(), *_lines(rng, 20)],  # pi migrates it: scanned
        "v1": [json.dumps(_header("v1", 1)).encode(), b'{"type":"message","message":{"role":"user","content":"zebra"}}'],
        "not-utf8": [json.dumps(_header("nu")).encode(), b'{"type":"message","id":"q","message":{"role":"user","content":"zebra \xff"}}'],
        "escaped": [json.dumps(_header("es")).encode(), b'{"type":"message","id":"q","message":{"role":"\\u0075ser","content":"quokka"}}'],
        "malformed": [json.dumps(_header("ma")).encode(), b'{"type":"message", "id": "q", zebra', *_lines(rng, 5)],
        "no-header": [*_lines(rng, 5)],
        "blank-first": [b"", b"  ", json.dumps(_header("bf")).encode(), *_lines(rng, 5)],
        "null-message": [json.dumps(_header("nm")).encode(), b'{"type":"message","id":"q","message":null}', *_lines(rng, 5)],
        "empty": [],
    }  # fmt: skip
    paths = {}
    for name, lines in odd.items():
        paths[name] = root / "--odd--" / f"{name}.jsonl"
        _write(paths[name], lines)
    (root / "--odd--" / "partial.jsonl").write_bytes(json.dumps(_header("pt")).encode() + b"\n" + _lines(rng, 1)[0])
    outside = root.parent / "outside.jsonl"  # a symlink out of the roots is never listed
    _write(outside, [json.dumps(_header("out")).encode(), *_lines(rng, 30)])
    (root / "--odd--" / "out.jsonl").symlink_to(outside)
    (root / "--odd--" / "in.jsonl").symlink_to(root / "--p0--" / "s000.jsonl")  # one within them is
    return paths


def scan(root: Path, tokens: list[str]) -> list[str]:
    """Today's answer: every file read (store/discovery.py)."""
    out = []
    for f in iter_session_files([str(root)]):
        if not is_within(f, [str(root)]):
            continue
        try:
            text = search_text(SessionIndex.open(f))
        except (NotASession, OSError):
            continue
        if all(t in text for t in tokens):
            out.append(f)
    return sorted(out)


_readers: dict[str, sqlite3.Connection] = {}


def from_index(
    ft: FullText, root: Path, tokens: list[str], vocab: picker.Vocab | None = None
) -> tuple[list[str], list[str]]:
    """The index's answer (its matches, and the files it leaves to the scan, scanned), read
    on a connection of its own as the server reads it (server/pickerindex.py), once the indexer
    has committed its batch (the server's indexer commits when its queue runs empty)."""
    ft.flush()
    files = list(iter_session_files([str(root)]))
    db = _readers.get(ft.path)
    if db is None:
        db = _readers[ft.path] = sqlite3.connect(ft.path, isolation_level=None)
    db.execute("BEGIN")
    try:
        matched, rest = picker.split(db, tokens, files, [str(root)], vocab)
    finally:
        db.execute("COMMIT")
    scanned = [f for f in scan(root, tokens) if f in rest]
    return sorted(matched + scanned), rest


def index_all(ft: FullText, root: Path) -> None:
    for f in iter_session_files([str(root)]):
        while not ft.index_step(f):
            pass
    ft.flush()


def _same(ft: FullText, root: Path, vocab: picker.Vocab | None = None) -> list[str]:
    """Every query answered as the scan answers, with the words of the text (`vocab`, read as
    it grows) and without; the files left to the scan."""
    rests: set[str] = set()
    for q in QUERIES:
        tokens = query_tokens(q)
        want = scan(root, tokens)
        for v in (vocab or picker.Vocab(), None):
            got, rest = from_index(ft, root, tokens, v)
            assert got == want, (q, v)
            rests |= set(rest)
    return sorted(rests)


@pytest.mark.parametrize("verify_rows", [0, picker.VERIFY_ROWS])  # 0: the vocabulary answers every word it can
def test_same_sessions_as_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verify_rows: int) -> None:
    monkeypatch.setattr(picker, "VERIFY_ROWS", verify_rows)
    root = tmp_path / "sessions"
    odd = varied_store(root, random.Random(1))
    ft = FullText(str(tmp_path / "ft.sqlite"))
    index_all(ft, root)
    rest = _same(ft, root)
    # only the files the index cannot read as the scan does are scanned
    scanned = {"v2", "v1", "not-utf8", "no-header", "empty"}
    assert rest == sorted(str(odd[n]) for n in scanned)
    # the queries tell sessions apart, and the index answered most of them
    counts = [len(scan(root, query_tokens(q))) for q in QUERIES]
    assert max(counts) > 30 and min(counts) == 0 and len(set(counts)) > 8


def test_appended_rewritten_deleted(tmp_path: Path) -> None:
    rng = random.Random(2)
    root = tmp_path / "sessions"
    varied_store(root, rng)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    index_all(ft, root)
    vocab = picker.Vocab()  # read as the index grows, as the server's reader keeps it
    _same(ft, root, vocab)
    files = sorted(root.glob("--p*--/*.jsonl"))
    with open(files[0], "ab") as f:  # appended: scanned until indexed again
        f.write(b"\n".join(_lines(rng, 10, 1000)) + b"\n")
    with open(files[1], "ab") as f:
        f.write(json.dumps({"type": "session_info", "id": "nn", "name": "  Okapi Named "}).encode() + b"\n")
    new = tmp_path / "new.jsonl"  # replaced by another file: a new inode
    _write(new, [json.dumps(_header("r")).encode(), json.dumps(_msg(1, "user", "zebra rewritten parser")).encode()])
    os.replace(new, files[2])
    _write(files[3], [json.dumps(_header("w")).encode(), json.dumps(_msg(1, "user", "quokka")).encode()])  # in place
    files[4].unlink()
    rest = _same(ft, root, vocab)
    assert {str(files[i]) for i in range(4)} <= set(rest)
    assert str(files[4]) not in rest
    for f in files[:4]:
        while not ft.index_step(str(f)):
            pass
    ft.forget(str(files[4]))
    rest = _same(ft, root, vocab)
    assert not {str(files[i]) for i in range(5)} & set(rest)
    assert from_index(ft, root, ["okapi", "named"], vocab)[0] == [str(files[1])]
    assert from_index(ft, root, ["rewritten"], vocab)[0] == [str(files[2])]  # a word new to the index
    fids = {f for (f,) in ft.db.execute("SELECT id FROM files")}
    assert {f for (f,) in ft.db.execute("SELECT file FROM chunks")} <= fids  # none left behind
    cids = {c for (c,) in ft.db.execute("SELECT id FROM chunks")}
    assert {c for (c,) in ft.db.execute("SELECT id FROM bodies")} == cids
    assert {c for (c,) in ft.db.execute("SELECT rowid FROM fts WHERE fts MATCH 'zeb'")} <= cids
    assert {c for (c,) in ft.db.execute("SELECT rowid FROM picker_words WHERE picker_words MATCH 'zebra'")} <= cids
    ft.db.execute("INSERT INTO picker_words(picker_words) VALUES('integrity-check')")  # rows forgot as added
    ft.db.execute("INSERT INTO fts(fts) VALUES('integrity-check')")


def test_while_indexing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files not indexed yet, or indexed in part, are scanned: the answer never changes."""
    monkeypatch.setattr(ftdb, "STEP_BYTES", 3000)  # a few entries a step: files indexed in parts
    root = tmp_path / "sessions"
    varied_store(root, random.Random(3), n=12)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    files = list(iter_session_files([str(root)]))
    want = {q: scan(root, query_tokens(q)) for q in QUERIES}
    vocab = picker.Vocab()
    steps = 0
    for f in files:
        done = False
        while not done:
            done = ft.index_step(f)
            steps += 1
            if steps % 7 == 0:
                q = QUERIES[steps % len(QUERIES)]
                assert from_index(ft, root, query_tokens(q), vocab)[0] == want[q], q
                assert from_index(ft, root, query_tokens(q))[0] == want[q], q
    assert steps > 2 * len(files)
    assert _same(ft, root, vocab)


def test_an_index_without_picker_text_is_built_again(tmp_path: Path) -> None:
    """A database indexed before the picker's tables is set aside: every file is indexed again."""
    root = tmp_path / "sessions"
    write_session(root / "--w--" / "a.jsonl", ["zebra"])
    ft = FullText(str(tmp_path / "ft.sqlite"))
    index_all(ft, root)
    ft.db.execute("DELETE FROM meta WHERE key='picker'")
    ft.db.executescript("DROP TABLE picker_files; DROP TABLE picker_words;")
    ft.close()
    ft = FullText(str(tmp_path / "ft.sqlite"))
    assert ft.counts() == (0, 0)
    index_all(ft, root)
    assert from_index(ft, root, ["zebra"]) == ([str(root / "--w--" / "a.jsonl")], [])


async def test_listing_is_answered_from_the_index(tmp_path: Path) -> None:
    """Proof that the server takes the index's answer: a word changed in a file behind the
    index's back (same size, same mtime) is still found by the listing, as only the index can."""
    root = tmp_path / "sessions"
    a, b = root / "--w--" / "a.jsonl", root / "--w--" / "b.jsonl"
    write_session(a, ["please refactor the parser", "zebracorn done"])
    write_session(b, ["fix the flaky test", "the test is fixed now"])
    argv = ["--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")]
    async with server(*argv) as c:
        await search_until(c, {"query": "zebracorn"}, lambda g: g["pendingFiles"] == 0 and g["indexedFiles"] >= 2)
        st = a.stat()  # no searched listing yet: a search of the files would read it now
        a.write_bytes(a.read_bytes().replace(b"zebracorn", b"unicornzz"))
        os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
        await asyncio.sleep(0.3)  # the watcher sees the write; the file's stat says nothing changed
        got = await c.call("pi/listSessions", {"query": "zebracorn"})
        assert [s["session"] for s in got["sessions"]] == [str(a)]
        got = await c.call("pi/listSessions", {"query": "the", "limit": 1})
        assert len(got["sessions"]) == 1
        # a file appended to is scanned until indexed again: found at once either way
        with open(b, "a") as f:
            f.write(json.dumps(_msg(99, "user", "appended okapi")) + "\n")
        got = await c.call("pi/listSessions", {"query": "okapi"})
        assert [s["session"] for s in got["sessions"]] == [str(b)]


def test_a_line_the_scan_may_skip_is_left_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A message line as long as the scan may skip (store/scan.py MAX_LINE, made small here):
    whether it is read depends on how the scan reads, so the file is scanned."""
    from pi_server.store import scan as store_scan

    monkeypatch.setattr(store_scan, "MAX_LINE", 4000)
    monkeypatch.setattr(pickertext, "MAX_LINE", 4000)
    root = tmp_path / "sessions"
    long = root / "--w--" / "long.jsonl"
    _write(long, [json.dumps(_header("l")).encode(), json.dumps(_msg(1, "user", "okapi " + "x" * 5000)).encode()])
    write_session(root / "--w--" / "short.jsonl", ["okapi here"])
    ft = FullText(str(tmp_path / "ft.sqlite"))
    index_all(ft, root)
    for v in (picker.Vocab(), None):
        got, rest = from_index(ft, root, ["okapi"], v)
        assert got == scan(root, ["okapi"])
        assert rest == [str(long)]


def test_the_servers_reader_follows_a_database_built_anew(tmp_path: Path) -> None:
    """server/pickerindex.py: no database yet (None: the files are read), a database that
    cannot be read (None), one set aside and built anew (read from then on)."""
    from pi_server.server.pickerindex import Reader

    root = tmp_path / "sessions"
    a = root / "--w--" / "a.jsonl"
    write_session(a, ["zebracorn"])
    files, roots = [str(a)], [str(root)]
    path = str(tmp_path / "fulltext.sqlite")
    r = Reader(path)
    assert r._split(["zebracorn"], files, roots) is None
    ft = FullText(path)
    index_all(ft, root)
    assert r._split(["zebracorn"], files, roots) == ([str(a)], [])
    ft.close()
    for suffix in ("", "-wal", "-shm"):  # set aside as fulltext/db.py does: a foreign file in its place
        if os.path.exists(path + suffix):
            os.replace(path + suffix, path + ".old" + suffix)
    Path(path).write_bytes(b"not a database" * 100)
    assert r._split(["zebracorn"], files, roots) is None
    os.unlink(path)
    write_session(a, ["okapi"])  # rewritten, then indexed into a new database
    ft = FullText(path)
    index_all(ft, root)
    assert r._split(["okapi"], files, roots) == ([str(a)], [])
    assert r._split(["zebracorn"], files, roots) == ([], [])
    r.close()


def test_a_line_longer_than_a_step_is_read_to_its_end_not_the_rest_of_the_file(tmp_path: Path) -> None:
    """A line past a step's bytes (an image's base64, a large tool result) is read whole in
    its step, with the lines after it left to the next steps; all of them are found."""
    from pi_server.fulltext import search
    from pi_server.fulltext.query import parse

    path = tmp_path / "long.jsonl"
    long_text = "zanzibar " + "x" * (3 * ftdb.STEP_BYTES)
    after = [json.dumps(_msg(i, "user", f"quokka{i} " + "y" * 2000)).encode() for i in range(2, 2000)]
    _write(path, [json.dumps(_header("s")).encode(), json.dumps(_msg(1, "user", long_text)).encode(), *after])
    ft = FullText(str(tmp_path / "ft.sqlite"))
    assert not ft.index_step(str(path))  # the header: the step's bytes hold its newline
    assert not ft.index_step(str(path))  # the long line, read in a step of four times the bytes
    (done,) = ft.db.execute("SELECT done FROM files").fetchone()
    assert 3 * ftdb.STEP_BYTES < done <= 4 * ftdb.STEP_BYTES + 200 < path.stat().st_size  # not the rest of the file
    steps = 2
    while not ft.index_step(str(path)):
        steps += 1
    ft.flush()
    assert steps > 4
    for word, expect in (("zanzibar", 1), ("quokka1999", 1), ("quokka2", 111)):
        got = search.run(ft, parse(word), 200, 0, None, None, None)
        assert got["total"] == expect, (word, got["total"])


def test_words_without_case_are_found_in_the_bytes_as_the_lower_cased_text_finds_them(tmp_path: Path) -> None:
    """CJK words (no case) are looked for in the entries' bytes as they are: the same entries
    as a case-insensitive search of their text, among text that lower-casing changes."""
    from pi_server.fulltext import search
    from pi_server.fulltext.query import parse

    rng = random.Random(5)
    pieces = ["日本語", "中文", "テスト", "검색", "ĲİK\u212aß", "ÀÉÎ", "x", " ", "\u3000", "本", "語の", "İ日本"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(600)]
    path = tmp_path / "sessions" / "--w--" / "cjk.jsonl"
    ids = write_session(path, texts)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    while not ft.index_step(str(path)):
        pass
    ft.flush()
    for query in ("日本語", "中文", "本 語の", "テスト 검색", '"語の 本"', "日本", "本語"):
        q = parse(query)
        assert q.uncased, query
        got = search.run(ft, q, 1000, 0, None, None, None, budget_s=60)
        want = [ids[i] for i, t in enumerate(texts) if q.spans(t) is not None]
        assert sorted(h["entryId"] for h in got["hits"]) == sorted(want), query
        assert want, query
    assert not parse("日本 ĳ").uncased and not parse("x").uncased


def test_the_word_tables_words_are_the_tokenizers_runs() -> None:
    """`pickertext.words` (bytes made spaces, then split) gives the runs WORD finds."""
    rng = random.Random(5)
    alpha = "abcXYZ09 _-./\t\n\x00\x1f\u00e9\u0130\u212a日本\ud800😀,;"
    for _ in range(5000):
        s = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 30))).lower()
        assert pickertext.words(s) == set(pickertext.WORD.findall(s)), repr(s)
