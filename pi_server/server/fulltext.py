"""The server's full-text index (fulltext/db.py): kept on a thread of its own, indexed a
step at a time from the files the roots hold and the changes the watcher sees."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from pi_server.fulltext import search as fts_search
from pi_server.fulltext.db import FullText
from pi_server.fulltext.query import BadQuery, parse
from pi_server.server import activity, errors
from pi_server.store.names import from_wire

log = logging.getLogger("pi_server")
PiServer = Any  # server.host.Host
RETRY_S = 5.0  # after a write the disk refused (full), indexing tries again this much later
_indexers: dict[int, Indexer] = {}


class Indexer:
    def __init__(self, state_root: str, files: list[str]) -> None:
        # one thread owns the connection: indexing steps and searches take turns on it
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-fts")
        self.ft: FullText | None = None
        self.path = os.path.join(state_root, "fulltext.sqlite")
        self.dirty: dict[str, None] = dict.fromkeys(files)
        self.wake = asyncio.Event()
        self.wake.set()
        self.regex = RegexProcess()
        self.task: asyncio.Future | None = None

    async def call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def _open(self) -> FullText:
        if self.ft is None:
            self.ft = FullText(self.path)
        return self.ft

    def _step(self, path: str) -> bool:
        ft = self._open()
        if not os.path.exists(path):
            ft.forget(path)
            return True
        return not ft.stale(path) or ft.index_step(path)

    def _gone(self) -> list[str]:
        """Files the index holds that are no longer there (deleted while the server was down)."""
        ft = self._open()
        return [p for (p,) in ft.db.execute("SELECT path FROM files") if not os.path.exists(p)]

    async def run(self, stop: asyncio.Event) -> None:
        for p in await self.call(self._gone):
            self.dirty[p] = None
        while not stop.is_set():
            await self.wake.wait()
            self.wake.clear()
            while self.dirty and not stop.is_set():
                await activity.quiet()  # a step between requests, not during them
                path = next(iter(self.dirty))
                try:
                    done = await self.call(self._step, path)
                except sqlite3.OperationalError as e:  # a full disk: what is indexed stays searchable
                    await self._refused(e)
                    continue
                except Exception:
                    log.exception("full-text index: cannot index %s", path)
                    self._requeue(await self.call(self._abort), path)
                    done = True  # a hostile file never stops the others
                if done:
                    self.dirty.pop(path, None)
                if not self.dirty:
                    await self._flush()
            await self._flush()

    async def _flush(self) -> None:
        try:
            await self.call(self._commit)
        except sqlite3.OperationalError as e:
            await self._refused(e)

    async def _refused(self, e: Exception) -> None:
        """A write the disk refused: the batch is taken back and its files indexed again later."""
        self._requeue(await self.call(self._abort))
        log.warning("full-text index: cannot write (%s); trying again in %g s", e, RETRY_S)
        await asyncio.sleep(RETRY_S)
        self.wake.set()

    def _requeue(self, paths: set[str], skip: str | None = None) -> None:
        for p in paths - {skip}:
            self.dirty[p] = None

    def _commit(self) -> None:
        if self.ft is not None:
            self.ft.flush()

    def _abort(self) -> set[str]:
        return self.ft.abort() if self.ft is not None else set()

    def _search(self, q: Any, p: Any) -> dict[str, Any]:
        ft = self._open()
        out = fts_search.run(ft, q, p.limit, p.offset, p.sessions, p.roles, since_ms(p.since), matcher=self.regex.match)
        out["pendingFiles"] += len(self.dirty)
        return out


class RegexProcess:
    """The process regular expressions run in (fulltext/regexrun.py), killed when one
    outlasts its budget and started again for the next."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def match(self, pattern: str, texts: list[str], seconds: float) -> list[Any] | None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pi_server.fulltext.regexrun"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                start_new_session=True,
            )
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(orjson.dumps({"pattern": pattern, "texts": texts}) + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, seconds))
            line = proc.stdout.readline() if ready else b""
        except OSError:
            line = b""
        if not line:  # out of time (or the process died): it goes, with what it was doing
            self.stop()
            return None
        return orjson.loads(line)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait()


def since_ms(since: str | None) -> int | None:
    if since is None:
        return None
    from pi_server.jsutil import js_date_ms

    ms = js_date_ms(since)
    if ms != ms:
        raise errors.InvalidParams(f"since: not a date: {since!r}")
    return int(ms)


def indexer(ls: PiServer) -> Indexer:
    reg = ls.registry
    ix = _indexers.get(id(reg))
    if ix is None:
        ix = _indexers[id(reg)] = Indexer(str(reg.state.root), [])
    # clients sharing one core (TCP) share the index; it runs under the client that started
    # it, and starts again under the next one when that client goes
    if ix.task is None or ix.task.done():
        ix.task = asyncio.ensure_future(_start(ls, ix))
        ls.tasks.append(ix.task)
    return ix


async def _start(ls: PiServer, ix: Indexer) -> None:
    for p in await ls.core(ls.registry.all_files):
        ix.dirty.setdefault(p, None)
    ix.wake.set()
    await ix.run(ls.stop)


def touch(ls: PiServer, paths: list[str]) -> None:
    """Files the watcher saw change: indexed again (appended bytes only, when they grew)."""
    ix = indexer(ls)
    for p in paths:
        ix.dirty[os.path.abspath(p)] = None
    ix.wake.set()


async def search(ls: PiServer, p: Any) -> dict[str, Any]:
    try:
        q = parse(p.query)
    except BadQuery as e:
        raise errors.InvalidParams(f"query: {e}") from None
    ix = indexer(ls)
    if p.sessions is not None:
        p.sessions = [os.path.abspath(from_wire(s)) for s in p.sessions]
    return await ix.call(ix._search, q, p)
