"""Requests in flight, so that background work (the full-text index) gives way to them: a
step of it holds the interpreter lock for a good part of its time, and requests answered
meanwhile take twice as long."""

from __future__ import annotations

import asyncio
import sys
import time

QUIET_S = 0.2  # background work waits this long after the last request ends
MAX_WAIT_S = 0.5  # and never longer than this per step, so that a stream of requests cannot stop it
# while a long call runs (seconds of work on its own thread) a step waits for it to end, up to
# this: a step beside it made three threads share the interpreter lock, and every small
# request's hand-offs between them waited 0.1-0.4 s
MAX_LONG_WAIT_S = 30.0

# the event loop (reading requests, writing answers) takes the lock back from a busy core
# worker within 1 ms instead of CPython's 5 ms: a tail latency of each request
SWITCH_S = 0.001
# and within 0.2 ms while a long call runs: a small request takes and gives the lock back at
# each system call, waiting anew each time (0.17-0.21 s at worst beside a million-entry
# context at 1 ms, 0.08-0.12 s at 0.2 ms)
LONG_SWITCH_S = 0.0002

_in_flight = 0
_last_end = 0.0
_long = 0  # long calls running (written by the long-call thread alone)


def switch_interval() -> float:
    """The interpreter's switch interval for now (`sys.setswitchinterval`)."""
    return LONG_SWITCH_S if _long else SWITCH_S


def long_begin() -> None:
    global _long
    _long += 1
    sys.setswitchinterval(switch_interval())


def long_end() -> None:
    global _long, _last_end
    _long -= 1
    _last_end = time.monotonic()
    sys.setswitchinterval(switch_interval())


def begin() -> None:
    global _in_flight
    _in_flight += 1


def end() -> None:
    global _in_flight, _last_end
    _in_flight -= 1
    _last_end = time.monotonic()


async def quiet() -> None:
    """Return once no request has run for `QUIET_S`, or after `MAX_WAIT_S` (`MAX_LONG_WAIT_S`
    while a long call runs)."""
    start = since = time.monotonic()
    while True:
        now = time.monotonic()
        if _long:  # the bounded wait starts again at its end
            since = now
        if now - since >= MAX_WAIT_S or now - start >= MAX_LONG_WAIT_S:
            return
        if not (_long or _in_flight or now - _last_end < QUIET_S):
            return
        await asyncio.sleep(0.02)
