"""Work the server does on its own: initial indexing, watching the roots, flushing queues."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from watchfiles import Change, awatch

from pi_server.server import bulk, errors, fulltext, notify, offcore, polling
from pi_server.server.worker import BACKGROUND

log = logging.getLogger("pi_server")
PiServer = Any  # server.host.Host, which starts this work (so this module cannot import it)
DEBOUNCE_MS = 20  # watchfiles waits this long for more changes before yielding
# changes are yielded once a step passes without new ones: an append reaches the client
# 1-2 steps after the write (a 2 ms step wakes the watcher thread 500 times a second)
STEP_MS = 2


def start(ls: PiServer) -> None:
    """Indexing, watching and queue flushing, once a client is initialized."""
    start_indexing(ls)
    start_watching(ls)


def start_indexing(ls: PiServer) -> None:
    ls.tasks.append(asyncio.ensure_future(initial_index(ls)))
    fulltext.indexer(ls)  # the full-text index, on its own thread


def start_watching(ls: PiServer) -> None:
    """The watcher and the queue flushing (changes made from now on are seen)."""
    if ls.options.watch:
        ls.tasks.append(asyncio.ensure_future(watch_roots(ls)))
        ls.tasks.append(asyncio.ensure_future(pending_timer(ls)))


async def watch_roots(ls: PiServer) -> None:
    reg = ls.registry
    assert reg is not None
    roots = [r for r in reg.roots if os.path.isdir(r)]
    if not roots:
        return
    try:
        async for changes in awatch(
            *roots,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=ls.stop,
            watch_filter=_watched,
        ):
            await handle_changes(ls, await with_new_folders(roots, changes))
        return
    except Exception as e:  # watchfiles raises OSError or its own error for an exhausted limit
        warn_cannot_watch(ls, e)
    # the change that stopped the watcher (and any since its last report) was never handed on:
    # every file is checked once against what the server holds before polling takes over
    baseline = await asyncio.to_thread(polling.snapshot, roots)
    try:
        await handle_changes(ls, await ls.core(missed_changes, ls, baseline))  # on the core: the registry's own thread
    except Exception:
        log.exception("watcher: checking the files after it stopped failed")
    await polling.poll_roots(roots, ls.stop, lambda changes: handle_changes(ls, changes), baseline)


def _watched(change: Change, path: str) -> bool:
    """Session files, and folders added under the roots (see `with_new_folders`)."""
    return path.endswith(".jsonl") or (change == Change.added and os.path.isdir(path) and not os.path.islink(path))


async def with_new_folders(roots: list[str], changes: set[tuple[Change, str]]) -> set[tuple[Change, str]]:
    """The changes, each folder added replaced by the session files already in it: a folder made
    and filled at once (a copy, an archive unpacked, a folder moved in) is watched only from
    just after it appeared, so the watcher never names the files written before that."""
    folders = [p for kind, p in changes if kind == Change.added and not p.endswith(".jsonl")]
    if not folders:
        return changes
    found = await asyncio.to_thread(polling.files_in_folders, roots, folders)
    return {c for c in changes if c[1].endswith(".jsonl")} | {(Change.added, p) for p in found}


def missed_changes(ls: PiServer, files: polling.Snapshot) -> set[tuple[Change, str]]:
    """The files on disk as changes to check against what the server holds: one it holds as
    modified, any other as added, and one it holds that is gone as deleted. Polling's first
    pass starts from these files, so a change the stopped watcher never reported (often the
    file it could not name, new) would otherwise never be seen."""
    reg = ls.registry
    served = reg.sessions.keys() | reg.evicted.keys()
    held = served | reg.skipped.keys()
    changes = {(Change.modified if path in held else Change.added, path) for path in files}
    return changes | {(Change.deleted, path) for path in served - files.keys()}


def _reasons(e: BaseException) -> str:
    """The messages of an error and of those it groups (watchfiles raises from a task group)."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_reasons(x) for x in e.exceptions)
    return str(e)


