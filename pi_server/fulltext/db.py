"""The full-text index database in the state dir.

A session file is indexed in chunks (fulltext/chunks.py): runs of consecutive entries
whose text is kept compressed in `bodies` (apart from `chunks`, whose small rows are
read many to a page when matches are mapped to their files) and whose distinct runs
(words, split at punctuation too) are a row of a contentless trigram FTS5 table without
positions. A query narrows to the chunks holding the trigrams of its words' runs (those
not in nearly every chunk), then checks each entry of those chunks exactly against the
stored text (terms shorter than a trigram are only checked that way). A
file that only grew is indexed from where indexing stopped; one rewritten, replaced or
deleted has its chunks dropped, and their rows taken out of the FTS table. A database
that cannot be read, or of another format, is set aside and built anew.

Writes are batched: indexing steps join one transaction until `COMMIT_CHARS` of text
or `flush()` (each commit turns FTS5's pending terms into a segment, and fewer, larger
segments are cheaper to write and merge). A batch that fails (a full disk) is rolled
back whole; `abort()` names the files whose progress it took back.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pi_server.fulltext import chunks as ch
from pi_server.fulltext import codec as cc
from pi_server.fulltext import picker
from pi_server.fulltext.codec import Codec
from pi_server.fulltext.query import Query
from pi_server.store.cache import HEAD, fingerprint, head_hash
from pi_server.store.names import from_wire, to_wire

log = logging.getLogger("pi_server")
FORMAT = "7"  # bumped whenever chunks or their index words change (forget() gives them again)
STEP_BYTES = 1 << 18  # file bytes read per indexing step (~25 ms: a request or long call arriving meanwhile shares the CPU with it)
COMMIT_CHARS = 8 << 20  # text per transaction while a batch of steps runs
# a trigram in more chunks than this share narrows too little to be worth its postings
# reading (any subset of a query's trigrams narrows it correctly)
COMMON = 0.8
HASH_BYTES = 32 << 20  # FTS5's pending terms kept in memory before written as a segment
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, dev INT, ino INT,
  size INT, mtime_ns INT, head BLOB, done INT, name TEXT, first TEXT);
CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file INT NOT NULL, ts INT);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file);
CREATE INDEX IF NOT EXISTS chunks_ts ON chunks(ts);
CREATE TABLE IF NOT EXISTS bodies(id INTEGER PRIMARY KEY, body BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, tokenize='trigram case_sensitive 1', detail=none, content='', columnsize=0);
"""


@dataclass
class Hit:
    session: str
    entry_id: str
    type: str
    role: str | None
    ms: int
    text: str
    spans: list[tuple[int, int]]


def _holding_longest(q: Query, low: bytes, ents: list[list[Any]], spans: list[tuple[int, int]]) -> Iterable[int]:
    """The entries whose (lower-cased) bytes hold the query's longest word, in order: each
    place it is found names its entry, instead of every entry being tested."""
    words = q.words[1]
    if not words:
        return range(len(ents))
    w = max(words, key=len)
    starts = [e[4] for e in ents]
    out = []
    i = low.find(w)
    while i >= 0:  # a word holds no newline: it is inside one entry's text
        k = bisect_right(starts, i) - 1
        out.append(k)
        i = low.find(w, spans[k][1])
    return out


def _complete_lines(fd: int, start: int) -> tuple[bytes, int]:
    """The bytes of a step read at `start`, and the length of their complete lines. A line
    longer than a step (an image's base64) is read to its end, in reads four times larger
    each time, never the rest of the file with it."""
    size = STEP_BYTES
    while True:
        data = os.pread(fd, size, start)
        cut = data.rfind(b"\n") + 1
        if cut or len(data) < size:
            return data, cut
        size *= 4


