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
import gc
import logging
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pi_server.live.errors import EntryNotFound, OutsideRoots, SessionNotFound
from pi_server.server import activity, errors, wire
from pi_server.store import slices

if TYPE_CHECKING:
    from pi_server.live.registry import Registry
    from pi_server.live.session import LiveSession
    from pi_server.store.index import SessionIndex
    from pi_server.tree.outline import Outline

log = logging.getLogger("pi_server")
LONG_ENTRIES = 100_000  # sessions at least this large are read off the core worker
EAGER_MAPS = 250_000  # a restored index this large has its id map built off the core worker
LONG_BYTES = 16 << 20  # a file not indexed yet this large is indexed off the core worker
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
    try:
        if leaf is not None and leaf not in idx.by_id:
            raise EntryNotFound(f"no entry {leaf} in {path}")  # the file was rewritten meanwhile
        result = context_result(idx, leaf, before_first=before_first, fmt=fmt)
        encoded = wire.encode_steps(result)
        slices.release_values(result)
        return encoded
    finally:  # freed at the return, the private index would hold the lock 0.1 s
        slices.release(idx)


def _without_gc(fn: Any, *args: Any) -> Any:
    """`fn(*args)` with the cyclic GC paused: a long call makes millions of objects, and each
    full collection it triggers scans them all in one step that holds the interpreter lock
    (0.5-0.7 s at a million entries, every other thread waiting); nothing here makes cycles."""
    was = gc.isenabled()
    gc.disable()
    activity.long_begin()  # background indexing waits for it; other threads get the lock sooner
    try:
        return fn(*args)
    finally:
        activity.long_end()
        if was:
            gc.enable()


async def run(fn: Any, *args: Any) -> Any:
    """`fn(*args)` on the long-call thread, core errors mapped to the contract's."""
    try:
        return await asyncio.get_running_loop().run_in_executor(_pool, _without_gc, fn, *args)
    except SessionNotFound as e:
        raise errors.SessionNotFound(str(e)) from None
    except EntryNotFound as e:
        raise errors.EntryNotFound(str(e)) from None


def _load(state_root: str, roots: tuple[str, ...], path: str) -> tuple[SessionIndex, Outline, bool]:
    """The session's index (cached, else read and cached), its tree and the default view at its
    last entry, for the core worker to adopt: seconds of work for a million entries."""
    from pi_server.store.cache import IndexCache
    from pi_server.store.index import NotASession, SessionIndex
    from pi_server.tree.outline import Outline

    cache = IndexCache(state_root)
    idx = cache.load(path, roots)
    from_cache = idx is not None
    if idx is None or idx.generation != 1:  # not cached as it is now: cached here, not by the core worker
        if idx is None:
            try:
                idx = SessionIndex.open(path, roots)
            except (NotASession, OSError) as e:
                raise SessionNotFound(f"cannot read {path}: {e}") from None
        cache.save(idx)
    outline = Outline(idx)
    if not outline.seeded or len(idx) >= EAGER_MAPS:
        # built here, not by the core worker's first request on it; a tree restored from the
        # cache shows its first window without them, and a smaller session's take little time
        idx.by_id, idx.call_pos  # noqa: B018
    if not outline.seeded:  # else the cache gave the tree and default view: the id map waits for first use
        last = idx.by_id.get(idx.last_id) if idx.last_id is not None else None
        outline.layout(last, "default", "", frozenset(), rows=0)
    return idx, outline, from_cache


def dropped_saver(registry: Registry) -> Any:
    """`registry.save_dropped`: a large index dropped from memory is saved on the long-call
    thread (a second or more for a million entries, which held every request on the core
    worker); a small one at once. Its reload, on the same thread, comes after the save."""
    from pi_server.store.cache import IndexCache

    def save(live: LiveSession) -> None:
        if len(live.index) < LONG_ENTRIES:
            registry.save_index(live)
            return
        _pool.submit(_without_gc, _save_quietly, registry, live, IndexCache(registry.state.root))

    return save


def _save_quietly(registry: Registry, live: LiveSession, cache: Any) -> None:
    try:
        registry.save_index(live, cache)
    except Exception:  # a cache is an optimisation: the index is read again without it
        log.exception("saving the index of %s", live.index.path)


def _large(registry: Registry, path: str) -> bool:
    """A session whose reading would hold the core worker (in memory or not)."""
    live = registry.sessions.get(path)
    if live is not None:
        return len(live.index) >= LONG_ENTRIES
    if registry.evicted.get(path, 0) >= LONG_ENTRIES:
        return True
    try:
        return os.stat(path).st_size >= LONG_BYTES
    except (OSError, ValueError):
        return False  # the request itself reports it


_loading: dict[str, asyncio.Future] = {}  # path -> its read in progress, shared by every request on it


