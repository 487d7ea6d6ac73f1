"""The watcher's fallback: poll the session files' sizes and times when the OS cannot watch.

inotify refuses when the user's instances or watches are used up (the common "file
watcher limit reached"); the server then polls instead of going stale silently. Each
pass lists the roots' folders and stats each `*.jsonl` once (from its folder's entry),
and the next pass waits POLL_INTERVAL or POLL_COST_FACTOR times the pass's own duration,
whichever is longer, so polling never takes more than ~1/POLL_COST_FACTOR of a core.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable

from watchfiles import Change

from pi_server.store.discovery import iter_session_entries

log = logging.getLogger("pi_server")

POLL_INTERVAL = 1.0  # seconds between passes over the files
POLL_COST_FACTOR = 20  # a pass that took t seconds waits at least 20·t before the next

Snapshot = dict[str, tuple[int, int, int]]  # path -> (size, mtime_ns, inode)
Changes = set[tuple[Change, str]]


def snapshot(roots: list[str]) -> Snapshot:
    """Size, modification time and inode of every session file under the roots."""
    out: Snapshot = {}
    for entry in iter_session_entries(roots):
        try:
            st = entry.stat()
        except OSError:
            continue  # removed between the listing and the stat: the next pass sees it gone
        out[entry.path] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def files_in_folders(roots: list[str], folders: list[str]) -> list[str]:
    """The session files in these folders (each under a root) and their subfolders, as a walk of
    the roots would find them: hidden folders and symlinked ones left out."""
    found: list[str] = []
    for folder in folders:
        root = next((r for r in roots if folder.startswith(r.rstrip(os.sep) + os.sep)), None)
        if root is None or os.path.islink(folder):
            continue
        if any(part.startswith(".") for part in os.path.relpath(folder, root).split(os.sep)):
            continue
        found += (e.path for e in iter_session_entries([folder]))
    return found


def diff(before: Snapshot, after: Snapshot) -> Changes:
    """The changes between two snapshots, as the watcher would report them."""
    changes: Changes = {(Change.deleted, p) for p in before.keys() - after.keys()}
    for path, sig in after.items():
        old = before.get(path)
        if old is None:
            changes.add((Change.added, path))
        elif old != sig:
            changes.add((Change.modified, path))
    return changes


async def poll_roots(
    roots: list[str], stop: asyncio.Event, handle: Callable[[Changes], Awaitable[None]], baseline: Snapshot | None = None
) -> None:
    """Hand each pass's changes (since `baseline`, else since the first pass) to `handle` until `stop` is set."""
    last = baseline if baseline is not None else await asyncio.to_thread(snapshot, roots)
    while not stop.is_set():
        started = time.monotonic()
        current = await asyncio.to_thread(snapshot, roots)
        cost = time.monotonic() - started
        changes = diff(last, current)
        last = current
        if changes:
            try:
                await handle(changes)
            except Exception:
                log.exception("polling: handling changes failed")
        try:
            await asyncio.wait_for(stop.wait(), max(POLL_INTERVAL, cost * POLL_COST_FACTOR))
        except TimeoutError:
            pass
