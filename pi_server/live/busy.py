"""Is a turn running in a session? Ours (the registry knows), or pi's (read from the file)."""

from __future__ import annotations

import os
import time

from pi_server.live.session import LiveSession
from pi_server.store import entry_types as et


def pi_turn_running(live: LiveSession, timeout: float, now: float | None = None) -> bool:
    """pi is mid-turn when the last entry waits for the model or a tool and the file changed lately."""
    idx = live.index
    if not idx.ids:
        return False
    pos = len(idx) - 1
    if idx.types[pos] != et.MESSAGE:
        return False
    role = idx.roles[pos]
    if role == "assistant":
        entry = idx.read_entry(pos)
        if (entry.get("message") or {}).get("stopReason") != "toolUse":
            return False
    elif role not in ("user", "toolResult"):
        return False
    try:
        mtime = os.stat(idx.path).st_mtime
    except OSError:
        return False
    return ((now or time.time()) - mtime) < timeout
