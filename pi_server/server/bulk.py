"""Bulk work handed to the worker processes (server/pool.py): the search of a searched
listing, and the first index of a store. The server keeps the listing itself (the
files, their SessionInfo, the leaf it keeps for each) and writes everything; the
workers only say which files match, or index files into the index cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pi_server.server import pool
from pi_server.server.worker import BACKGROUND
from pi_server.store.discovery import query_tokens

log = logging.getLogger("pi_server")
PiServer = Any  # server.base.PiServer (which imports this module's callers)
SEARCH_CHUNK = 128  # files per request to a worker: a search waits for at most one chunk of indexing
INDEX_CHUNK = 4
KNOWN_CHUNK = 256  # files checked against the listing cache per core call


async def list_sessions(ls: PiServer, cwd: str | None, query: str | None, limit: int | None) -> list[dict]:
    """pi/listSessions: the listing in the server, the search (if any) in the workers."""
    reg = ls.registry
    tokens = query_tokens(query)
    bulk = pool.shared()
    if not tokens or not bulk.ready():
        return await ls.core_steps(reg.list_steps, cwd, query if tokens else None, limit)
    listed = await ls.core_steps(reg.list_steps, cwd, None, None)
    req = {"op": "search", "tokens": tokens, "state": str(reg.state.root)}
    matched = set()
    async for path, hit in bulk.map(req, [info["session"] for info in listed], SEARCH_CHUNK):
        if hit is True:
            matched.add(path)
    found = [info for info in listed if info["session"] in matched]
    return found[:limit] if limit is not None else found


async def index_store(ls: PiServer, files: list[str], progress: Callable[[int], None]) -> bool:
    """Index the files the server has never indexed, in the workers; False when there are none
    (the caller indexes in the server). `progress(n)` after each file."""
    reg = ls.registry
    bulk = pool.shared()
    if not bulk.ready():
        return False
    todo: list[str] = []
    for start in range(0, len(files), KNOWN_CHUNK):
        todo += await ls.core(reg.to_index, files[start : start + KNOWN_CHUNK], priority=BACKGROUND)
    done = len(files) - len(todo)
    progress(done)
    req = {"op": "index", "state": str(reg.state.root)}
    async for path, facts in bulk.map(req, todo, INDEX_CHUNK):
        if facts == pool.FAILED:
            log.warning("indexing skipped %s", path)
        elif facts is not None:
            await ls.core(reg.indexed_elsewhere, path, facts, priority=BACKGROUND)
        done += 1
        progress(done)
    return True
