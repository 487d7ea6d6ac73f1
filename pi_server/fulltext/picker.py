"""The session picker's text in the full-text database: what a searched `pi/listSessions`
looks in, so it is answered without reading the session files.

A searched listing matches a session when every word of the query is a substring of its
name and all its user and assistant text, lower-cased (store/discovery.py `search_text`).
Here that text is kept per file as rows of whole message texts (lower-cased, joined by a
space, each row compressed), with a trigram table and a word table over the rows, and
every word of them once (the vocabulary). A query word holds no whitespace, so it never
spans two messages, nor two rows: a session has a word when its name has it or one of its
rows does. A query word made of word characters is in a row only inside one of the row's
words: the vocabulary names those words and the word table the rows holding them, an
exact answer. Other words (punctuation in them, or inside too many words) are narrowed by
the trigram table (a word of three characters or more must have all its trigrams in the
row) and each row it names is checked exactly; shorter ones check every row of the
files still in the running.

Only plain files are kept here: a current-format header first, every line that matters
read as the scan reads it. Anything else (an older format that pi migrates, text that is
not UTF-8, a line too long to index...) marks the file as one the listing scans the old
way, so the answer is always the scan's.
"""

from __future__ import annotations

import os
import re
import sqlite3
import zlib
from collections.abc import Iterable
from stat import S_ISLNK
from typing import Any

import orjson

from pi_server.jsutil import js_trim
from pi_server.store import entry_types as et
from pi_server.store.content import join_text
from pi_server.store.discovery import is_within
from pi_server.store.scan import MAX_LINE

FORMAT = "2"
ROW_CHARS = 8 << 10  # text per row: a word is checked against one row at a time
HEADER, PLAIN, SCAN = 0, 1, 2  # a file's state: header not seen yet / kept here / scanned
SCHEMA = """
CREATE TABLE IF NOT EXISTS picker_files(file INTEGER PRIMARY KEY, state INT NOT NULL, name TEXT);
CREATE TABLE IF NOT EXISTS picker_rows(id INTEGER PRIMARY KEY, text BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS picker_fts USING fts5(
  text, tokenize='trigram case_sensitive 1', detail=none, content='');
CREATE VIRTUAL TABLE IF NOT EXISTS picker_words USING fts5(text, tokenize='ascii', detail=none, content='');
CREATE TABLE IF NOT EXISTS picker_vocab(id INTEGER PRIMARY KEY, word TEXT UNIQUE NOT NULL);
"""
# the ascii tokenizer's words: runs of ASCII letters and digits and anything not ASCII
# (lower-cased text holds no A-Z, the only characters it folds)
_WORD = re.compile("[0-9a-z\u0080-\U0010ffff]+")
MAX_WORDS = 400  # a query word inside more words than this is looked for the other way
VERIFY_ROWS = 256  # candidate rows read and checked, rather than asking the vocabulary
LONG_WORD = 32000  # bytes: FTS5 keeps a longer word cut, so it cannot vouch for the rest
SHIFT = 24  # a row's id is its file's id << SHIFT, plus its number in the file: no lookup names its file
# a line matters when it may be a message of the user or the assistant, or name the session;
# a JSON string can spell any of these words with \\u escapes, so such lines are read too
_MATTERS = re.compile(
    b"|".join(map(re.escape, (b'"user"', b'"assistant"', b'"' + et.SESSION_INFO.encode() + b'"', b"\\u")))
)


def ensure(db: sqlite3.Connection) -> None:
    """The tables, on a database just opened. One that holds indexed files but not these
    tables was built before them: it is refused (sqlite3.DatabaseError), so it is set
    aside and built again, with them."""
    row = db.execute("SELECT value FROM meta WHERE key='picker'").fetchone()
    if row is None:
        if db.execute("SELECT count(*) FROM files").fetchone()[0]:
            raise sqlite3.DatabaseError("indexed without the session picker's text")
        db.executescript(SCHEMA)
        db.execute("INSERT INTO meta VALUES('picker', ?)", (FORMAT,))
    elif row[0] != FORMAT:
        raise sqlite3.DatabaseError(f"picker format {row[0]}, not {FORMAT}")


