"""A session file's lines as the full-text index keeps them: chunks of consecutive
entries, each stored as its entries' text (compressed, with where each entry starts)
and indexed as the set of its lower-cased runs (query.py `runs`).

A chunk's body is a head, a JSON line, followed by the entries' texts joined by newlines
(UTF-8). The head holds, column by column (each column alike compresses well): the entries' ids, their distinct (type, role) pairs and each entry's
pair, the gaps between their times, the bytes of each text, and of its lead, the message
text a searched listing looks in (fulltext/pickertext.py; 0: none). `entries` gives them
back as `[id, type, role, ms, offset, lead]`. It is compressed (fulltext/codec.py).
Checking a candidate reads this, never the session file. The index is given each distinct
run once: a query is narrowed by the trigrams inside its words' runs (never across
them), so nothing it asks for is lost, and the trigram tokenizer does a fraction of the
work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from pi_server.fulltext import pickertext as pt
from pi_server.fulltext.codec import Codec
from pi_server.fulltext.extract import entry_ms, entry_role, entry_texts
from pi_server.fulltext.query import CJK_MARK, CJK_RUN, runs
from pi_server.store import entry_types as et

# the only characters outside ASCII that lower-case to ASCII (İ, the Kelvin sign), in UTF-8
_LOWERS_TO_ASCII = ("\u0130".encode(), "\u212a".encode())
CHUNK_CHARS = 65536  # text per chunk: larger chunks share trigrams (a smaller index)


@dataclass
class Chunk:
    ts: int  # the newest entry's ms
    body: bytes
    words: str  # what the trigram index is given
    raw: bytes  # its text (UTF-8)
    listed: set[str]  # the words of its user and assistant text (the searched listing's)


@dataclass
class Parsed:
    """What one run of lines gave: its chunks and the file's facts found in it."""

    chunks: list[Chunk] = field(default_factory=list)
    name: str | None = None
    first: str | None = None
    chars: int = 0  # characters of entry text


def index_words(texts: list[str]) -> str:
    """What the trigram index is given for the texts of a chunk: their distinct runs
    (query.py `runs`; a run is a word, or a part of one between punctuation: the parts
    of paths and code repeat far more than the whole), once each."""
    # (distinct first, in C; then those of three bytes or more: shorter ones hold no trigram)
    words = {r for r in set(runs("\n".join(texts).lower())) if len(r) > 2}
    # two characters of a CJK run are a term of their own: each pair is given as one trigram
    # (no case: looked for in the texts not all ASCII, as written; isascii() is a flag of a str)
    odd = [t for t in texts if not t.isascii()]
    for run in CJK_RUN.findall("\n".join(odd)) if odd else ():
        words.update((CJK_MARK + run[i : i + 2]).encode() for i in range(len(run) - 1))
    # a joint of two separators (which no run holds) gives fewer distinct trigrams across
    # runs than one space: a smaller index
    return b"\x1f\x1f".join(words).decode("utf-8", "surrogatepass")


LOWERS_TO_ASCII_MARK = 2  # a body's mark (codec.py): its text holds one of those characters


def lowers_to_ascii(body: bytes) -> bool:
    """Whether a chunk's text holds a character outside ASCII that lower-cases to ASCII
    (marked when it was written: two searches of the text took a third of a check)."""
    return bool(body[0] & LOWERS_TO_ASCII_MARK)


def _head(ents: list[list[Any]]) -> bytes:
    kinds: dict[tuple[str, str | None], int] = {}
    which = [kinds.setdefault((e[1], e[2]), len(kinds)) for e in ents]
    ms = [e[3] for e in ents]
    gaps = [ms[0], *(b - a for a, b in zip(ms, ms[1:], strict=False))]
    return orjson.dumps([[e[0] for e in ents], list(kinds), which, gaps, [e[4] for e in ents], [e[5] for e in ents]])


