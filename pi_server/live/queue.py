"""Writes now, or queued while a turn runs and flushed in order when it ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pi_server.live import ops as oplib
from pi_server.live.appends import SessionAppender
from pi_server.live.errors import EntryNotFound, Refused
from pi_server.live.session import LiveSession
from pi_server.store.state import StateDir


@dataclass
class Written:
    ids: list[list[str]] = field(default_factory=list)  # per write: the entries it made
    appended: list[str] = field(default_factory=list)  # every id the file gained meanwhile
    queued: bool = False

    @property
    def last_id(self) -> str | None:
        return self.ids[-1][-1] if self.ids and self.ids[-1] else None


def write(state: StateDir, live: LiveSession, ops: list[oplib.Op], busy: bool) -> Written:
    """Apply the writes now, or queue them all when a turn runs or writes already wait."""
    with state.queue_lock(live.path):
        pending = state.pending(live.path)
        if pending or busy:
            state.set_pending(live.path, [*pending, *oplib.encode(ops)])
            return Written(ids=[[] for _ in ops], queued=True)
    appender = SessionAppender(live, state)
    ids = [oplib.apply(op, appender) for op in ops]
    return Written(ids=ids, appended=appender.appended)


def flush(state: StateDir, live: LiveSession, pi_busy: Callable[[], bool] = lambda: False) -> list[str]:
    """Apply the queued writes in order, each removed from the queue as it lands.

    Several servers may share the state dir: only one flushes a session at a
    time, each write is taken from the queue on disk under its lock (so a write
    queued meanwhile by another server is kept), and the file is re-read first
    (so a write lands under what the other server or pi appended). When that
    re-read finds that pi started a turn (`pi_busy`), the rest waits for it to end,
    whichever server flushes: the caller's view of the file may be older than pi's turn.
    """
    appender = SessionAppender(live, state)
    with state.flusher_lock(live.path) as mine:
        if not mine:
            return []
        while True:
            with state.queue_lock(live.path):
                raw = state.pending(live.path)
                if not raw:
                    break
                if appender.catch_up() and pi_busy():
                    break
                k = _head(raw)
                for op in oplib.decode(raw[:k]):
                    try:
                        oplib.apply(op, appender)
                    except (EntryNotFound, Refused):
                        pass  # its target is gone (file rewritten) or left the branch: drop it
                state.set_pending(live.path, raw[k:])
    return appender.appended


def _head(raw: list) -> int:
    """How many queued items make the first write: an old queue's summary label rides with its summary."""
    k = 1
    while k < len(raw) and isinstance(raw[k], dict) and raw[k].get("targetId") == oplib.OLD_SUMMARY_LABEL:
        k += 1
    return k