async def load(registry: Registry, path: str) -> tuple[SessionIndex, Outline, bool] | None:
    """`registry.adopt_loaded`'s arguments after `path`, read on the long-call thread; None when
    the file cannot be read (the request that needs it reports why)."""
    running = _loading.get(path)
    if running is None:
        loop = asyncio.get_running_loop()
        running = loop.run_in_executor(_pool, _without_gc, _load, str(registry.state.root), tuple(registry.roots), path)
        _loading[path] = running
        running.add_done_callback(lambda _f: _loading.pop(path, None))
    try:
        return await asyncio.shield(running)
    except Exception:  # not a session, outside the roots, gone
        return None


async def warm_up(ls: Any, registry: Registry) -> None:
    """Read back, from their saved indexes, the sessions the last server had in memory when it
    stopped (most recently used first, within the memory budget): a client coming back to one
    after a restart finds it served from memory, not read from the cache at its first request.
    A request for one of them meanwhile shares its read (`load`)."""
    from pi_server.server.worker import BACKGROUND

    budget = registry.max_live_entries
    for path in await ls.core(registry.cache.warm, priority=BACKGROUND):
        if ls.stop.is_set():
            return
        try:
            if registry.resolve(path) != path or path in registry.sessions:
                continue
        except (OutsideRoots, SessionNotFound):  # outside this configuration's roots
            continue
        loaded = await load(registry, path)
        if loaded is None:
            continue
        budget -= len(loaded[0])
        if budget < 0:  # it would drop what is in memory: the rest is read when asked for
            return
        await ls.core(registry.adopt_loaded, path, *loaded, priority=BACKGROUND)


@asynccontextmanager
async def held(ls: Any, session: str) -> AsyncIterator[None]:
    """Around a request on `session` (a path as the client gave it): a large session is kept in
    memory while the request runs (the memory budget would drop it whenever another session is
    read), and one not in memory is read off the core worker first, so the request finds it."""
    registry = ls.registry
    path = os.path.abspath(os.path.expanduser(session)) if "\x00" not in session else ""
    pinned = bool(path) and _large(registry, path) and await _pin(ls, registry, path)
    try:
        yield
    finally:
        if pinned:
            ls.worker.submit(registry.unpin, path)  # not awaited: also when the request is cancelled


async def _pin(ls: Any, registry: Registry, path: str) -> bool:
    try:
        if await ls.core(registry.pin, path):
            return True
        loaded = await load(registry, path)
        if loaded is None:
            return False
        await ls.core(registry.adopt_loaded, path, *loaded, True)
        return True
    except Exception:  # left to the request to report
        return False


_DROPPED = object()


async def refresh(ls: Any, registry: Registry, path: str) -> Any:
    """`registry.refresh(path)` (a file that changed on disk), a large session dropped from
    memory read off the core worker first: also one dropped between that check and the core
    call (the request that dropped it ran in between), which the core worker would read again
    itself (1.6 s for 300,000 entries on a loaded machine)."""
    loaded = None
    for _ in range(3):
        if loaded is None and _dropped_large(registry, path):
            loaded = await load(registry, path)
        got = await ls.core(_refresh_unless_dropped, registry, path, loaded)
        if got is not _DROPPED:
            return got
    return await ls.core(registry.refresh, path, loaded)


def _dropped_large(registry: Registry, path: str) -> bool:
    return path not in registry.sessions and registry.evicted.get(path, 0) >= LONG_ENTRIES


def _refresh_unless_dropped(registry: Registry, path: str, loaded: Any) -> Any:
    if loaded is None and _dropped_large(registry, path):
        return _DROPPED
    return registry.refresh(path, loaded)


async def describe_dropped(ls: Any, registry: Registry) -> None:
    """Before a listing: a large session dropped from memory that changed since it was listed
    (a compaction appended to it) is described off the core worker, so the listing finds its
    SessionInfo in the listing cache instead of reading the whole index on the worker."""
    stale = await ls.core(_stale_dropped, registry)
    for path in stale:
        try:
            got = await run(_describe, str(registry.state.root), tuple(registry.roots), path)
        except Exception:  # gone or unreadable: the listing finds out as before
            continue
        if got is not None:
            await ls.core(registry.cache.remember_info, path, *got)


def _stale_dropped(registry: Registry) -> list[str]:
    from pi_server.store.cache import fingerprint

    out = []
    for path, entries in registry.evicted.items():
        if entries >= LONG_ENTRIES and path not in registry.sessions:
            fp = fingerprint(path)
            if fp is not None and registry.cache.cached_info(path, fp) is None:
                out.append(path)
    return out


def _describe(state_root: str, roots: tuple[str, ...], path: str) -> tuple[dict, dict] | None:
    """(fingerprint, SessionInfo as the listing cache keeps it) of the file as read; None when it
    changed meanwhile (the listing reads it then)."""
    from pi_server.store.cache import fingerprint
    from pi_server.store.discovery import session_info

    idx = private_index(state_root, path, roots)
    fp = fingerprint(path)
    if idx.header is None or fp is None or fp["size"] != idx.size:
        return None
    return fp, {**session_info(idx), "_size": idx.size}
