"""Long reads of one large session, answered off the core worker.

The core worker runs every request, one at a time, so a context of a 1,000,000-entry chain
(seconds of work) would hold up every other session's requests. Such a call instead runs
on a thread of its own against a private copy of the session's index, loaded from the
index cache (written when the session was first indexed; brought up to date with the bytes
appended since): no index is shared between threads, and the core worker only resolves the leaf.
Long calls run one at a time among themselves.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pi_server.live.errors import EntryNotFound, SessionNotFound
from pi_server.server import errors, wire

if TYPE_CHECKING:
    from pi_server.store.index import SessionIndex

LONG_ENTRIES = 100_000  # sessions at least this large are read off the core worker
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-long")


def private_index(state_root: str, path: str, roots: tuple[str, ...]) -> SessionIndex:
    """The session's index for this thread alone: the cached one, else read anew (within
    `roots`, as every read of a session file)."""
    from pi_server.store.cache import IndexCache  # not loaded by a listing (server/methods/sessions.py)
    from pi_server.store.index import NotASession, SessionIndex

    idx = IndexCache(state_root).load(path, roots)
    if idx is not None:
        return idx
    try:
        return SessionIndex.open(path, roots)
    except (NotASession, OSError) as e:
        raise SessionNotFound(f"cannot read {path}: {e}") from None


def context(
    state_root: str, roots: tuple[str, ...], path: str, leaf: str | None, before_first: bool, fmt: str
) -> wire.Encoded:
    from pi_server.llm.formats import context_result

    idx = private_index(state_root, path, roots)
    if leaf is not None and leaf not in idx.by_id:
        raise EntryNotFound(f"no entry {leaf} in {path}")  # the file was rewritten meanwhile
    return wire.encode(context_result(idx, leaf, before_first=before_first, fmt=fmt))


async def run(fn: Any, *args: Any) -> Any:
    """`fn(*args)` on the long-call thread, core errors mapped to the contract's."""
    try:
        return await asyncio.get_running_loop().run_in_executor(_pool, fn, *args)
    except SessionNotFound as e:
        raise errors.SessionNotFound(str(e)) from None
    except EntryNotFound as e:
        raise errors.EntryNotFound(str(e)) from None