# ---------------------------------------------------------------------- indexing


def add(db: sqlite3.Connection, fid: int, base: int, data: bytes) -> None:
    """Complete lines `data` (read at `base`) of file `fid` were indexed: keep what they add
    to its picker text. Runs in the indexing transaction."""
    row = db.execute("SELECT state, name FROM picker_files WHERE file=?", (fid,)).fetchone()
    if row is None:
        if base:  # the file was known before this table: never seen whole
            _set(db, fid, SCAN, None)
            return
        state, name = HEADER, None
    else:
        state, name = row
    if state == SCAN:
        return
    texts: list[str] = []
    try:
        for line in data.split(b"\n"):
            if state == HEADER:
                if line.strip():
                    state = PLAIN if _plain_header(line) else SCAN
            elif _MATTERS.search(line):
                name = _line(line, texts, name)
            if state == SCAN:
                break
    except _Irregular:
        state = SCAN
    if state == SCAN or not _rows(db, fid, texts):
        forget(db, fid)
        _set(db, fid, SCAN, None)
        return
    _set(db, fid, state, name)


class _Irregular(Exception):
    """A line the scan may read otherwise than this module does."""


def _plain_header(line: bytes) -> bool:
    try:
        h = orjson.loads(line.strip())
    except orjson.JSONDecodeError:
        return False
    v = h.get("version") if isinstance(h, dict) else None
    # version 3 and later: pi migrates nothing, the entries are read as written
    return h.get("type") == et.SESSION and isinstance(h.get("id"), str) and type(v) is int and v >= 3


def _line(line: bytes, texts: list[str], name: str | None) -> str | None:
    """Add the line's message text, if any, to `texts`; the session's name after it."""
    raw = line.strip()
    if not raw:
        return name
    if len(line) + 1 >= MAX_LINE:  # the scan skips a line longer than that (newline or not)
        raise _Irregular
    try:
        e = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _Irregular from None  # not UTF-8, a lone surrogate, deep nesting: the scan reads these its way
    if not isinstance(e, dict):
        return name
    t = e.get("type")
    if t == et.SESSION_INFO:
        n = e.get("name")
        return (js_trim(n) or None) if isinstance(n, str) else None
    if t != et.MESSAGE or "message" not in e:
        return name
    msg = e["message"]
    if not isinstance(msg, dict):
        raise _Irregular
    if msg.get("role") in ("user", "assistant") and "content" in msg:
        text = join_text(msg["content"], " ")
        if text:
            if "\x00" in text:
                raise _Irregular
            texts.append(text.lower())
    return name


def _rows(db: sqlite3.Connection, fid: int, texts: list[str]) -> bool:
    """Add the texts as rows of the file; False when its row ids ran out (left to the scan)."""
    if not texts:
        return True
    (last,) = db.execute("SELECT max(id) FROM picker_rows WHERE id BETWEEN ? AND ?", _span(fid)).fetchone()
    rid = fid << SHIFT if last is None else last + 1
    if rid + len(texts) > _span(fid)[1]:
        return False
    start = size = 0
    words: set[str] = set()
    for i, t in enumerate(texts):
        size += len(t) + 1
        if size >= ROW_CHARS or i == len(texts) - 1:
            text = " ".join(texts[start : i + 1])
            db.execute("INSERT INTO picker_rows(id, text) VALUES(?, ?)", (rid, zlib.compress(text.encode())))
            db.execute("INSERT INTO picker_fts(rowid, text) VALUES(?, ?)", (rid, text))
            db.execute("INSERT INTO picker_words(rowid, text) VALUES(?, ?)", (rid, text))
            words.update(_WORD.findall(text))
            start, size, rid = i + 1, 0, rid + 1
    db.executemany("INSERT OR IGNORE INTO picker_vocab(word) VALUES(?)", ((w,) for w in words))
    return True