def warn_cannot_watch(ls: PiServer, e: Exception) -> None:
    """Say once, in the log and to the user, why views now follow the files by polling."""
    text = _reasons(e)
    every = f"checking them every {polling.POLL_INTERVAL:g} s instead"
    if "Unable to decode path" in text:  # the watcher cannot name a file whose name is not UTF-8
        message = f"pi-server: a session file name that is not UTF-8 stops the folder watcher ({text}); {every}."
    else:
        if "Too many open files" in text or "os error 24" in text:
            limit = "fs.inotify.max_user_instances"
        else:
            limit = "fs.inotify.max_user_watches"
        message = (
            f"pi-server: cannot watch the session folders ({text.split(' about ')[0]}); "
            f"{every}. Raise the limit with: sudo sysctl {limit}=<higher value>"
        )
    log.warning("%s", message)
    ls.notify("window/showMessage", {"type": 2, "message": message})


async def handle_changes(ls: PiServer, changes: set[tuple[Change, str]]) -> None:
    reg = ls.registry
    assert reg is not None
    fulltext.touch(ls, [p for _k, p in changes])
    added, removed, changed = [], [], []
    for kind, path in sorted(changes, key=lambda c: c[1]):
        path = os.path.abspath(path)
        exists = os.path.isfile(path)
        known = path in reg.sessions or path in reg.evicted
        if not exists:
            if known or kind == Change.deleted:
                await ls.core(reg.forget, path)
                removed.append(path)
            continue
        if not known:
            if kind == Change.added:
                added.append(path)
                try:
                    await ls.core(reg.get, path)
                except Exception:
                    pass
            continue
        upd = await offcore.refresh(ls, reg, path)  # a large session dropped from memory: read off the worker
        if upd is None:
            continue
        changed.append(path)
        notify.session_updated(ls, path, upd.appended, upd.leaf_id, upd.reset)
        if reg.state.pending(path):
            await flush_session(ls, path)
    if added or removed or changed:
        notify.sessions_changed(ls, added, removed, changed)


async def pending_timer(ls: PiServer) -> None:
    """Flush queues whose session stayed busy past the timeout (a pi that died mid-turn)."""
    reg = ls.registry
    assert reg is not None
    while not ls.stop.is_set():
        await asyncio.sleep(min(5.0, reg.busy_timeout / 4))
        for session in reg.state.sessions_with_pending():
            await flush_session(ls, session)


async def initial_index(ls: PiServer) -> None:
    """Index every session under the roots, reporting LSP progress; requests go on meanwhile."""
    reg = ls.registry
    assert reg is not None
    await ls.core(reg.clean_temp_files)
    files = await ls.core(reg.all_files)
    token = await ls.begin_progress("Indexing pi sessions", percentage=0)
    start = time.monotonic()
    last = [0]

    def progress(n: int) -> None:
        if token and (n - last[0] >= 10 or n == len(files)):
            last[0] = n
            percentage = int(n * 100 / len(files)) if files else 100
            ls.report_progress(token, f"{n}/{len(files)}", percentage)

    # in the worker processes (both cores, off the requests' interpreter lock), else here
    if not await bulk.index_store(ls, files, progress):
        await index_here(ls, files, progress)
    ls.end_progress(token, f"{len(files)} sessions")
    log.info("indexed %d sessions in %.2f s", len(files), time.monotonic() - start)
    await ls.core(reg.save_all)
    # writes left queued by an earlier run
    for session in reg.state.sessions_with_pending():
        await flush_session(ls, session)


async def index_here(ls: PiServer, files: list[str], progress: Callable[[int], None]) -> None:
    """Index on the core worker, a step at a time (no worker processes)."""
    for i, path in enumerate(files):
        try:
            while not await ls.core(ls.registry.index_step, path, priority=BACKGROUND):
                pass
        except errors.PiError:
            pass
        progress(i + 1)


async def flush_session(ls: PiServer, session: str, force: bool = False) -> None:
    reg = ls.registry
    assert reg is not None
    try:
        live = await ls.core(reg.get, session)
    except errors.PiError:
        return
    flushed = await ls.core(reg.flush, live, force)
    if flushed:
        notify.session_updated(ls, live.path, flushed, live.leaf_id)
        notify.save_point(ls, live.path, flushed)
