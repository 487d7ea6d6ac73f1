"""Writes now, or queued while a turn runs and flushed in order when it ends."""

from __future__ import annotations

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
    pending = state.pending(live.path)
    if pending or busy:
        state.set_pending(live.path, [*pending, *oplib.encode(ops)])
        return Written(ids=[[] for _ in ops], queued=True)
    appender = SessionAppender(live, state)
    ids = [oplib.apply(op, appender) for op in ops]
    return Written(ids=ids, appended=appender.appended)


def flush(state: StateDir, live: LiveSession) -> list[str]:
    """Apply the queued writes in order; the queue shrinks after each one lands."""
    rest = oplib.decode(state.pending(live.path))
    appender = SessionAppender(live, state)
    while rest:
        try:
            oplib.apply(rest[0], appender)
        except (EntryNotFound, Refused):
            pass  # its target is gone (file rewritten) or no longer on the branch: drop it
        rest.pop(0)
        state.set_pending(live.path, oplib.encode(rest))
    return appender.appended
