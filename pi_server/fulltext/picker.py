"""The session picker's text in the full-text database: what a searched `pi/listSessions`
looks in, so it is answered without reading the session files.

A searched listing matches a session when every word of the query is a substring of its
name and all its user and assistant text, lower-cased (store/discovery.py `search_text`).
That text is the lead of those entries in the search index's chunks (fulltext/chunks.py),
read as the scan reads it (fulltext/pickertext.py); here are the file's state and name,
a word table with a row per chunk (the distinct words of its searched text; the row's
id is the chunk's), and every word once (the vocabulary). A query word holds no
whitespace, so it never spans two messages: a session has a word when its name has it
or one of its chunks' searched texts does. A query word made of word characters is in
a text only inside one of its words: the vocabulary names those words and the word
table the chunks holding them, an exact answer. Other words (punctuation in them, or
inside too many words) are narrowed by the search index's trigrams (the trigrams of a
word's runs must all be in the chunk) and each chunk it names is checked exactly; those
without a trigram check every chunk of the files still in the running.
"""

from __future__ import annotations

import os
import sqlite3
from stat import S_ISLNK
from typing import Any

from pi_server.fulltext import chunks as ch
from pi_server.fulltext import codec as cc
from pi_server.fulltext import pickertext as pt
from pi_server.fulltext.codec import Codec
from pi_server.fulltext.query import word_grams
from pi_server.store.discovery import is_within

FORMAT = "3"
SCHEMA = """
CREATE TABLE IF NOT EXISTS picker_files(file INTEGER PRIMARY KEY, state INT NOT NULL, name TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS picker_words USING fts5(text, tokenize='ascii', detail=none, content='', columnsize=0);
CREATE TABLE IF NOT EXISTS picker_vocab(id INTEGER PRIMARY KEY, word TEXT UNIQUE NOT NULL);
"""
MAX_WORDS = 400  # a query word inside more words than this is looked for the other way
VERIFY_ROWS = 256  # candidate chunks read and checked, rather than asking the vocabulary
LONG_WORD = 32000  # bytes: FTS5 keeps a longer word cut, so it cannot vouch for the rest


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


def reader(db: sqlite3.Connection, fid: int | None, base: int) -> pt.Reader:
    """The state a file's lines from `base` on are read in (`fid`: None for a new file)."""
    row = None if fid is None else db.execute("SELECT state, name FROM picker_files WHERE file=?", (fid,)).fetchone()
    if row is None:  # known before this table (base > 0): never seen whole
        return pt.Reader(pt.SCAN if base else pt.HEADER)
    return pt.Reader(*row)


def add(db: sqlite3.Connection, fid: int, listing: pt.Reader, parsed: ch.Parsed, cids: list[int], codec: Codec) -> None:
    """The chunks `cids` of `parsed` were written: keep what they add to the file's picker
    text. Runs in the indexing transaction."""
    if listing.state == pt.SCAN:
        forget(db, fid, codec)
        _set(db, fid, pt.SCAN, None)
        return
    vocab: set[str] = set()
    for cid, c in zip(cids, parsed.chunks, strict=True):
        if c.listed:
            db.execute("INSERT INTO picker_words(rowid, text) VALUES(?, ?)", (cid, " ".join(c.listed)))
            vocab |= c.listed
    db.executemany("INSERT OR IGNORE INTO picker_vocab(word) VALUES(?)", ((w,) for w in vocab))
    _set(db, fid, listing.state, listing.name)


def _set(db: sqlite3.Connection, fid: int, state: int, name: str | None) -> None:
    db.execute("INSERT OR REPLACE INTO picker_files(file, state, name) VALUES(?, ?, ?)", (fid, state, name))


def bodies(db: sqlite3.Connection, fid: int) -> list[tuple[int, bytes]]:
    """(chunk id, body) of the file's chunks."""
    return db.execute("SELECT c.id, b.body FROM chunks c JOIN bodies b ON b.id = c.id WHERE c.file=?", (fid,)).fetchall()


def listed(db: sqlite3.Connection, fid: int) -> bool:
    """Whether the file's chunks have rows in the word table."""
    row = db.execute("SELECT state FROM picker_files WHERE file=?", (fid,)).fetchone()
    return row is not None and row[0] != pt.SCAN


def drop_words(db: sqlite3.Connection, cid: int, head: bytes, raw: bytes) -> None:
    """A chunk's row leaves the word table (a contentless table forgets a row given the
    text it was added with)."""
    words = ch.listed_words(head, raw)
    if words:
        db.execute("INSERT INTO picker_words(picker_words, rowid, text) VALUES('delete', ?, ?)", (cid, " ".join(words)))


def forget(db: sqlite3.Connection, fid: int, codec: Codec | None) -> None:
    """The file's picker text goes (the file is dropped, or left to the scan): the rows of
    its chunks leave the word table, before the chunks themselves go (`codec` None: the
    caller, reading the chunks for its own table, dropped them with `drop_words`)."""
    if codec is not None and listed(db, fid):
        for cid, body in bodies(db, fid):
            drop_words(db, cid, *ch.unpack(body, codec))
    db.execute("DELETE FROM picker_files WHERE file=?", (fid,))


# ---------------------------------------------------------------------- matching


