"""The notifications the server sends of its own accord, each built in one place."""

from __future__ import annotations

from typing import Any

from pi_server.store.names import to_wire


def session_updated(ls: Any, session: str, appended: list[str], leaf_id: str | None, reset: bool = False) -> None:
    """`pi/sessionUpdated`: entries the file gained (ours reach other clients as the watcher's would);
    on a session a live pi holds, with its `live`."""
    if appended or reset:
        msg = {"session": to_wire(session), "appended": appended, "leafId": leaf_id, "reset": reset}
        pis = getattr(ls, "live_pis", None)
        live = pis.live(session) if pis is not None and pis.sessions else None
        if live is not None:
            msg["live"] = live
        ls.notify("pi/sessionUpdated", msg)


def live_changed(ls: Any, session: str, leaf_id: str | None, live: dict[str, Any] | None) -> None:
    """`pi/sessionUpdated` for a change of a live pi's state (None: pi let go of the session)."""
    msg = {"session": to_wire(session), "appended": [], "leafId": leaf_id, "reset": False, "live": live}
    ls.notify("pi/sessionUpdated", msg)


def sessions_changed(ls: Any, added: list[str], removed: list[str], changed: list[str]) -> None:
    ls.notify(
        "pi/sessionsChanged",
        {"added": [*map(to_wire, added)], "removed": [*map(to_wire, removed)], "changed": [*map(to_wire, changed)]},
    )


def save_point(ls: Any, session: str, flushed: list[str]) -> None:
    ls.notify("pi/savePoint", {"session": to_wire(session), "flushed": flushed})


def agent_event(ls: Any, session: str, turn_id: str, event: dict[str, Any]) -> None:
    ls.notify("pi/agentEvent", {"session": to_wire(session), "turnId": turn_id, "event": event})