def entries(head: bytes) -> list[list[Any]]:
    """The entries `[id, type, role, ms, offset, lead]` of a chunk's head."""
    ids, kinds, which, gaps, sizes, leads = orjson.loads(head)
    out, ms, at = [], 0, 0
    for eid, k, gap, size, lead in zip(ids, which, gaps, sizes, leads, strict=True):
        ms += gap
        out.append([eid, kinds[k][0], kinds[k][1], ms, at, lead])
        at += size + 1
    return out


def _chunk(
    ents: list[list[Any]], texts: list[str], blobs: list[bytes], leads: list[str], ts: int, codec: Codec
) -> Chunk:
    raw = b"\n".join(blobs)
    odd = not all(b.isascii() for b in blobs) and any(c in raw for c in _LOWERS_TO_ASCII)
    body = codec.compress(_head(ents) + b"\n" + raw, LOWERS_TO_ASCII_MARK if odd else 0)
    return Chunk(ts, body, index_words(texts), raw, pt.words(" ".join(leads)) if leads else set())


def _parse(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except (orjson.JSONDecodeError, RecursionError):
        return pt.BAD


def parse_lines(data: bytes, codec: Codec, listing: pt.Reader) -> Parsed:
    """The chunks of `data` (whole lines); a line that is no entry is skipped. `listing`
    reads what a searched listing looks in as it goes."""
    out = Parsed()
    ents: list[list[Any]] = []
    texts: list[str] = []
    blobs: list[bytes] = []  # the texts in UTF-8
    leads: list[str] = []  # lower-cased, of user and assistant messages
    size = ts = 0
    for line in data.split(b"\n"):
        if not line or line.isspace():  # (no copy of the line, as strip() makes)
            continue
        if listing.state == pt.HEADER:
            listing.header(line)
        e = _parse(line)
        listed = listing.state == pt.PLAIN and listing.message(line, e)
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            continue
        lead, t = entry_texts(e)
        ms = entry_ms(e)
        ts = max(ts, ms)
        kind, role = e.get("type"), entry_role(e)
        if kind == et.SESSION_INFO:
            out.name = e.get("name") if isinstance(e.get("name"), str) else None
        elif out.first is None and role == "user":
            out.first = lead or None
        if not t:
            continue
        if listed and lead:
            leads.append(listing.text(lead))
        blob = t.encode("utf-8", "surrogatepass")
        # the lead's bytes when a searched listing looks in it (whatever the file's state)
        searched = lead and kind == et.MESSAGE and role in ("user", "assistant") and "content" in e["message"]
        plen = (len(lead) if lead.isascii() else len(lead.encode("utf-8", "surrogatepass"))) if searched else 0
        ents.append([e["id"], kind if isinstance(kind, str) else "", role, ms, len(blob), plen])  # its size: the head's
        texts.append(t)
        blobs.append(blob)
        size += len(t)
        if size >= CHUNK_CHARS:
            out.chunks.append(_chunk(ents, texts, blobs, leads, ts, codec))
            out.chars += size
            ents, texts, blobs, leads, size, ts = [], [], [], [], 0, 0
    if texts:
        out.chunks.append(_chunk(ents, texts, blobs, leads, ts, codec))
        out.chars += size
    return out


def unpack(body: bytes, codec: Codec) -> tuple[bytes, bytes]:
    """A chunk's entries (see `entries`) and text (UTF-8, see `decode`)."""
    data = codec.decompress(body)
    cut = data.index(b"\n")
    return data[:cut], data[cut + 1 :]


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


def bounds(ents: list[list[Any]], size: int) -> list[tuple[int, int]]:
    """Where each entry's text is in the chunk's text (bytes)."""
    ends = [e[4] - 1 for e in ents[1:]] + [size]
    return [(e[4], end) for e, end in zip(ents, ends, strict=True)]


def listed_words(head: bytes, raw: bytes) -> set[str]:
    """The words of the chunk's user and assistant text, as `Chunk.listed` had them."""
    lows = [decode(raw[e[4] : e[4] + e[5]]).lower() for e in entries(head) if e[5]]
    return pt.words(" ".join(lows)) if lows else set()