def kept(db: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
    """path -> (file id, dev, ino, size, mtime_ns, name) of the files whose picker text is
    kept here (whole, as of that stat)."""
    sql = (
        "SELECT f.path, f.id, f.dev, f.ino, f.size, f.mtime_ns, p.name FROM files f"
        " JOIN picker_files p ON p.file = f.id WHERE p.state = ? AND f.size >= 0"
    )
    return {r[0]: r[1:] for r in db.execute(sql, (pt.PLAIN,))}


def matching(
    db: sqlite3.Connection, tokens: list[str], fids: dict[int, str | None], vocab: Vocab | None = None
) -> set[int]:
    """Of the files `fids` (file id -> name), those whose picker text holds every token."""
    alive = set(fids)
    texts = _Texts(db, vocab.codec(db) if vocab is not None else Codec(cc.stored(db)))
    # the longest words first: they leave the fewest files for the next
    for t in sorted(set(tokens), key=lambda t: -len(t)):
        if not alive:
            break
        alive = _holding(db, t, alive, fids, vocab, texts)
    return alive


def _holding(
    db: sqlite3.Connection, t: str, alive: set[int], fids: dict[int, str | None], vocab: Vocab | None, texts: _Texts
) -> set[int]:
    """Of the files `alive`, those whose name or text holds `t`."""
    found = {f for f in alive if fids[f] is not None and t in fids[f].lower()}  # type: ignore[union-attr]
    wordlike = _wordlike(t)
    if wordlike:  # a chunk holding the word itself holds the text: nothing to check
        found |= alive & _files(db, "picker_words", _quoted(t))
    left = alive - found
    if not left:
        return found
    cands: dict[int, list[int]] | None = None
    grams = word_grams(t)
    if grams:  # chunks holding all its trigrams may hold it
        cands = {}
        for cid, fid in _chunks(db, "fts", " AND ".join(map(_quoted, sorted(grams)))):
            if fid in left:
                cands.setdefault(fid, []).append(cid)
    many = cands is None or sum(map(len, cands.values())) > VERIFY_ROWS
    words = vocab.containing(t) if vocab is not None and wordlike and many else None
    if words is not None:  # `t` is in a text only inside one of its words: the chunks holding those
        held: set[int] = set()
        for i in range(0, len(words), 100):
            held |= _files(db, "picker_words", " OR ".join(map(_quoted, words[i : i + 100])))
        return found | (left & held)
    if cands is None:  # below a trigram: any chunk may
        cands = {f: [c for (c,) in db.execute("SELECT id FROM chunks WHERE file=?", (f,))] for f in left}
    return found | {f for f, cids in cands.items() if any(texts.holds(cid, t) for cid in cids)}


class _Texts:
    """The searched texts of chunks, read once per query."""

    def __init__(self, db: sqlite3.Connection, codec: Codec) -> None:
        self.db, self.codec = db, codec
        self.read: dict[int, tuple[bytes, bool, list[tuple[int, int]]]] = {}

    def holds(self, cid: int, t: str) -> bool:
        got = self.read.get(cid)
        if got is None:
            row = self.db.execute("SELECT body FROM bodies WHERE id=?", (cid,)).fetchone()
            if row is None:
                return False
            head, raw = ch.unpack(row[0], self.codec)
            leads = [(e[4], e[4] + e[5]) for e in ch.entries(head) if e[5]]
            got = self.read[cid] = (raw, ch.lowers_to_ascii(row[0]), leads)
        raw, odd, leads = got
        if t.isascii() and not odd:
            # bytes lower-case A-Z alone, and no other character lower-cases to ASCII
            needle = t.encode()
            return any(needle in raw[a:b].lower() for a, b in leads)
        return any(t in ch.decode(raw[a:b]).lower() for a, b in leads)


def _wordlike(t: str) -> bool:
    """One token of the ascii tokenizer (ASCII letters and digits, and anything not ASCII),
    which folds nothing but A-Z (not in lower-cased text)."""
    return all(c.isalnum() or not c.isascii() for c in t)


def _quoted(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def _chunks(db: sqlite3.Connection, table: str, match: str) -> list[tuple[int, int]]:
    """(chunk id, file id) of the chunks whose row of `table` matches."""
    sql = f"SELECT id, file FROM chunks WHERE id IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    return db.execute(sql, (match,)).fetchall()


def _files(db: sqlite3.Connection, table: str, match: str) -> set[int]:
    """The files of the chunks whose row of `table` matches."""
    sql = f"SELECT DISTINCT file FROM chunks WHERE id IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    return {f for (f,) in db.execute(sql, (match,))}


class Vocab:
    """Every word of the kept text (as the word table splits it), read once and then as it
    grows: which words hold a query word is a substring search of them all. Also the kept
    files (`kept`), read again only when the database changed, and the codec of its chunks
    (one reader's: its thread alone uses it)."""

    def __init__(self) -> None:
        self.text = "\n"
        self.last = 0  # the highest word id read
        self.files: dict[str, tuple[Any, ...]] | None = None
        self.version = -1
        self._codec: Codec | None = None

    def codec(self, db: sqlite3.Connection) -> Codec:
        zdict = cc.stored(db)
        if self._codec is None or self._codec.zdict != zdict:  # learned since, or built anew
            self._codec = Codec(zdict)
        return self._codec

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
