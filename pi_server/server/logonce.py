"""Repeated errors logged once: a burst (16,000 failed accepts in seconds) is one line and a count.

The first occurrence of a message is logged as usual; the same message again is held back
and counted, and logged (with how many were held back) at most once every REPEAT_EVERY s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

log = logging.getLogger("pi_server")

REPEAT_EVERY = 60.0  # seconds between two log lines for the same repeated message


class Repeated:
    def __init__(self, every: float = REPEAT_EVERY) -> None:
        self.every = every
        self.last: dict[str, float] = {}
        self.held: dict[str, int] = {}

    def due(self, key: str) -> int | None:
        """None to hold this occurrence back, else how many were held back since the last line."""
        now = time.monotonic()
        last = self.last.get(key)
        if last is not None and now - last < self.every:
            self.held[key] = self.held.get(key, 0) + 1
            return None
        self.last[key] = now
        return self.held.pop(key, 0)

    def warning(self, key: str, message: str, *args: Any) -> None:
        held = self.due(key)
        if held is not None:
            log.warning(message + (f" (and {held} more like it)" if held else ""), *args)


def quiet_loop_errors(loop: asyncio.AbstractEventLoop, repeated: Repeated) -> None:
    """The loop's own error reports (such as `socket.accept() out of system resource`), once
    each per REPEAT_EVERY s instead of once per failure."""

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        held = repeated.due(f"{context.get('message')}|{type(exc).__name__}|{exc}")
        if held is None:
            return
        if held:
            context = {**context, "message": f"{context.get('message')} (and {held} more like it)"}
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
