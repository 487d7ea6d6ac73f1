"""Requests in flight, so that background work (the full-text index) gives way to them: a
step of it holds the interpreter lock for a good part of its time, and requests answered
meanwhile take twice as long."""

from __future__ import annotations

import asyncio
import time

QUIET_S = 0.2  # background work waits this long after the last request ends
MAX_WAIT_S = 0.5  # and never longer than this per step, so that a stream of requests cannot stop it

_in_flight = 0
_last_end = 0.0


def begin() -> None:
    global _in_flight
    _in_flight += 1


def end() -> None:
    global _in_flight, _last_end
    _in_flight -= 1
    _last_end = time.monotonic()


async def quiet() -> None:
    """Return once no request has run for `QUIET_S`, or after `MAX_WAIT_S`."""
    deadline = time.monotonic() + MAX_WAIT_S
    while (now := time.monotonic()) < deadline and (_in_flight or now - _last_end < QUIET_S):
        await asyncio.sleep(0.02)