class FullText:
    def __init__(self, path: str) -> None:
        self.path = path
        self.db = self._open()
        self.batch: set[str] = set()  # files written by the open transaction
        self.batch_chars = 0
        self.in_tx = False
        self.codec = Codec(cc.stored(self.db))
        self.sample: list[bytes] = []  # the first chunks' texts, until the dictionary is learned
        self.shares: dict[str, float] = {}  # trigram -> share of the chunks holding it, as last asked
        self.shares_at = 0  # the chunk count they were asked at

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as e:
            aside = f"{self.path}.bad-{int(time.time())}"
            log.warning("full-text index %s unreadable (%s): set aside as %s, rebuilding", self.path, e, aside)
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.path + suffix):
                    os.replace(self.path + suffix, aside + suffix)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            fresh = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
            db.executescript(SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None and fresh:
                db.execute("INSERT INTO meta VALUES('format', ?)", (FORMAT,))
                db.execute("INSERT INTO fts(fts, rank) VALUES('hashsize', ?)", (HASH_BYTES,))
            elif row is None or row[0] != FORMAT:
                raise sqlite3.DatabaseError(f"format {row[0] if row else 'unknown'}, not {FORMAT}")
            db.execute("SELECT count(*) FROM files").fetchone()
            picker.ensure(db)
            db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, 'fts', 'row')")
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def close(self) -> None:
        self.flush()
        self.db.close()

    # ------------------------------------------------------------------ transactions

    def _begin(self) -> None:
        if not self.in_tx:
            self.db.execute("BEGIN")
            self.in_tx = True

    def flush(self) -> None:
        """Commit what the batch wrote (an error here: see `abort`)."""
        if self.in_tx:
            self.db.execute("COMMIT")
            self.in_tx, self.batch, self.batch_chars = False, set(), 0

    def abort(self) -> set[str]:
        """Roll the batch back; the files whose indexing it took back."""
        lost, self.batch, self.batch_chars = self.batch, set(), 0
        if self.in_tx:
            self.in_tx = False
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.OperationalError:
                pass  # SQLite rolled it back itself
        self.codec, self.sample = Codec(cc.stored(self.db)), []  # a dictionary learned in the batch went with it
        return lost

    # ------------------------------------------------------------------ indexing

    def stale(self, path: str) -> bool:
        """Whether the file has bytes (or changes) not indexed yet, or is gone but indexed."""
        row = self.db.execute("SELECT dev, ino, size, mtime_ns FROM files WHERE path=?", (to_wire(path),)).fetchone()
        fp = fingerprint(path)
        if fp is None:
            return row is not None
        return row is None or tuple(row) != (fp["dev"], fp["ino"], fp["size"], fp["mtime_ns"])

    def forget(self, path: str) -> None:
        row = self.db.execute("SELECT id FROM files WHERE path=?", (to_wire(path),)).fetchone()
        if row is None:
            return
        self._begin()
        self.batch.add(path)
        listed = picker.listed(self.db, row[0])
        # each chunk read once, for both tables; a contentless table forgets a row given
        # the values it was given
        for cid, body in picker.bodies(self.db, row[0]):
            head, raw = ch.unpack(body, self.codec)
            if listed:
                picker.drop_words(self.db, cid, head, raw)
            self.db.execute("INSERT INTO fts(fts, rowid, text) VALUES('delete', ?, ?)", (cid, ch.index_words([ch.decode(raw)])))
        picker.forget(self.db, row[0], None)
        self.db.execute("DELETE FROM bodies WHERE id IN (SELECT id FROM chunks WHERE file=?)", (row[0],))
        self.db.execute("DELETE FROM chunks WHERE file=?", (row[0],))
        self.db.execute("DELETE FROM files WHERE id=?", (row[0],))

    def index_step(self, path: str) -> bool:
        """Index up to `STEP_BYTES` more of the file; True when it is fully indexed."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.forget(path)
            return True
        try:
            return self._index_fd(path, fd)
        finally:
            os.close(fd)
            if self.batch_chars >= COMMIT_CHARS:
                self.flush()

    def _index_fd(self, path: str, fd: int) -> bool:
        st = os.fstat(fd)
        row = self.db.execute("SELECT id, dev, ino, size, head, done FROM files WHERE path=?", (to_wire(path),)).fetchone()
        head = head_hash(fd, st.st_size)
        same = row is not None and (row[1], row[2]) == (st.st_dev, st.st_ino) and st.st_size >= row[5]
        if same and row[4] != head and row[5] >= HEAD:
            same = False
        done = row[5] if same else 0
        # read and parse before writing: a hostile file fails here, with nothing written
        data, cut = _complete_lines(fd, done)
        listing = picker.reader(self.db, row[0] if same else None, done)
        parsed = ch.parse_lines(data[:cut], self.codec, listing)
        if row is not None and not same:
            self.forget(path)
            row = None
        self._begin()
        self.batch.add(path)
        fid = (
            row[0]
            if row is not None
            else self.db.execute("INSERT INTO files(path, done) VALUES(?, 0)", (to_wire(path),)).lastrowid
        )
        cids = self._write(fid, parsed)
        picker.add(self.db, fid, listing, parsed, cids, self.codec)
        self._learn(parsed)
        done += cut
        finished = done >= st.st_size or cut == 0
        self.db.execute(
            "UPDATE files SET dev=?, ino=?, size=?, mtime_ns=?, head=?, done=? WHERE id=?",
            (st.st_dev, st.st_ino, st.st_size if finished else -1, st.st_mtime_ns, head, done, fid),
        )
        return finished

    def _write(self, fid: int, parsed: ch.Parsed) -> list[int]:
        """Write the chunks; their ids (in order: a term's postings are small deltas)."""
        cids = []
        for c in parsed.chunks:
            cid = self.db.execute("INSERT INTO chunks(file, ts) VALUES(?, ?)", (fid, c.ts)).lastrowid
            self.db.execute("INSERT INTO bodies(id, body) VALUES(?, ?)", (cid, c.body))
            self.db.execute("INSERT INTO fts(rowid, text) VALUES(?, ?)", (cid, c.words))
            cids.append(cid)
        self.batch_chars += parsed.chars
        if parsed.name is not None:
            self.db.execute("UPDATE files SET name=? WHERE id=?", (parsed.name.strip() or None, fid))
        if parsed.first is not None:
            self.db.execute("UPDATE files SET first=? WHERE id=? AND first IS NULL", (parsed.first, fid))
        return cids

    def _learn(self, parsed: ch.Parsed) -> None:
        """Learn the preset dictionary from the first chunks' texts, once there are enough."""
        if self.codec.zdict is not None:
            return
        # the last chunks only, should a dictionary never be learned from them
        self.sample = (self.sample + [c.raw for c in parsed.chunks])[-4 * cc.LEARN_CHUNKS :]
        zdict = cc.learn(self.sample)
        if zdict is not None:
            self.db.execute("INSERT INTO meta VALUES(?, ?)", (cc.KEY, zdict))
            self.codec, self.sample = Codec(zdict), []

    def counts(self) -> tuple[int, int]:
        """(files fully indexed, files partly indexed)."""
        done = self.db.execute("SELECT count(*) FROM files WHERE size >= 0").fetchone()[0]
        part = self.db.execute("SELECT count(*) FROM files WHERE size < 0").fetchone()[0]
        return done, part

    def file_facts(self, path: str) -> tuple[str | None, str | None]:
        row = self.db.execute("SELECT name, first FROM files WHERE path=?", (to_wire(path),)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    # ------------------------------------------------------------------ searching

    def candidates(self, q: Query, sessions: list[str] | None, since: int | None) -> Iterator[tuple[int, str, int]]:
        """(chunk id, path, newest entry's ms) of the chunks that may match, newest first."""
        where, args = [], []
        # detail=none keeps no positions: a term is asked as the trigrams of its words
        terms = self.narrowing(q.grams())
        if terms:
            where.append("c.id IN (SELECT rowid FROM fts WHERE fts MATCH ?)")
            args.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in terms))
        if sessions is not None:
            where.append(f"c.file IN (SELECT id FROM files WHERE path IN ({','.join('?' * len(sessions))}))")
            args += [to_wire(p) for p in sessions]
        if since is not None:
            where.append("c.ts >= ?")
            args.append(since)
        # walked in the order of the ts index: no sort, so a page settled early reads no further
        sql = "SELECT c.id, c.file, c.ts FROM chunks c INDEXED BY chunks_ts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        paths: dict[int, str] = {}
        for cid, fid, ts in self.db.execute(sql + " ORDER BY c.ts DESC", args):
            path = paths.get(fid)
            if path is None:
                row = self.db.execute("SELECT path FROM files WHERE id=?", (fid,)).fetchone()
                if row is None:
                    continue
                path = paths[fid] = from_wire(row[0])
            yield cid, path, ts

    def narrowing(self, grams: set[str]) -> list[str]:
        """The trigrams worth asking the index for: those not in nearly every chunk (a
        common word's trigrams are; their postings cost milliseconds and leave out next to
        nothing). Shares are kept until the index grows or shrinks by a tenth."""
        (count,) = self.db.execute("SELECT count(*) FROM chunks").fetchone()
        if abs(count - self.shares_at) > self.shares_at / 10:
            self.shares, self.shares_at = {}, count
        out = []
        for g in sorted(grams):
            share = self.shares.get(g)
            if share is None:
                row = self.db.execute("SELECT doc FROM temp.fts_terms WHERE term=?", (g,)).fetchone()
                share = self.shares[g] = (row[0] if row else 0) / max(count, 1)
            if share <= COMMON:
                out.append(g)
        return out

    def verify(self, q: Query, cid: int, path: str, roles: set[str] | None, check: bool = True) -> list[Hit]:
        """The chunk's entries that match (`check=False`: those whose text holds the
        query's literal parts, spans left empty, for a regex matcher to check)."""
        row = self.db.execute("SELECT body FROM bodies WHERE id=?", (cid,)).fetchone()
        if row is None:
            return []
        head, raw = ch.unpack(row[0], self.codec)
        # bytes are lower-cased ten times faster than str, and alike for an ASCII query; the
        # words of a query in scripts without case (CJK) are looked for in the bytes as they are
        fast = q.ascii and not ch.lowers_to_ascii(row[0])
        as_is = q.uncased
        low = raw if as_is else raw.lower() if fast else ch.decode(raw).lower()
        if not q.chunk_may_match(low):
            return []
        ents = ch.entries(head)
        spans_of = ch.bounds(ents, len(raw))
        which = _holding_longest(q, low, ents, spans_of) if fast or as_is else range(len(ents))
        hits = []
        for i in which:
            eid, kind, role, ms, *_ = ents[i]
            a, b = spans_of[i]
            if roles is not None and role not in roles and kind not in roles:
                continue
            if (fast or as_is) and not q.may_match(low[a:b]):  # bytes lowered alike, at the same places
                continue
            t = ch.decode(raw[a:b])
            if not (fast or as_is) and not q.may_match(t.lower()):
                continue
            spans = q.spans(t) if check else []
            if spans is not None:
                hits.append(Hit(path, eid, kind, role, ms, t, spans))
        return hits
