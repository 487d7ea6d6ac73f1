"""The trigrams a search asks the full-text index for (fulltext/db.py `narrowing`): those
of words in nearly every chunk are left out, and the answer is the same."""

from __future__ import annotations

import random
from pathlib import Path

from test_fulltext_dict import _index
from test_search import write_session

from pi_server.fulltext import search
from pi_server.fulltext.db import FullText
from pi_server.fulltext.query import parse


def test_common_trigrams_are_not_asked_and_the_answer_is_the_same(tmp_path: Path) -> None:
    rng = random.Random(3)
    files = []
    for i in range(6):
        # "common" is in every message; "rare" in one message of two files
        texts = [" ".join(rng.choice(["alpha", "beta", "gamma"]) for _ in range(2000)) + " common" for _ in range(24)]
        if i in (1, 4):
            texts[5] += " rarest"
        files.append(tmp_path / "s" / f"s{i}.jsonl")
        write_session(files[-1], texts)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, files)
    ft.flush()
    assert ft.db.execute("SELECT count(*) FROM chunks").fetchone()[0] > 20
    assert ft.narrowing(parse("common").grams()) == []
    assert ft.narrowing(parse("rarest").grams()) == sorted(parse("rarest").grams())
    assert search.run(ft, parse("common"), 500, 0, None, None, None)["total"] == 144
    got = search.run(ft, parse("rarest common"), 50, 0, None, None, None)
    assert got["total"] == 2 and {h["session"] for h in got["hits"]} == {str(files[1]), str(files[4])}
    ft.forget(str(files[1]))  # the shares are asked again once the index changed by a tenth
    ft.flush()
    assert search.run(ft, parse("rarest"), 50, 0, None, None, None)["total"] == 1
    ft.close()


def test_any_substring_is_found_as_a_scan_finds_it(tmp_path: Path) -> None:
    """The index holds each run of a text (letters and digits, or anything not ASCII,
    between punctuation and spaces): a query word asks only the trigrams inside its own
    runs, so a substring across punctuation, of any case or script, is never lost."""
    rng = random.Random(11)
    alpha = "abcdefgXYZ0129 ./-_:()[]{}\"'\n\t\u00e9\u00c9\u0130\u212a\u03a3\u03c3日本語中文テスト\u3000\xa0\x1f"
    texts = ["".join(rng.choice(alpha) for _ in range(rng.randint(1, 60))) for _ in range(300)]
    f = tmp_path / "s" / "s.jsonl"
    ids = write_session(f, texts)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, [f])
    ft.flush()
    for _ in range(400):
        t = rng.choice(texts)
        a = rng.randrange(len(t))
        q = t[a : a + rng.randint(1, 12)].replace('"', "")
        if not q.strip() or q.strip().startswith("re:"):
            continue
        query = parse(q)
        want = {ids[i] for i, x in enumerate(texts) if all(w in x.lower() for w in query.terms)}
        got = search.run(ft, query, 1000, 0, None, None, None)
        assert {h["entryId"] for h in got["hits"]} == want, q
    ft.close()


def test_a_chunk_is_marked_when_its_text_lower_cases_to_ascii(tmp_path: Path) -> None:
    """İ and the Kelvin sign lower-case to ASCII: a chunk holding one is marked when written,
    and an ASCII query is then checked on the lower-cased text, not its bytes."""
    from pi_server.fulltext import chunks as ch

    f = tmp_path / "s" / "s.jsonl"
    ids = write_session(f, ["plain text only", "\u0130stanbul and 5\u212a", "caf\u00e9 ol\u00e9"])
    g = tmp_path / "s" / "t.jsonl"
    write_session(g, ["istanbul without the dotted capital"], start_ts=5)
    ft = FullText(str(tmp_path / "ft.sqlite"))
    _index(ft, [f, g])
    ft.flush()
    marks = [ch.lowers_to_ascii(b) for (b,) in ft.db.execute("SELECT body FROM bodies ORDER BY id")]
    assert marks == [True, False]
    got = search.run(ft, parse("i\u0307stanbul"), 10, 0, None, None, None)  # İ lower-cased
    assert [h["entryId"] for h in got["hits"]] == [ids[1]]
    assert [h["entryId"] for h in search.run(ft, parse("5k"), 10, 0, None, None, None)["hits"]] == [ids[1]]
    ft.close()
