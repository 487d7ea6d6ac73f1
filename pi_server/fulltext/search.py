"""A search over the full-text index: candidates from the trigram index, each checked
exactly against the entry's text, newest first."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any

from pi_server.fulltext.db import FullText, Hit
from pi_server.fulltext.query import Query
from pi_server.jsutil import u16len
from pi_server.store.names import to_wire

SNIPPET = 160  # characters of context around the first match
BUDGET_S = 2.0  # past this, a search answers what it found, marked incomplete
COUNT_S = 0.01  # once the page is known, matches are counted for at most this long
REGEX_BATCH = 256  # texts per call of a regex matcher
# (pattern, texts, seconds left) -> spans per text, or None when the time ran out
Matcher = Callable[[str, list[str], float], list[Any] | None]


def run(
    ft: FullText,
    q: Query,
    limit: int,
    offset: int,
    sessions: list[str] | None,
    roles: list[str] | None,
    since_ms: int | None,
    budget_s: float = BUDGET_S,
    matcher: Matcher | None = None,
) -> dict[str, Any]:
    deadline = time.monotonic() + budget_s
    want_roles = set(roles) if roles is not None else None
    hits: list[Hit] = []
    unchecked: list[Hit] = []  # a regex's candidates, checked by the matcher in batches
    incomplete = at_least = False
    by_matcher = matcher is not None and q.regex is not None
    need = offset + limit
    newest: list[int] = []  # a min-heap of the `need` newest matches' ms
    settled_at: float | None = None
    for cid, path, ts in ft.candidates(q, sessions, since_ms):
        now = time.monotonic()
        if now > deadline:
            incomplete = True
            break
        # chunks come newest first: once `need` matches are at least as new as this chunk's
        # newest entry, the page is final and the rest only adds to the count
        if settled_at is None and len(newest) >= need and newest[0] >= ts:
            settled_at = now
        if settled_at is not None and now - settled_at > COUNT_S:
            at_least = True
            break
        seen = len(hits)
        found = [h for h in ft.verify(q, cid, path, want_roles, not by_matcher) if since_ms is None or h.ms >= since_ms]
        if not by_matcher:
            hits += found
            _keep_newest(newest, found, need)
            continue
        unchecked += found
        if len(unchecked) >= REGEX_BATCH and not _match(matcher, q, unchecked, hits, deadline):
            incomplete, unchecked = True, []
            break
        _keep_newest(newest, hits[seen:], need)
    if unchecked and not _match(matcher, q, unchecked, hits, deadline):
        incomplete = True
    hits.sort(key=lambda h: h.ms, reverse=True)
    page = [_wire(ft, h) for h in hits[offset : offset + limit]]
    indexed, partial = ft.counts()
    out: dict[str, Any] = {"hits": page, "total": len(hits), "indexedFiles": indexed, "pendingFiles": partial}
    if incomplete:
        out["incomplete"] = True
    if at_least:
        out["totalAtLeast"] = True
    return out


def _keep_newest(heap: list[int], found: list[Hit], need: int) -> None:
    for h in found:
        if len(heap) < need:
            heapq.heappush(heap, h.ms)
        elif h.ms > heap[0]:
            heapq.heapreplace(heap, h.ms)


def _match(matcher: Any, q: Query, unchecked: list[Hit], hits: list[Hit], deadline: float) -> bool:
    """Check `unchecked` with the matcher into `hits`; False when the time ran out."""
    assert q.regex is not None
    got = matcher(q.regex.pattern, [h.text for h in unchecked], deadline - time.monotonic())
    if got is None:
        return False
    for h, spans in zip(unchecked, got, strict=True):
        if spans is not None:
            h.spans = [tuple(s) for s in spans]
            hits.append(h)
    unchecked.clear()
    return True


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _wire(ft: FullText, h: Hit) -> dict[str, Any]:
    snippet, ranges = snippet_of(h.text, h.spans)
    name, first = ft.file_facts(h.session)
    out: dict[str, Any] = {
        "session": to_wire(h.session),
        "entryId": h.entry_id,
        "type": h.type,
        "timestamp": _iso(h.ms),
        "snippet": snippet,
        "ranges": ranges,
        "firstMessage": first or "(no messages)",
    }
    if h.role is not None:
        out["role"] = h.role
    if name:
        out["sessionName"] = name
    return out


def snippet_of(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[list[int]]]:
    """Text around the first match, one line, and the matches in it (UTF-16 offsets)."""
    first = spans[0][0]
    lo = max(0, first - SNIPPET // 3)
    hi = min(len(text), lo + SNIPPET)
    body = text[lo:hi]
    prefix = "…" if lo > 0 else ""
    snippet = prefix + body.replace("\n", " ").replace("\r", " ").replace("\t", " ") + ("…" if hi < len(text) else "")
    ranges = []
    for a, b in spans:
        if a >= lo and b <= hi and b > a:
            s = u16len(prefix + body[: a - lo])
            ranges.append([s, s + u16len(body[a - lo : b - lo])])
    return snippet, ranges
