"""Bulk work handed to the worker processes (server/pool.py): the search of a searched
listing, and the first index of a store. The server keeps the listing itself (the
files, their SessionInfo, the leaf it keeps for each) and writes everything; the
workers only say which files match, or index files into the index cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pi_server.server import fulltext, notify, offcore, pickerindex, pool
from pi_server.server.worker import BACKGROUND, REQUEST
from pi_server.store.discovery import query_tokens
from pi_server.store.names import display, is_utf8, to_wire

log = logging.getLogger("pi_server")
PiServer = Any  # server.host.Host (the server importing this module)
SEARCH_CHUNK = 128  # files per request to a worker: a search waits for at most one chunk of indexing
INDEX_CHUNK = 4
KNOWN_CHUNK = 256  # files checked against the listing cache per core call
ADOPT_CHUNK = 32  # indexed files taken into the registry per core call


_running: dict[tuple, asyncio.Future] = {}


async def list_sessions(ls: PiServer, cwd: str | None, query: str | None, limit: int | None) -> list[dict]:
    """pi/listSessions; the same listing asked again while one runs shares its answer (clients
    polling a searched listing cost one search, not one each)."""
    key = (id(ls.registry), cwd, query, limit)
    running = _running.get(key)
    if running is None:
        running = _running[key] = asyncio.ensure_future(_list_sessions(ls, cwd, query, limit))
        running.add_done_callback(lambda _f: _running.pop(key, None))
    listed = [_wire_info(info) for info in await asyncio.shield(running)]
    report_refreshed(ls)
    return listed


def report_refreshed(ls: PiServer) -> None:
    """A listing that re-read a served file which grew (before the watcher, or polling, said so)
    notifies what it found, as the watcher would have: the watcher then finds nothing new."""
    pending = ls.registry.unreported
    found = [upd for upd in (pending.pop(0) for _ in range(len(pending))) if upd is not None]  # pops: atomic
    for upd in found:
        notify.session_updated(ls, upd.session, upd.appended, upd.leaf_id, upd.reset)
    if found:
        notify.sessions_changed(ls, [], [], [upd.session for upd in found])


def _wire_info(info: dict) -> dict:
    """A SessionInfo as the client gets it: a name that is not UTF-8 as its URI, and shown."""
    path = info["session"]
    if is_utf8(path):
        return info
    return {**info, "session": to_wire(path), "displayPath": display(path)}


async def _list_sessions(ls: PiServer, cwd: str | None, query: str | None, limit: int | None) -> list[dict]:
    """Files never indexed are indexed in the workers; a search is answered from the full-text
    index where it can, in the workers for the rest; the server describes the files listed.
    Workers start only for such work."""
    reg = ls.registry
    tokens = query_tokens(query)
    bulk = pool.shared()
    if reg.evicted:
        await offcore.describe_dropped(ls, reg)
    if tokens:
        return await searched(ls, bulk, query or "", cwd, limit)
    listed, missing = await ls.core_steps(reg.list_known_steps, cwd)
    if missing:  # a store not indexed yet: in the workers, then the listing again
        if bulk.ready():
            await index_files(ls, bulk, missing, urgent=True)
        listed = await ls.core_steps(reg.list_steps, cwd, None, None)
    return listed[:limit] if limit is not None else listed


async def searched(ls: PiServer, bulk: pool.BulkPool, query: str, cwd: str | None, limit: int | None) -> list:
    """The files the full-text index keeps whole and current are matched there (no file is
    read); the rest (not indexed yet, changed since, or not plain) are searched as before. The
    server describes only the files matched."""
    reg = ls.registry
    tokens = query_tokens(query)
    files = await ls.core_steps(reg.files_steps)
    split = await pickerindex.reader(fulltext.indexer(ls).path).split(tokens, files, reg.roots)
    if split is None:  # no index to read yet: as before
        if not bulk.ready():
            return await ls.core_steps(reg.list_steps, cwd, query, limit)
        split = [], files
    matched, rest = split
    if rest and bulk.ready():
        matched += await _scan(ls, bulk, tokens, rest)
    elif rest:  # no worker processes: the server searches them itself (`rest` is within the roots)
        found = await ls.core_steps(reg.list_steps, None, query, None, tuple(rest))
        matched += [info["session"] for info in found]
    return await ls.core_steps(reg.list_steps, cwd, None, limit, tuple(sorted(matched)))


async def _scan(ls: PiServer, bulk: pool.BulkPool, tokens: list[str], files: list[str]) -> list[str]:
    """Of `files`, those matching every token, read in the workers (indexing those never
    indexed into the cache)."""
    reg = ls.registry
    req = {"op": "search", "tokens": tokens, "state": str(reg.state.root), "roots": reg.roots}
    matched, lost = [], []
    async for path, hit in bulk.map(req, files, SEARCH_CHUNK, urgent=True):
        if hit is True:
            matched.append(path)
        elif hit == pool.FAILED:
            lost.append((path, hit))
    if lost:
        await ls.core(reg.indexed_elsewhere, lost)
    return matched


async def index_store(ls: PiServer, files: list[str], progress: Callable[[int], None]) -> bool:
    """Index the files the server has never indexed, in the workers; False when they cannot
    start (the caller indexes in the server). `progress(n)` as files are done."""
    reg = ls.registry
    bulk = pool.shared()
    if not bulk.slots:  # no worker processes (PI_SERVER_WORKERS=0, or they could not start)
        return False
    todo: list[str] = []
    for start in range(0, len(files), KNOWN_CHUNK):
        todo += await ls.core(reg.to_index, files[start : start + KNOWN_CHUNK], priority=BACKGROUND)
    done = len(files) - len(todo)
    progress(done)
    if not todo:
        return True
    if not bulk.ready():
        return False
    await index_files(ls, bulk, todo, progress=lambda n: progress(done + n))
    return True


async def index_files(
    ls: PiServer,
    bulk: pool.BulkPool,
    todo: list[str],
    urgent: bool = False,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Index `todo` (files never indexed) into the cache, in the workers; the registry keeps
    their listing facts."""
    reg = ls.registry
    priority = REQUEST if urgent else BACKGROUND
    req = {"op": "index", "state": str(reg.state.root), "roots": reg.roots}
    batch: list[tuple[str, Any]] = []
    left, done = len(todo), 0
    async for path, facts in bulk.map(req, todo, INDEX_CHUNK, urgent=urgent):
        left -= 1
        batch.append((path, facts))
        if len(batch) >= ADOPT_CHUNK or not left:
            # one core call per batch: under load each background call waits behind requests
            await ls.core(reg.indexed_elsewhere, batch, priority=priority)
            done += len(batch)
            batch = []
            if progress:
                progress(done)