def _span(fid: int) -> tuple[int, int]:
    """The ids of the file's rows."""
    return fid << SHIFT, ((fid + 1) << SHIFT) - 1


def _set(db: sqlite3.Connection, fid: int, state: int, name: str | None) -> None:
    db.execute("INSERT OR REPLACE INTO picker_files(file, state, name) VALUES(?, ?, ?)", (fid, state, name))


def forget(db: sqlite3.Connection, fid: int) -> None:
    """The file is dropped from the index (gone, rewritten): its rows go, trigrams included."""
    for rid, blob in db.execute("SELECT id, text FROM picker_rows WHERE id BETWEEN ? AND ?", _span(fid)).fetchall():
        # a contentless table forgets a row given the text it was added with
        text = zlib.decompress(blob).decode()
        db.execute("INSERT INTO picker_fts(picker_fts, rowid, text) VALUES('delete', ?, ?)", (rid, text))
        db.execute("INSERT INTO picker_words(picker_words, rowid, text) VALUES('delete', ?, ?)", (rid, text))
    db.execute("DELETE FROM picker_rows WHERE id BETWEEN ? AND ?", _span(fid))
    db.execute("DELETE FROM picker_files WHERE file=?", (fid,))


# ---------------------------------------------------------------------- matching


def kept(db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
    """path -> (file id, dev, ino, size, mtime_ns, name) of the files whose picker text is
    kept here (whole, as of that stat)."""
    sql = (
        "SELECT f.path, f.id, f.dev, f.ino, f.size, f.mtime_ns, p.name FROM files f"
        " JOIN picker_files p ON p.file = f.id WHERE p.state = ? AND f.size >= 0"
    )
    return {r[0]: r[1:] for r in db.execute(sql, (PLAIN,))}


def matching(
    db: sqlite3.Connection, tokens: list[str], fids: dict[int, str | None], vocab: Vocab | None = None
) -> set[int]:
    """Of the files `fids` (file id -> name), those whose picker text holds every token."""
    alive = set(fids)
    blobs: dict[int, bytes] = {}  # rows read for this query
    # the longest words first: they leave the fewest files for the next
    for t in sorted(set(tokens), key=lambda t: -len(t)):
        if not alive:
            break
        alive = _holding(db, t, alive, fids, vocab, blobs)
    return alive


def _holding(
    db: sqlite3.Connection,
    t: str,
    alive: set[int],
    fids: dict[int, str | None],
    vocab: Vocab | None,
    blobs: dict[int, bytes],
) -> set[int]:
    """Of the files `alive`, those whose name or text holds `t`."""
    found = {f for f in alive if fids[f] is not None and t in fids[f].lower()}  # type: ignore[union-attr]
    wordlike = _wordlike(t)
    if wordlike:  # a row holding the word itself holds the text: nothing to check
        found |= alive & {rid >> SHIFT for rid in _rowids(db, "picker_words", _quoted(t))}
    left = alive - found
    if not left:
        return found
    rows: dict[int, list[int]] | None = None
    if len(t) >= 3:  # rows holding all its trigrams may hold it
        rows = {}
        for rid in _rowids(db, "picker_fts", " AND ".join(_quoted(t[i : i + 3]) for i in range(len(t) - 2))):
            if rid >> SHIFT in left:
                rows.setdefault(rid >> SHIFT, []).append(rid)
    many = rows is None or sum(map(len, rows.values())) > VERIFY_ROWS
    words = vocab.containing(t) if vocab is not None and wordlike and many else None
    if words is not None:  # `t` is in a text only inside one of its words: the rows holding those
        held: set[int] = set()
        for i in range(0, len(words), 100):
            held |= {rid >> SHIFT for rid in _rowids(db, "picker_words", " OR ".join(map(_quoted, words[i : i + 100])))}
        return found | (left & held)
    if rows is None:  # below a trigram: any row may
        rows = {
            f: [r for (r,) in db.execute("SELECT id FROM picker_rows WHERE id BETWEEN ? AND ?", _span(f))] for f in left
        }
    needle = t.encode()  # UTF-8: a substring of the bytes is one of the text
    return found | {f for f, rids in rows.items() if _any_row(db, rids, needle, blobs)}


def _wordlike(t: str) -> bool:
    """One token of the ascii tokenizer (ASCII letters and digits, and anything not ASCII),
    which folds nothing but A-Z (not in lower-cased text)."""
    return all(c.isalnum() or not c.isascii() for c in t)


def _quoted(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def _rowids(db: sqlite3.Connection, table: str, match: str) -> list[int]:
    return [r for (r,) in db.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match,))]


