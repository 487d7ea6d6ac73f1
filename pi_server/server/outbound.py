"""A bound on one connection's unsent output, for any stream connection (TCP, Unix socket).

A client that keeps requests in flight and stops reading would otherwise grow the server
by every reply it does not read. Wrapped in `Outbound`, the connection's writer keeps at
most SOFT_LIMIT bytes queued, and MAX_IN_FLIGHT requests unanswered, before its reader
waits (`ready()`: no new requests are read from a client that does not read its replies),
and a connection whose unsent output still passes HARD_LIMIT (replies of requests
already in flight, notifications) is closed and its buffer freed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

log = logging.getLogger("pi_server")

SOFT_LIMIT = 8 << 20  # unsent bytes past which the connection's requests are no longer read
HARD_LIMIT = 128 << 20  # unsent bytes past which the connection is closed
MAX_IN_FLIGHT = 64  # requests being answered past which the connection's requests are not read
JOIN_LIMIT = 1 << 20  # a message up to this size is joined and sent in one piece


class Outbound:
    """The writer pygls writes replies to; the reader awaits `ready()` before each request."""

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        soft: int = SOFT_LIMIT,
        hard: int = HARD_LIMIT,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.writer = writer
        self.transport = writer.transport
        self.soft, self.hard, self.max_in_flight = soft, hard, max_in_flight
        self.overflowed = False
        self.in_flight = 0
        self._room = asyncio.Event()
        self._room.set()
        # drain() waits while more than `soft` is queued, until the queue falls to soft / 4
        self.transport.set_write_buffer_limits(high=soft, low=soft // 4)

    def unsent(self) -> int:
        return self.transport.get_write_buffer_size()

    def write(self, data: bytes) -> None:
        self.write_parts([data])

    def write_parts(self, parts: list[bytes]) -> None:
        """One message given in pieces (a large answer is never joined into one more copy)."""
        if self.overflowed or self.transport.is_closing():
            return
        before = self.unsent()
        size = sum(map(len, parts))
        if size <= JOIN_LIMIT:  # one send, not one per piece: each gives up the interpreter lock
            self.transport.write(b"".join(parts))
        else:
            for part in parts:
                self.transport.write(part)
        # one large reply to a client that keeps up may pass the hard limit on its own
        if before > self.soft and before + size > self.hard:
            self.overflowed = True
            log.warning("client dropped: %d MiB of replies left unread", (before + size) >> 20)
            self.transport.abort()  # frees the queued output now; close() would wait to send it

    def track(self, future: Any) -> None:
        """A request being answered (its handler's future): counted until it is done."""
        if isinstance(future, concurrent.futures.Future):
            future = asyncio.wrap_future(future)
        if not isinstance(future, asyncio.Future) or future.done():
            return
        self.in_flight += 1
        if self.in_flight >= self.max_in_flight:
            self._room.clear()
        future.add_done_callback(self._answered)

    def _answered(self, _future: Any) -> None:
        self.in_flight -= 1
        if self.in_flight < self.max_in_flight:
            self._room.set()

    async def ready(self) -> None:
        """Return once fewer than max_in_flight requests are unanswered and the unsent
        output is below the soft limit (at once if both are)."""
        await self._room.wait()
        await self.writer.drain()

    def close(self) -> None:
        self.writer.close()

    def write_eof(self) -> None:
        self.writer.write_eof()

    def is_closing(self) -> bool:
        return self.transport.is_closing()
