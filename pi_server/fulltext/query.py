"""pi 1.6.0's session picker query language: words (all must match, case-insensitive
substrings), "exact phrases" (whitespace normalized), re:PATTERN (case-insensitive)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

_WS = re.compile(r"\s+")
MIN_GRAM = 3  # the trigram index finds terms of at least this many characters


class BadQuery(ValueError):
    pass


@dataclass
class Query:
    terms: list[str] = field(default_factory=list)  # lower-cased; phrases whitespace-normalized
    regex: re.Pattern[str] | None = None
    literals: list[str] = field(default_factory=list)  # a regex's required literal parts

    def index_terms(self) -> list[str]:
        """Terms the trigram index can narrow by."""
        return [t for t in (self.literals if self.regex else self.terms) if len(t) >= MIN_GRAM]

    def __post_init__(self) -> None:
        # a phrase as a pattern over lower-cased text with its whitespace as found
        self.phrases = [re.compile(r"\s+".join(map(re.escape, t.split()))) for t in self.terms if len(t.split()) > 1]

    def chunk_may_match(self, low: str) -> bool:
        """`may_match`, and each phrase found as a phrase: the test of a chunk's text."""
        return self.may_match(low) and all(p.search(low) for p in self.phrases)

    def may_match(self, low: str) -> bool:
        """Whether lower-cased `low` holds every word of the terms (a regex: of its literal
        parts), a quick test before the exact one."""
        return all(w in low for t in (self.literals if self.regex else self.terms) for w in t.split())

    def spans(self, text: str) -> list[tuple[int, int]] | None:
        """Where the query matches `text` (None: it does not)."""
        if self.regex is not None:  # in-process only where no budget is needed (see regexrun)
            from pi_server.fulltext.regexrun import spans

            return spans(self.regex, text)
        low = text.lower()
        found = _find(self.terms, low)
        if found is None and self.phrases:  # a phrase across other whitespace, or several spaces
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
