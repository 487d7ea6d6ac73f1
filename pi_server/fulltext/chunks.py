"""A session file's lines as the full-text index keeps them: chunks of consecutive
entries, each stored as its entries' text (compressed, with where each entry starts)
and indexed as the set of its lower-cased words.

A chunk's body is zlib of a JSON line `[[id, type, role, ms, offset], ...]` followed by
the entries' texts joined by newlines (UTF-8), `offset` the byte where each starts. Checking a candidate
reads this, never the session file. The index is given each distinct whitespace-
separated word once: a query is narrowed by the trigrams inside its words (never
across them), so nothing it asks for is lost, and the trigram tokenizer does a
fraction of the work.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from pi_server.fulltext.extract import entry_ms, entry_role, entry_text, parse_line
from pi_server.fulltext.query import CJK_MARK, CJK_RUN
from pi_server.store import entry_types as et
from pi_server.store.content import join_text

# the only characters outside ASCII that lower-case to ASCII (İ, the Kelvin sign)
LOWERS_TO_ASCII = re.compile("\u0130|\u212a".encode())
CHUNK_CHARS = 32 << 10  # text per chunk: larger chunks share trigrams (a smaller index)
ZLIB_LEVEL = 6


@dataclass
class Chunk:
    ts: int  # the newest entry's ms
    body: bytes
    words: str  # what the trigram index is given


@dataclass
class Parsed:
    """What one run of lines gave: its chunks and the file's facts found in it."""

    chunks: list[Chunk] = field(default_factory=list)
    name: str | None = None
    first: str | None = None
    chars: int = 0  # characters of entry text


def index_words(text: str) -> str:
    low = text.lower()
    words = set(low.split())
    # two characters of a CJK run are a term of their own: each pair is given as one trigram
    for run in CJK_RUN.findall(low):
        words.update(CJK_MARK + run[i : i + 2] for i in range(len(run) - 1))
    # words of one or two characters hold no trigram; a joint of two separators (which no
    # word holds) gives fewer distinct trigrams across words than one space: a smaller index
    return "\x1f\x1f".join([w for w in words if len(w) > 2])


def _chunk(ents: list[list[Any]], texts: list[str], ts: int) -> Chunk:
    raw = b"\n".join(t.encode("utf-8", "surrogatepass") for t in texts)
    body = zlib.compress(orjson.dumps(ents) + b"\n" + raw, ZLIB_LEVEL)
    return Chunk(ts, body, index_words("\n".join(texts)))


def parse_lines(data: bytes) -> Parsed:
    """The chunks of `data` (whole lines); a line that is no entry is skipped."""
    out = Parsed()
    ents: list[list[Any]] = []
    texts: list[str] = []
    size = at = ts = 0
    for line in data.split(b"\n"):
        e = parse_line(line) if line.strip() else None
        if e is None:
            continue
        t, ms = entry_text(e), entry_ms(e)
        ts = max(ts, ms)
        kind, role = e.get("type"), entry_role(e)
        if kind == et.SESSION_INFO:
            out.name = e.get("name") if isinstance(e.get("name"), str) else None
        elif out.first is None and role == "user":
            out.first = join_text(e["message"].get("content"), " ") or None
        if not t:
            continue
        ents.append([e["id"], kind if isinstance(kind, str) else "", role, ms, at])
        texts.append(t)
        size += len(t)
        at += len(t.encode("utf-8", "surrogatepass")) + 1
        if size >= CHUNK_CHARS:
            out.chunks.append(_chunk(ents, texts, ts))
            out.chars += size
            ents, texts, size, at, ts = [], [], 0, 0, 0
    if texts:
        out.chunks.append(_chunk(ents, texts, ts))
        out.chars += size
    return out


def unpack(body: bytes) -> tuple[bytes, bytes]:
    """A chunk's entries (see `entries`) and text (UTF-8, see `decode`)."""
    data = zlib.decompress(body)
    cut = data.index(b"\n")
    return data[:cut], data[cut + 1 :]


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


def entries(head: bytes) -> list[list[Any]]:
    """The entries `[id, type, role, ms, offset]` of a chunk's head."""
    ents: list[list[Any]] = orjson.loads(head)
    return ents


def bounds(ents: list[list[Any]], size: int) -> list[tuple[int, int]]:
    """Where each entry's text is in the chunk's text (bytes)."""
    ends = [e[4] - 1 for e in ents[1:]] + [size]
    return [(e[4], end) for e, end in zip(ents, ends, strict=True)]
