"""A small pool of worker processes for bulk reads (store/bulk.py): searched listings and
the first index of a store run there, on their own cores and their own interpreter lock,
so the requests the server's core worker answers meanwhile are not slowed down.

Workers start on first use (`python -m pi_server.store.bulk`: a fresh interpreter,
never a fork of this threaded process), one per core up to two (`PI_SERVER_WORKERS`
overrides; 0 keeps all work in the server). Each file goes to the same worker every
time (its search text stays there). A worker that dies or stays silent past a
deadline on a file is killed and replaced, that file answers FAILED and the rest
go on. Workers exit when the server closes their pipe or is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import select
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from pi_server.store.packing import pack, unpack

log = logging.getLogger("pi_server")
FAILED = "failed"  # the answer for a file its worker died or hung on
BASE_TIMEOUT_S = 10.0  # a file's deadline: this, plus a second per 10 MB
BYTES_PER_S = 10_000_000
WALL_FACTOR = 6  # a worker that gets no CPU at all (blocked) is given up after this times its budget
FLUSH_MS = 20  # a worker's answers wait this long for others, to go in one frame: each frame wakes
# this process's threads, which share the interpreter lock with its requests
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class WorkerLost(Exception):
    pass


class Slot:
    """One worker process and the pipe to it; one batch at a time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.cv = threading.Condition()
        self.busy = False
        self.urgent = 0  # urgent batches waiting: they go before the next bulk batch
        self.closed = False  # the server is exiting: no new process
        self.buf = bytearray()

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.closed:
            raise WorkerLost("shut down")
        self.buf.clear()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_server.store.bulk"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,  # a Ctrl-C meant for the server is not the workers'
        )

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        try:
            proc.wait(timeout=1.0)  # it exits on the closed pipe
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def run(
        self, req: dict[str, Any], items: list[str], on_result: Callable[[int, Any], None], urgent: bool = False
    ) -> None:
        """Send `items` with `req`; `on_result(i, answer)` for each, FAILED where the worker was lost.
        An `urgent` batch (a client waits for it) goes before bulk batches waiting for the worker."""
        with self.cv:
            self.urgent += urgent
            while self.busy or (not urgent and self.urgent):
                self.cv.wait()
            self.urgent -= urgent
            self.busy = True
        try:
            self._run(req, items, on_result)
        finally:
            with self.cv:
                self.busy = False
                self.cv.notify_all()

    def _run(self, req: dict[str, Any], items: list[str], on_result: Callable[[int, Any], None]) -> None:
        pending = list(range(len(items)))
        retried = False
        while pending:
            got = 0
            fresh = self.proc is None or self.proc.poll() is not None
            try:
                self.start()
                self._send({**req, "flushMs": FLUSH_MS, "items": [items[i] for i in pending]})
                while got < len(pending):
                    for j, value in self._read_frame(items[pending[got]]):
                        on_result(pending[j], value)
                        got = j + 1
                pending = []
            except (WorkerLost, OSError, ValueError, msgspec.DecodeError) as e:
                if self.closed:  # exiting: what is left is not answered
                    for i in pending[got:]:
                        on_result(i, FAILED)
                    return
                if got == 0 and not fresh and not retried:  # died before this batch: not this file's doing
                    self.stop()
                    retried = True
                    continue
                log.warning("worker %s lost on %s (%s): replaced, file skipped", self.name, items[pending[got]], e)
                self.stop()
                on_result(pending[got], FAILED)
                pending = pending[got + 1 :]

    def _send(self, obj: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        body = pack(obj)
        self.proc.stdin.write(len(body).to_bytes(4, "big") + body)
        self.proc.stdin.flush()

    def _read_frame(self, path: str) -> list[list[Any]]:
        """The next answers (`[[i, answer], ...]`); WorkerLost once the worker stayed silent on
        `path` past its deadline (`Quiet`)."""
        assert self.proc is not None
        quiet = Quiet(self.proc.pid, path)
        head = self._read_exact(4, quiet)
        return unpack(self._read_exact(int.from_bytes(head, "big"), quiet))

    def _read_exact(self, n: int, quiet: Quiet) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while len(self.buf) < n:
            ready, _, _ = select.select([fd], [], [], min(1.0, quiet.limit))
            if not ready:
                quiet.check()
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerLost("exited")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class Quiet:
    """How long a worker may stay silent on a file: `_deadline(path)` seconds of CPU (a loop),
    or WALL_FACTOR times that in wall time (blocked). CPU time, not wall time, first: on a
    loaded machine a worker may wait long for a core."""

    def __init__(self, pid: int, path: str) -> None:
        self.pid = pid
        self.wall0, self.cpu0, self.limit = time.monotonic(), _cpu_seconds(pid), _deadline(path)

    def check(self) -> None:
        cpu = _cpu_seconds(self.pid)
        if cpu is not None and self.cpu0 is not None and cpu - self.cpu0 > self.limit:
            raise WorkerLost(f"{cpu - self.cpu0:.0f} s of CPU without an answer")
        if time.monotonic() - self.wall0 > WALL_FACTOR * self.limit:
            raise WorkerLost(f"no answer in {time.monotonic() - self.wall0:.0f} s")


def _cpu_seconds(pid: int) -> float | None:
    """CPU time a process has used (None where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def _deadline(path: str) -> float:
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0
    return BASE_TIMEOUT_S + size / BYTES_PER_S


class BulkPool:
    def __init__(self, size: int) -> None:
        self.slots = [Slot(f"bulk-{i}") for i in range(size)]
        self.started = False
        self.closed = False

    def ready(self) -> bool:
        """Start the workers; False (and the pool off for good) when processes cannot be started."""
        if self.closed or self.started:
            return bool(self.slots) and not self.closed
        self.started = True
        try:
            for slot in self.slots:
                slot.start()
        except OSError as e:
            log.warning("no worker processes (%s): bulk work stays in the server", e)
            self.shutdown()
            self.slots = []
        return bool(self.slots)

    async def map(
        self, req: dict[str, Any], items: list[str], chunk: int, urgent: bool = False
    ) -> AsyncIterator[tuple[str, Any]]:
        """(item, answer) as the workers give them, in no particular order (`urgent`: Slot.run)."""
        loop = asyncio.get_running_loop()
        answers: asyncio.Queue[list[tuple[str, Any]]] = asyncio.Queue()
        shares: list[list[str]] = [[] for _ in self.slots]
        for item in items:
            shares[zlib.crc32(os.fsencode(item)) % len(self.slots)].append(item)

        def run_share(slot: Slot, share: list[str]) -> None:
            done = 0
            try:
                for start in range(0, len(share), chunk):
                    if self.closed:
                        break
                    part = share[start : start + chunk]
                    got: list[Any] = [FAILED] * len(part)
                    slot.run(req, part, got.__setitem__, urgent)
                    # one hand-over per batch: the event loop is the requests' too
                    loop.call_soon_threadsafe(answers.put_nowait, list(zip(part, got, strict=True)))
                    done = start + len(part)
            finally:  # every item answers, or the caller would wait forever
                if done < len(share):
                    loop.call_soon_threadsafe(answers.put_nowait, [(item, FAILED) for item in share[done:]])

        runs = [
            self._thread(loop, run_share, slot, share) for slot, share in zip(self.slots, shares, strict=True) if share
        ]
        left = len(items)
        while left:
            batch = await answers.get()
            left -= len(batch)
            for answer in batch:
                yield answer
        await asyncio.gather(*runs)

    @staticmethod
    def _thread(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> asyncio.Future:
        """Run `fn` on a daemon thread: a server exiting mid-work does not wait for it (its
        workers are stopped at exit, which ends the thread's wait)."""
        done: asyncio.Future = loop.create_future()

        def run() -> None:
            try:
                fn(*args)
            finally:
                if not loop.is_closed():
                    loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

        threading.Thread(target=run, name="pi-bulk", daemon=True).start()
        return done

    def shutdown(self) -> None:
        self.closed = True
        for slot in self.slots:
            slot.closed = True
            slot.stop()


_shared: BulkPool | None = None


def shared() -> BulkPool:
    """The process's pool (every connection of a TCP server shares it, as it shares the core)."""
    global _shared
    if _shared is None:
        env = os.environ.get("PI_SERVER_WORKERS")
        size = int(env) if env and env.isdigit() else min(2, os.cpu_count() or 1)
        _shared = BulkPool(size)
        atexit.register(_shared.shutdown)
    return _shared