def _any_row(db: sqlite3.Connection, rids: Iterable[int], needle: bytes, blobs: dict[int, bytes]) -> bool:
    for rid in rids:
        text = blobs.get(rid)
        if text is None:
            (blob,) = db.execute("SELECT text FROM picker_rows WHERE id=?", (rid,)).fetchone()
            text = blobs[rid] = zlib.decompress(blob)
        if needle in text:
            return True
    return False


class Vocab:
    """Every word of the kept text (as the word table splits it), read once and then as it
    grows: which words hold a query word is a substring search of them all. Also the kept
    files (`kept`), read again only when the database changed."""

    def __init__(self) -> None:
        self.text = "\n"
        self.last = 0  # the highest word id read
        self.files: dict[str, tuple[Any, ...]] | None = None
        self.version = -1

    def kept(self, db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
        # data_version changes when another connection (the indexer's) commits
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if self.files is None or version != self.version:
            self.files, self.version = kept(db), version
        return self.files

    def refresh(self, db: sqlite3.Connection) -> None:
        new = db.execute("SELECT id, word FROM picker_vocab WHERE id > ? ORDER BY id", (self.last,)).fetchall()
        if new:
            self.last = new[-1][0]
            self.text += "\n".join(w for _, w in new) + "\n"

    def containing(self, t: str) -> list[str] | None:
        """The words holding `t` (None: too many to ask for, or one too long to vouch for)."""
        s, out = self.text, []
        i = s.find(t)
        while i >= 0:
            a, b = s.rfind("\n", 0, i) + 1, s.find("\n", i)
            out.append(s[a:b])
            if len(out) > MAX_WORDS or (b - a >= LONG_WORD // 4 and len(s[a:b].encode()) >= LONG_WORD):
                return None
            i = s.find(t, b)
        return out


def split(
    db: sqlite3.Connection, tokens: list[str], files: list[str], roots: list[str], vocab: Vocab | None = None
) -> tuple[list[str], list[str]]:
    """A searched listing's files (`files`: found by walking the roots): (those the kept text
    matches, those to scan the old way: not kept here, or changed since they were indexed).
    Files outside the roots (a symlink out of them) or gone are in neither, as the scan
    leaves them out."""
    known = kept(db) if vocab is None else vocab.kept(db)
    dirs: dict[str, str] = {}
    names: dict[int, str | None] = {}
    paths: dict[int, str] = {}
    rest = []
    for path in files:
        try:
            st = os.lstat(path)
            # found by walking the roots (no symlinked folder followed): only a symlink may lead out
            if S_ISLNK(st.st_mode):
                if not is_within(path, roots, dirs, True):
                    continue
                st = os.stat(path)
        except OSError:
            continue
        k = known.get(path)
        if k is None or k[1:5] != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
            rest.append(path)
        else:
            names[k[0]] = k[5]
            paths[k[0]] = path
    if vocab is not None:
        vocab.refresh(db)
    return sorted(paths[f] for f in matching(db, tokens, names, vocab)), rest
