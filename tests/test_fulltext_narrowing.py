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
