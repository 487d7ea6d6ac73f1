"""pi 1.6.0's session picker query language: words (all must match, case-insensitive
substrings), "exact phrases" (whitespace normalized), re:PATTERN (case-insensitive)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

_WS = re.compile(r"\s+")
# what str's \s+ matches, in UTF-8
_SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_BYTES_WS = b"(?:" + b"|".join(re.escape(c.encode()) for c in _SPACES) + b")+"
MIN_GRAM = 3  # the trigram index finds words of at least this many characters
# and two characters of CJK (kana, ideographs, hangul), indexed as this mark and the pair
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
CJK_RUN = re.compile(f"[{CJK_CHARS}]{{2,}}")
CJK_MARK = "\x01"
# words of these scripts have no case: no lower-casing makes or changes them, so a text's own
# UTF-8 bytes hold them exactly when its lower-cased form does
_UNCASED = re.compile(f"[{CJK_CHARS}]+")


# a word's runs, as the trigram index and the word table split text: ASCII letters and
# digits, and anything not ASCII (in UTF-8, every other ASCII byte made a space). A query
# word found in a text has each of its runs inside one of the text's runs.
APART = bytes(c if chr(c).isdigit() or "a" <= chr(c) <= "z" or c >= 128 else 32 for c in range(256))


def runs(low: str) -> list[bytes]:
    """The runs of lower-cased text, in UTF-8."""
    return low.encode("utf-8", "surrogatepass").translate(APART).split()


def word_grams(w: str) -> set[str]:
    """The trigrams the index holds wherever lower-cased `w` is (and two-character CJK
    runs, indexed as CJK_MARK and the pair)."""
    out = set()
    for b in runs(w):
        r = b.decode("utf-8", "surrogatepass")
        if len(r) >= MIN_GRAM:
            out.update(r[i : i + 3] for i in range(len(r) - 2))
        elif len(r) == 2 and CJK_RUN.fullmatch(r):
            out.add(CJK_MARK + r)
    return out


class BadQuery(ValueError):
    pass


@dataclass
class Query:
    terms: list[str] = field(default_factory=list)  # lower-cased; phrases whitespace-normalized
    regex: re.Pattern[str] | None = None
    literals: list[str] = field(default_factory=list)  # a regex's required literal parts

    def grams(self) -> set[str]:
        """The trigrams the index must hold for a chunk to match (none: every chunk may)."""
        out: set[str] = set()
        for t in self.literals if self.regex else self.terms:
            for w in t.split():  # the index holds no trigram across words, nor across runs
                out |= word_grams(w)
        return out

    def __post_init__(self) -> None:
        words = [w for t in (self.literals if self.regex else self.terms) for w in t.split()]
        self.words = (words, [w.encode() for w in words])
        # a phrase as a pattern over lower-cased text with its whitespace as found
        phrases = [t.split() for t in self.terms if len(t.split()) > 1]
        self.phrases = (
            [re.compile(r"\s+".join(map(re.escape, p))) for p in phrases],
            [re.compile(_BYTES_WS.join(re.escape(w.encode()) for w in p)) for p in phrases],
        )
        self.ascii = all(w.isascii() for w in words)
        self.uncased = bool(words) and all(_UNCASED.fullmatch(w) for w in words)

    def chunk_may_match(self, low: str | bytes) -> bool:
        """`may_match`, and each phrase found as a phrase: the test of a chunk's text."""
        return self.may_match(low) and all(p.search(low) for p in self.phrases[isinstance(low, bytes)])  # type: ignore[arg-type]

    def may_match(self, low: str | bytes) -> bool:
        """Whether lower-cased `low` (bytes: ASCII text) holds every word of the terms (a
        regex: of its literal parts), a quick test before the exact one."""
        return all(w in low for w in self.words[isinstance(low, bytes)])  # type: ignore[operator]

    def spans(self, text: str) -> list[tuple[int, int]] | None:
        """Where the query matches `text` (None: it does not)."""
        if self.regex is not None:  # in-process only where no budget is needed (see regexrun)
            from pi_server.fulltext.regexrun import spans

            return spans(self.regex, text)
        low = text.lower()
        found = _find(self.terms, low)
        if found is None and self.phrases[0]:  # a phrase across other whitespace, or several spaces
            found = _find(self.terms, _WS.sub(" ", low))
        return found


def _find(terms: list[str], low: str) -> list[tuple[int, int]] | None:
    out = []
    for t in terms:
        i = low.find(t)
        if i < 0:
            return None
        out.append((i, i + len(t)))
    return sorted(out)


def parse(query: str) -> Query:
    trimmed = query.strip()
    if not trimmed:
        raise BadQuery("empty query")
    if trimmed.startswith("re:"):
        return _regex(trimmed[3:].strip())
    tokens: list[str] = []
    buf, in_quote = "", False
    for ch in trimmed:
        if ch == '"':
            if buf.strip():
                tokens.append(buf.strip())
            buf, in_quote = "", not in_quote
            continue
        if not in_quote and ch.isspace():
            if buf.strip():
                tokens.append(buf.strip())
            buf = ""
            continue
        buf += ch
    if in_quote:  # pi reads an unclosed quote as plain words
        tokens = trimmed.split()
    elif buf.strip():
        tokens.append(buf.strip())
    terms = [_WS.sub(" ", t.lower()).strip() for t in tokens]
    return Query(terms=[t for t in terms if t])


def _regex(pattern: str) -> Query:
    if not pattern:
        raise BadQuery("empty regex")
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error as e:
        raise BadQuery(f"invalid regex: {e}") from None
    return Query(regex=rx, literals=[s.lower() for s in _literals(pattern)])


def _literals(pattern: str) -> list[str]:
    """Literal runs every match must contain (top-level sequence only)."""
    try:
        seq = sre_parse.parse(pattern)
    except (sre_constants.error, RecursionError):
        return []
    out, run = [], ""
    for op, arg in seq:
        if op is sre_constants.LITERAL:
            run += chr(arg)
            continue
        if run:
            out.append(run)
        run = ""
        if op is sre_constants.BRANCH:
            return []  # an alternation at the top: no part is required
    if run:
        out.append(run)
    return out
