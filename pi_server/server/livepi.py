"""The pis that hold sessions: who registered which session file, over which connection.

A pi running pi-server's extension registers the session it has open with its
state (`live`: pid, leaf, streaming, model, thinking level). The registration
belongs to the connection: it goes when the pi withdraws it, registers another
session, or its connection closes. Several pis may hold one file (two terminals
resuming it); the latest to register is the one the editors' writes go to.
Event-loop side only: nothing here touches an index.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

LIVE_FIELDS = ("pid", "leafId", "streaming", "model", "thinkingLevel")


@dataclass(eq=False)
class LivePi:
    conn: Any  # the connection the pi speaks through (server.tcp.Connection)
    session: str  # the session file's path, as the registry resolves it
    state: dict[str, Any]
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # set when it lets go


@dataclass
class LivePis:
    sessions: dict[str, list[LivePi]] = field(default_factory=dict)
    by_conn: dict[Any, LivePi] = field(default_factory=dict)

    def holder(self, session: str) -> LivePi | None:
        """The pi the writes on `session` go to: the latest to register it."""
        held = self.sessions.get(session)
        return held[-1] if held else None

    def live(self, session: str) -> dict[str, Any] | None:
        pi = self.holder(session)
        return dict(pi.state) if pi is not None else None

    def register(self, conn: Any, session: str, state: dict[str, Any]) -> list[str]:
        """`conn`'s pi holds `session` now; the sessions whose `live` changed."""
        changed = self.withdraw(conn) if self._held_by(conn) != session else []
        pi = self.by_conn.get(conn)
        if pi is None:
            pi = self.by_conn[conn] = LivePi(conn, session, dict(state))
            self.sessions.setdefault(session, []).append(pi)
        else:
            pi.state = dict(state)
        return [*changed, session]

    def update(self, conn: Any, session: str, state: dict[str, Any]) -> bool:
        """New state from `conn`'s pi; whether what editors see of the session changed."""
        pi = self.by_conn.get(conn)
        if pi is None or pi.session != session:
            return False
        before = self.live(session)
        pi.state = dict(state)
        return self.live(session) != before

    def withdraw(self, conn: Any) -> list[str]:
        """`conn`'s pi let go (withdrew or left); the session whose `live` changed, if any."""
        pi = self.by_conn.pop(conn, None)
        if pi is None:
            return []
        pi.gone.set()
        held = self.sessions.get(pi.session, [])
        if pi in held:
            held.remove(pi)
        if not held:
            self.sessions.pop(pi.session, None)
        return [pi.session]

    def _held_by(self, conn: Any) -> str | None:
        pi = self.by_conn.get(conn)
        return pi.session if pi is not None else None
