"""A searched listing's reads of the full-text index (fulltext/picker.py), on a connection
and a thread of their own: the index's thread may be in the middle of a step (a large line
of a hostile file), and a listing never waits for it. Each read is one transaction, so it
sees the index as one step left it."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

from pi_server.fulltext import picker

log = logging.getLogger("pi_server")
_readers: dict[str, Reader] = {}


class Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-picker")
        self.db: sqlite3.Connection | None = None
        self.opened: tuple[int, int] | None = None  # the database file's (dev, ino) when opened
        self.vocab = picker.Vocab()

    async def split(self, tokens: list[str], files: list[str], roots: list[str]) -> tuple[list, list] | None:
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._split, tokens, files, roots)

    def _split(self, tokens: list[str], files: list[str], roots: list[str]) -> tuple[list, list] | None:
        """(matched, to scan), or None: no index to read (not built yet, or unreadable)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        try:
            if self.db is None or self.opened != (st.st_dev, st.st_ino):  # set aside and built anew
                self.close()
                self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                self.opened, self.vocab = (st.st_dev, st.st_ino), picker.Vocab()
            self.db.execute("BEGIN")
            try:
                return picker.split(self.db, tokens, files, roots, self.vocab)
            finally:
                self.db.execute("COMMIT")
        except sqlite3.Error as e:  # not built with the picker's tables yet, or damaged: the files are read
            log.info("searched listing: full-text index not read (%s); reading the files", e)
            self.close()
            return None

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def reader(path: str) -> Reader:
    r = _readers.get(path)
    if r is None:
        r = _readers[path] = Reader(path)
    return r
