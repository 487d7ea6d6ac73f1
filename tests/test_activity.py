"""Background work (the full-text index) gives way to requests: a bounded wait behind small
ones, and a wait for a long call's end (its thread and the index's would share the
interpreter lock, and every small request between them would wait)."""

from __future__ import annotations

import asyncio
import time

from pi_server.server import activity


def _quiet_after(setup, finish_at: float | None, finish) -> float:  # type: ignore[no-untyped-def]
    async def main() -> float:
        setup()
        loop = asyncio.get_running_loop()
        if finish_at is not None:
            loop.call_later(finish_at, finish)
        t0 = time.monotonic()
        await activity.quiet()
        return time.monotonic() - t0

    return asyncio.run(main())


def test_a_stream_of_requests_holds_background_work_a_bounded_time() -> None:
    took = _quiet_after(activity.begin, None, None)
    activity.end()
    assert activity.MAX_WAIT_S <= took < activity.MAX_WAIT_S + 0.3


def test_a_long_call_holds_background_work_until_it_ends() -> None:
    wait = activity.MAX_WAIT_S + 0.7
    took = _quiet_after(activity.long_begin, wait, activity.long_end)
    assert wait + activity.QUIET_S <= took < wait + activity.QUIET_S + 0.3
    assert _quiet_after(lambda: None, None, None) < activity.QUIET_S + 0.1


def test_a_long_call_shortens_the_switch_interval_until_the_last_one_ends() -> None:
    import sys

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(activity.switch_interval())
        assert sys.getswitchinterval() == activity.SWITCH_S
        activity.long_begin()
        activity.long_begin()
        assert abs(sys.getswitchinterval() - activity.LONG_SWITCH_S) < 1e-6
        activity.long_end()
        assert abs(sys.getswitchinterval() - activity.LONG_SWITCH_S) < 1e-6
        activity.long_end()
        assert abs(sys.getswitchinterval() - activity.SWITCH_S) < 1e-6
        assert activity.switch_interval() == activity.SWITCH_S
    finally:
        sys.setswitchinterval(before)
