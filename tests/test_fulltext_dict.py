"""The full-text index's compression dictionary (fulltext/codec.py): learned from the first
chunks' text, kept in the database, and every chunk read back alike, those written
before it was learned and after; a batch rolled back takes a dictionary it learned with it."""

from __future__ import annotations

import random
from pathlib import Path

from test_search import write_session

from pi_server.fulltext import codec as cc
from pi_server.fulltext import search
from pi_server.fulltext.db import FullText
from pi_server.fulltext.query import parse

VOCAB = "parser refactor database timeout module session branch summary token".split()


def _store(root: Path, n: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    files = []
    for i in range(n):
        texts = [" ".join(rng.choice(VOCAB) for _ in range(300)) + f" marker{i}y{j}z" for j in range(80)]
        f = root / f"s{i:02d}.jsonl"
        write_session(f, texts)
        files.append(f)
    return files


def _index(ft: FullText, files: list[Path]) -> None:
    for f in files:
        while not ft.index_step(str(f)):
            pass


def _flags(ft: FullText) -> set[int]:
    return {b[0] & 1 for (b,) in ft.db.execute("SELECT body FROM bodies")}  # bit 0: with the dictionary


def _finds(ft: FullText, word: str) -> int:
    got = search.run(ft, parse(word), 50, 0, None, None, None)
    return int(got["total"])


def test_chunks_before_and_after_the_dictionary_read_alike(tmp_path: Path) -> None:
    files = _store(tmp_path / "s", 24, 1)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, files)
    ft.flush()
    assert ft.codec.zdict is not None and 0 < len(ft.codec.zdict) <= cc.DICT_BYTES
    assert _flags(ft) == {0, 1}  # the first chunks, then the rest with it
    for i in (0, 23):
        assert _finds(ft, f"marker{i}y7z") == 1
    ft.close()
    ft = FullText(str(tmp_path / "ft.sqlite"))  # kept in the database
    assert ft.codec.zdict is not None
    assert _finds(ft, "marker0y39z") == 1 and _finds(ft, "marker23y79z") == 1
    for f in (files[0], files[23]):  # forgotten as they were added, whichever way compressed
        ft.forget(str(f))
    ft.flush()
    ft.db.execute("INSERT INTO fts(fts) VALUES('integrity-check')")
    ft.db.execute("INSERT INTO picker_words(picker_words) VALUES('integrity-check')")
    assert _finds(ft, "marker0y7z") == 0 and _finds(ft, "marker5y7z") == 1
    ft.close()


def test_a_batch_rolled_back_takes_the_dictionary_it_learned(tmp_path: Path) -> None:
    files = _store(tmp_path / "s", 24, 2)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, files[:20])
    assert ft.codec.zdict is not None  # learned in the open batch
    lost = ft.abort()  # as a full disk rolls a batch back
    assert lost == {str(f) for f in files[:20]}
    assert ft.codec.zdict is None
    assert ft.db.execute("SELECT count(*) FROM meta WHERE key=?", (cc.KEY,)).fetchone()[0] == 0
    _index(ft, files)
    ft.flush()
    assert ft.codec.zdict is not None
    assert all(_finds(ft, f"marker{i}y3z") == 1 for i in range(24))
    ft.db.execute("INSERT INTO fts(fts) VALUES('integrity-check')")
    ft.close()
