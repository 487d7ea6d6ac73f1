"""The core worker: one thread that runs core calls, requests before background work.

Indexes and live sessions are never shared between threads, so all core work
runs here. Two priorities keep a client's request from waiting behind bulk
work: a request runs before any queued step of a searched listing or of
background indexing (those run in ~20 ms steps), so it waits at most for the
one step in progress. Within a priority, calls run in the order they came; a
background step that waited `STARVE_S` goes next, so bulk work still moves
while requests keep coming.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

REQUEST = 0
BACKGROUND = 1
STARVE_S = 0.1
SLOW_S = 0.5
log = logging.getLogger("pi_server")


class CoreWorker(Executor):
    def __init__(self, name: str = "pi-core") -> None:
        # per priority: (queued at, future, fn, args, kwargs)
        self._queues: tuple[deque, deque] = (deque(), deque())
        self._cv = threading.Condition()
        self._closed = False
        self._name = name
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self.submit_at(REQUEST, fn, *args, **kwargs)

    def submit_at(self, priority: int, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        fut: Future = Future()
        with self._cv:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._queues[priority].append((time.monotonic(), fut, fn, args, kwargs))
            if self._thread is None:
                # not a daemon, joined at exit once the queue is drained: a write in progress
                # when the process ends still lands (as with the standard thread pool)
                self._thread = threading.Thread(target=self._run, name=self._name)
                threading._register_atexit(self._at_exit)  # type: ignore[attr-defined]
                self._thread.start()
            self._cv.notify()
        return fut

    def _next(self) -> tuple | None:
        requests, background = self._queues
        if background and (not requests or time.monotonic() - background[0][0] > STARVE_S):
            return background.popleft()
        return requests.popleft() if requests else None

    def _run(self) -> None:
        while True:
            with self._cv:
                item = self._next()
                while item is None and not self._closed:
                    self._cv.wait()
                    item = self._next()
                if item is None:
                    return
            _, fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            start = time.monotonic()
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # handed to the caller, as the standard pool does
                fut.set_exception(e)
            else:
                fut.set_result(result)
            took = time.monotonic() - start
            if took > SLOW_S:  # what holds the worker (and every request queued behind it)
                log.info("core call %s took %.2f s", getattr(fn, "__qualname__", fn), took)

    def _at_exit(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cv:
            self._closed = True
            if cancel_futures:
                for queue in self._queues:
                    for item in queue:
                        item[1].cancel()
                    queue.clear()
            self._cv.notify_all()
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()
