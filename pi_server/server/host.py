"""What every `pi/*` method needs from the server, without pygls.

A `Host` holds one client's view of the core (options, registry, the worker
thread) and the few things the methods ask of the connection: notifications,
requests to the client and work-done progress. The pygls server
(`server/base.py`) implements the connection; every transport (the daemon's
Unix socket, TCP, stdio with --no-daemon) serves through it. Core work runs on
one worker thread (indexes are never shared between
threads); long calls run in steps (`core_steps`) at background priority, so a
request queued meanwhile runs before their next step (`worker.CoreWorker`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from pi_server.live import errors as live_errors
from pi_server.live.registry import Registry
from pi_server.server import activity, errors
from pi_server.server.livepi import LivePis
from pi_server.server.options import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES, Options, resolve
from pi_server.server.worker import BACKGROUND, REQUEST, CoreWorker
from pi_server.store.discovery import resolve_roots
from pi_server.store.state import StateDir

log = logging.getLogger("pi_server")


@dataclass
class ServerOptions:
    session_dirs: list[str] = field(default_factory=list)
    state_dir: str | None = None
    token: str | None = None  # required in initializationOptions when set (TCP)
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    max_live_entries: int = DEFAULT_MAX_LIVE_ENTRIES
    watch: bool = True


class Host:
    """One client's server state and the connection services the methods use."""

    def init_host(self, options: ServerOptions) -> None:
        self.options = options  # the command line's
        self.settings = Options()  # resolved in initialize
        self.registry: Registry | None = None
        self.worker = CoreWorker()
        sys.setswitchinterval(activity.switch_interval())  # see server/activity.py
        self._running_steps: dict[Any, asyncio.Future] = {}
        self.tasks: list[asyncio.Task] = []
        self.stop = asyncio.Event()
        self.authorized = options.token is None
        self.client_tools: list[str] = []  # from the client's experimental.piTools
        # the pis holding sessions (shared by every connection of a daemon or TCP server)
        self.live_pis = LivePis()

    # ------------------------------------------------------------------ the connection

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        """Send a notification to the client."""
        raise NotImplementedError

    async def request(self, method: str, params: Any) -> Any:
        """Send a request to the client and wait for its result (plain JSON values)."""
        raise NotImplementedError

    def supports_progress(self) -> bool:
        """Whether the client said it takes work-done progress (window.workDoneProgress)."""
        raise NotImplementedError

    async def begin_progress(self, title: str, message: str | None = None, percentage: int | None = None) -> str | None:
        """Start work-done progress if the client takes it; the token (None: no progress)."""
        if not self.supports_progress():
            return None
        import uuid  # here: its import is a good part of a listing's first answer

        token = str(uuid.uuid4())
        try:
            await self.request("window/workDoneProgress/create", {"token": token})
        except Exception:  # the client may refuse progress: the work goes on without it
            return None
        value: dict[str, Any] = {"kind": "begin", "title": title, "cancellable": False}
        if message is not None:
            value["message"] = message
        if percentage is not None:
            value["percentage"] = percentage
        self.notify("$/progress", {"token": token, "value": value})
        return token

    def report_progress(self, token: str | None, message: str, percentage: int | None = None) -> None:
        if token is not None:
            value: dict[str, Any] = {"kind": "report", "message": message}
            if percentage is not None:
                value["percentage"] = percentage
            self.notify("$/progress", {"token": token, "value": value})

    def end_progress(self, token: str | None, message: str | None = None) -> None:
        if token is not None:
            value: dict[str, Any] = {"kind": "end"}
            if message is not None:
                value["message"] = message
            self.notify("$/progress", {"token": token, "value": value})

    # ------------------------------------------------------------------ the core

    def setup(self, init_options: Any, experimental: Any) -> list[str]:
        """`initialize`: resolve the client's options, open the registry; the problems found."""
        opts, problems = resolve(init_options, self.options)
        self.settings = opts
        if self.registry is None:
            self.registry = self.open_registry(opts)
        self.client_tools = declared_tools(experimental)
        return problems

    async def core(self, fn: Callable[..., Any], *args: Any, priority: int = REQUEST) -> Any:
        """Run a core call on the worker thread, mapping core errors to the contract's
        (`priority=BACKGROUND`: bulk work that any request queued meanwhile goes before)."""
        try:
            return await asyncio.wrap_future(self.worker.submit_at(priority, fn, *args))
        except live_errors.SessionNotFound as e:
            raise errors.SessionNotFound(str(e)) from None
        except live_errors.EntryNotFound as e:
            raise errors.EntryNotFound(str(e)) from None
        except live_errors.OutsideRoots as e:
            raise errors.OutsideRoots(str(e)) from None
        except live_errors.Refused as e:
            raise errors.InvalidParams(str(e)) from None
        except OSError as e:
            raise errors.WriteFailed(f"{e.strerror or e}") from None
        except errors.PiError:
            raise
        except Exception as e:  # never a traceback to the client
            # imported here: the writer imports the whole index, which a listing does not need
            from pi_server.store.writer import WriteFailed as CoreWriteFailed

            if isinstance(e, CoreWriteFailed):
                raise errors.WriteFailed(str(e)) from None
            log.exception("internal error")
            raise errors.Internal(f"internal error: {type(e).__name__}") from None

    async def core_steps(self, steps: Callable[..., Generator[None, None, Any]], *args: Any) -> Any:
        """Run a generator on the worker one step at a time: requests queued meanwhile run
        between its steps, so one slow call (a searched listing) never holds the worker.
        The same call asked again while one runs shares its answer (clients polling a
        searched listing cost one scan, not one each)."""
        key = (steps, args)
        running = self._running_steps.get(key)
        if running is None:
            running = self._running_steps[key] = asyncio.ensure_future(self._run_steps(steps, *args))
            running.add_done_callback(lambda _f: self._running_steps.pop(key, None))
        return await asyncio.shield(running)

    async def _run_steps(self, steps: Callable[..., Generator[None, None, Any]], *args: Any) -> Any:
        gen = steps(*args)

        def step() -> tuple[bool, Any]:
            try:
                next(gen)
            except StopIteration as stop:
                return True, stop.value
            return False, None

        while True:
            done, value = await self.core(step, priority=BACKGROUND)
            if done:
                return value

    def token_ok(self, token: Any) -> bool:
        """The client's token against ours, in constant time (no token configured: anyone)."""
        if self.options.token is None:
            return True
        if not isinstance(token, str):
            return False
        return hmac.compare_digest(token.encode(), self.options.token.encode())

    def open_registry(self, opts: Options) -> Registry:
        """The core this client works on (over TCP: one shared core from the server's own flags)."""
        return build_registry(opts)

    def start_background(self) -> None:
        """Indexing, watching and queue flushing, once the client is initialized."""
        from pi_server.server import background  # it starts the watcher: loaded when used

        background.start(self)

    def start_watching(self) -> None:
        """`start_background` without the indexing (see `start_indexing`)."""
        from pi_server.server import background

        background.start_watching(self)

    def start_indexing(self) -> None:
        from pi_server.server import background

        background.start_indexing(self)

    async def shutdown_core(self) -> None:
        """`shutdown`: stop the background work and save every changed index."""
        self.stop.set()
        for t in self.tasks:
            t.cancel()
        if self.registry is not None:
            await self.core(self.registry.save_all)


def declared_tools(experimental: Any) -> list[str]:
    """The tools a client runs for us: `experimental.piTools.tools` in its initialize capabilities."""
    from pi_server.agent.tooldefs import CLIENT_TOOLS

    pt = experimental.get("piTools") if isinstance(experimental, dict) else None
    names = pt.get("tools") if isinstance(pt, dict) else None
    return [n for n in CLIENT_TOOLS if isinstance(names, list) and n in names]


def build_registry(opts: Options) -> Registry:
    from pi_server.server import offcore

    roots, _samples = resolve_roots(opts.session_dirs)
    registry = Registry(
        roots=roots,
        state=StateDir(opts.state_dir),
        busy_timeout=opts.busy_timeout,
        max_live_entries=opts.max_live_entries,
    )
    registry.save_dropped = offcore.dropped_saver(registry)
    return registry
