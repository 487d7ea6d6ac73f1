"""What a searched listing looks in, read off the lines the full-text index parses: the
session's name and its user and assistant text (store/discovery.py `search_text`), as
the scan of the file would read them.

Only plain files are answered from the index: a current-format header first, every line
that matters read as the scan reads it. Anything else (an older format that pi migrates,
text that is not UTF-8, a line too long to index, a message without an id...) marks the
file as one the listing scans the old way, so the answer is always the scan's.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from pi_server.fulltext.query import runs
from pi_server.jsutil import js_trim
from pi_server.store import entry_types as et
from pi_server.store.scan import MAX_LINE

HEADER, PLAIN, SCAN = 0, 1, 2  # a file's state: header not seen yet / kept here / scanned
# the ascii tokenizer's words: runs of ASCII letters and digits and anything not ASCII
# (lower-cased text holds no A-Z, the only characters it folds)
WORD = re.compile("[0-9a-z\u0080-\U0010ffff]+")
# a line matters when it may be a message of the user or the assistant, or name the session;
# a JSON string can spell any of these words with \\u escapes, so such lines are read too
_MATTERS = re.compile(
    b"|".join(map(re.escape, (b'"user"', b'"assistant"', b'"' + et.SESSION_INFO.encode() + b'"', b"\\u")))
)
BAD = object()  # a line that is no JSON


class Reader:
    """One file's picker state as its lines are read in order: `state` and the session's
    name (the last session_info's, trimmed)."""

    def __init__(self, state: int = HEADER, name: str | None = None) -> None:
        self.state, self.name = state, name

    def header(self, line: bytes) -> None:
        try:
            h = orjson.loads(line.strip())
        except orjson.JSONDecodeError:
            h = None
        v = h.get("version") if isinstance(h, dict) else None
        # version 3 and later: pi migrates nothing, the entries are read as written
        plain = isinstance(h, dict) and h.get("type") == et.SESSION and isinstance(h.get("id"), str)
        self.state = PLAIN if plain and type(v) is int and v >= 3 else SCAN

    def message(self, line: bytes, e: Any) -> bool:
        """Whether the line (`e`: parsed, or BAD) is a message whose content the listing
        searches; a line the scan may read otherwise than the index marks the file SCAN."""
        if e is BAD or len(line) + 1 >= MAX_LINE:  # the scan skips a line longer than that
            # not UTF-8, a lone surrogate, deep nesting: the scan reads these its way, and
            # they matter only when they may be a message or a name (a parsed one always is)
            if _MATTERS.search(line):
                self.state = SCAN
            return False
        if not isinstance(e, dict):
            return False
        t = e.get("type")
        if t == et.SESSION_INFO:
            n = e.get("name")
            self.name = (js_trim(n) or None) if isinstance(n, str) else None
            return False
        if t != et.MESSAGE or "message" not in e:
            return False
        msg = e["message"]
        if not isinstance(msg, dict):
            if _MATTERS.search(line):
                self.state = SCAN
            return False
        if msg.get("role") not in ("user", "assistant") or "content" not in msg:
            return False
        if not isinstance(e.get("id"), str):  # no entry of the index holds its text
            self.state = SCAN
            return False
        return True

    def text(self, lead: str) -> str:
        """A message's searched text (its content's text), lower-cased."""
        if "\x00" in lead:
            self.state = SCAN
        return lead.lower()


def words(low: str) -> set[str]:
    """The words of lower-cased text, as the word table splits it (WORD)."""
    return {w.decode("utf-8", "surrogatepass") for w in set(runs(low))}  # twice as fast as WORD.findall
