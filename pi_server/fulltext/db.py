"""The full-text index database in the state dir.

A session file is indexed in chunks: runs of consecutive lines (at most `CHUNK_BYTES`
of text) form one row of a contentless trigram FTS5 table without positions, which
keeps the index a fraction of the text. A query narrows to the chunks holding every
trigram of its terms, then re-reads those byte ranges of the session files and checks
each entry exactly (terms shorter than a trigram are only checked that way). A file
that only grew is indexed from where indexing stopped; one rewritten, replaced or
deleted has its chunks dropped (their FTS rows stay until the next rebuild, unreachable).
A database that cannot be read is set aside and built anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pi_server.fulltext import picker
from pi_server.fulltext.extract import entry_ms, entry_role, entry_text, parse_line
from pi_server.fulltext.query import Query
from pi_server.store import entry_types as et
from pi_server.store.content import join_text

log = logging.getLogger("pi_server")
FORMAT = "1"
CHUNK_BYTES = 8 << 10  # text per FTS row: larger rows share trigrams, a smaller index
STEP_BYTES = 1 << 20  # file bytes read per indexing step (a request arriving meanwhile shares the CPU with it)
HEAD = 4096
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, dev INT, ino INT,
  size INT, mtime_ns INT, head BLOB, done INT, name TEXT, first TEXT);
CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file INT NOT NULL, start INT, end INT, ts INT);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file);
CREATE INDEX IF NOT EXISTS chunks_ts ON chunks(ts);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, tokenize='trigram', detail=none, content='');
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


def _head(fd: int, size: int) -> bytes:
    return hashlib.blake2b(os.pread(fd, min(size, HEAD), 0), digest_size=16).digest()


class FullText:
    def __init__(self, path: str) -> None:
        self.path = path
        self.db = self._open()

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
            db.executescript(SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES('format', ?)", (FORMAT,))
            elif row[0] != FORMAT:
                raise sqlite3.DatabaseError(f"format {row[0]}, not {FORMAT}")
            db.execute("SELECT count(*) FROM files").fetchone()
            picker.ensure(db)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ indexing

    def stale(self, path: str) -> bool:
        """Whether the file has bytes (or changes) not indexed yet, or is gone but indexed."""
        row = self.db.execute("SELECT dev, ino, size, mtime_ns FROM files WHERE path=?", (path,)).fetchone()
        try:
            st = os.stat(path)
        except OSError:
            return row is not None
        return row is None or tuple(row) != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def forget(self, path: str) -> None:
        row = self.db.execute("SELECT id FROM files WHERE path=?", (path,)).fetchone()
        if row is not None:
            with self._tx():
                self.db.execute("DELETE FROM chunks WHERE file=?", (row[0],))
                picker.forget(self.db, row[0])
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

    def _index_fd(self, path: str, fd: int) -> bool:
        st = os.fstat(st_fd := fd)
        row = self.db.execute("SELECT id, dev, ino, size, head, done FROM files WHERE path=?", (path,)).fetchone()
        head = _head(st_fd, st.st_size)
        same = row is not None and (row[1], row[2]) == (st.st_dev, st.st_ino) and st.st_size >= row[5]
        if same and row[4] != head and row[5] >= HEAD:
            same = False
        if row is not None and not same:
            self.forget(path)
            row = None
        with self._tx():
            if row is None:
                cur = self.db.execute("INSERT INTO files(path, done) VALUES(?, 0)", (path,))
                fid, done = cur.lastrowid, 0
            else:
                fid, done = row[0], row[5]
            data = os.pread(fd, STEP_BYTES, done)
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) == STEP_BYTES:  # one line longer than a step: read it whole
                data = os.pread(fd, st.st_size - done, done)
                cut = data.rfind(b"\n") + 1
            self._add_chunks(fid, done, data[:cut])
            picker.add(self.db, fid, done, data[:cut])
            done += cut
            finished = done >= st.st_size or cut == 0
            self.db.execute(
                "UPDATE files SET dev=?, ino=?, size=?, mtime_ns=?, head=?, done=? WHERE id=?",
                (st.st_dev, st.st_ino, st.st_size if finished else -1, st.st_mtime_ns, head, done, fid),
            )
        return finished

    def _add_chunks(self, fid: int, base: int, data: bytes) -> None:
        texts: list[str] = []
        start = pos = base
        size, ts = 0, 0
        name, first = None, None
        for line in data.split(b"\n"):
            end = pos + len(line) + 1
            e = parse_line(line) if line.strip() else None
            if e is not None:
                t = entry_text(e)
                if t:
                    texts.append(t)
                    size += len(t)
                ts = max(ts, entry_ms(e))
                if e.get("type") == et.SESSION_INFO:
                    name = e.get("name") if isinstance(e.get("name"), str) else None
                elif first is None and entry_role(e) == "user":
                    first = join_text(e["message"].get("content"), " ") or None
            pos = end
            if size >= CHUNK_BYTES:
                self._chunk(fid, start, pos, ts, texts)
                texts, start, size, ts = [], pos, 0, 0
        if texts:
            self._chunk(fid, start, min(pos, base + len(data)), ts, texts)
        if name is not None:
            self.db.execute("UPDATE files SET name=? WHERE id=?", (name.strip() or None, fid))
        if first is not None:
            self.db.execute("UPDATE files SET first=? WHERE id=? AND first IS NULL", (first, fid))

    def _chunk(self, fid: int, start: int, end: int, ts: int, texts: list[str]) -> None:
        cur = self.db.execute("INSERT INTO chunks(file, start, end, ts) VALUES(?, ?, ?, ?)", (fid, start, end, ts))
        self.db.execute("INSERT INTO fts(rowid, text) VALUES(?, ?)", (cur.lastrowid, "\n".join(texts)))

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> None:
            self.db.execute("BEGIN")

        def __exit__(self, kind: Any, *_: Any) -> None:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")

    def _tx(self) -> FullText._Tx:
        return FullText._Tx(self.db)

    def counts(self) -> tuple[int, int]:
        """(files fully indexed, files partly indexed)."""
        done = self.db.execute("SELECT count(*) FROM files WHERE size >= 0").fetchone()[0]
        part = self.db.execute("SELECT count(*) FROM files WHERE size < 0").fetchone()[0]
        return done, part

    def file_facts(self, path: str) -> tuple[str | None, str | None]:
        row = self.db.execute("SELECT name, first FROM files WHERE path=?", (path,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    # ------------------------------------------------------------------ searching

    def candidates(
        self, q: Query, sessions: list[str] | None, since: int | None
    ) -> Iterator[tuple[str, int, int, int]]:
        """(path, start, end, newest entry's ms) of the chunks that may match, newest first."""
        where, args = [], []
        # detail=none keeps no positions: a term is asked as all its trigrams
        terms = sorted({p[i : i + 3] for t in q.index_terms() for p in t.split(" ") for i in range(len(p) - 2)})
        if terms:
            where.append("c.id IN (SELECT rowid FROM fts WHERE fts MATCH ?)")
            args.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in terms))
        if sessions is not None:
            where.append(f"f.path IN ({','.join('?' * len(sessions))})")
            args += sessions
        if since is not None:
            where.append("c.ts >= ?")
            args.append(since)
        sql = "SELECT f.path, c.start, c.end, c.ts FROM chunks c JOIN files f ON f.id = c.file"
        if where:
            sql += " WHERE " + " AND ".join(where)
        yield from self.db.execute(sql + " ORDER BY c.ts DESC", args)

    def verify(
        self, q: Query, path: str, start: int, end: int, roles: set[str] | None, check: bool = True
    ) -> list[Hit]:
        """The chunk's entries that match (`check=False`: every entry with text, spans left empty)."""
        try:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
        except OSError:
            return []
        hits = []
        for line in data.split(b"\n"):
            e = parse_line(line) if line.strip() else None
            if e is None:
                continue
            role = entry_role(e)
            if roles is not None and role not in roles and e.get("type") not in roles:
                continue
            text = entry_text(e)
            spans = (q.spans(text) if check else []) if text else None
            if spans is not None:
                t = e.get("type")
                hits.append(Hit(path, e["id"], t if isinstance(t, str) else "", role, entry_ms(e), text, spans))
        return hits
