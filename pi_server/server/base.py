"""The pygls server object: options, the worker thread and the mapping of core errors.

Core work runs on one worker thread (indexes are never shared between
threads), so the event loop only reads and writes messages; long calls run
in steps (`core_steps`) so requests queued meanwhile run between them.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import converters
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from pi_server import __version__
from pi_server.live import errors as live_errors
from pi_server.live.registry import Registry
from pi_server.server import background, errors
from pi_server.server.options import Options
from pi_server.server.rpc import PI_METHODS
from pi_server.server.wire import EncodedResults
from pi_server.store.discovery import resolve_roots
from pi_server.store.state import StateDir
from pi_server.store.writer import WriteFailed as CoreWriteFailed

log = logging.getLogger("pi_server")


@dataclass
class ServerOptions:
    session_dirs: list[str] = field(default_factory=list)
    state_dir: str | None = None
    token: str | None = None  # required in initializationOptions when set (TCP)
    busy_timeout: float = 120.0
    max_live_entries: int = 100_000
    watch: bool = True


def _plain_params(obj: dict[str, Any], cls: type) -> Any:
    # only messages pygls has no type for (our pi/* methods) come here: their params
    # stay plain dicts, validated by pydantic in the handlers
    return cls(**obj)


def converter_factory() -> Any:
    conv = converters.get_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, _plain_params)
    return conv


class PiProtocol(EncodedResults, LanguageServerProtocol):
    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"piSessions": {"protocolVersion": 1, "methods": list(PI_METHODS)}}
        return result


class PiServer(LanguageServer):
    def __init__(self, options: ServerOptions) -> None:
        super().__init__(
            "pi-server",
            __version__,
            protocol_cls=PiProtocol,
            converter_factory=converter_factory,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
        )
        self.options = options  # the command line's
        self.settings = Options()  # resolved in initialize
        self.registry: Registry | None = None
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-core")
        self.tasks: list[asyncio.Task] = []
        self.stop = asyncio.Event()
        self.authorized = options.token is None
        self.client_tools: list[str] = []  # from the client's experimental.piTools

    async def core(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a core call on the worker thread, mapping core errors to the contract's."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.worker, fn, *args)
        except live_errors.SessionNotFound as e:
            raise errors.SessionNotFound(str(e)) from None
        except live_errors.EntryNotFound as e:
            raise errors.EntryNotFound(str(e)) from None
        except live_errors.OutsideRoots as e:
            raise errors.OutsideRoots(str(e)) from None
        except live_errors.Refused as e:
            raise errors.InvalidParams(str(e)) from None
        except CoreWriteFailed as e:
            raise errors.WriteFailed(str(e)) from None
        except OSError as e:
            raise errors.WriteFailed(f"{e.strerror or e}") from None
        except errors.PiError:
            raise
        except Exception as e:  # never a traceback to the client
            log.exception("internal error")
            raise errors.Internal(f"internal error: {type(e).__name__}") from None

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
        background.start(self)

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        """Send a notification (the TCP transport routes file notifications to every client)."""
        self.protocol.notify(method, payload)

    async def core_steps(self, steps: Callable[..., Generator[None, None, Any]], *args: Any) -> Any:
        """Run a generator on the worker one step at a time: requests queued meanwhile run
        between its steps, so one slow call (a searched listing) never holds the worker."""
        gen = steps(*args)

        def step() -> tuple[bool, Any]:
            try:
                next(gen)
            except StopIteration as stop:
                return True, stop.value
            return False, None

        while True:
            done, value = await self.core(step)
            if done:
                return value

    def refuse(self) -> None:
        """Drop a client that failed the token check (the server serves one client)."""
        writer = getattr(self.protocol, "writer", None)
        close = getattr(writer, "close", None)
        if close is not None:
            close()
        self.stop.set()
        self.shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if not isinstance(error, errors.PiError):
            log.error("%s", error)


def build_registry(opts: Options) -> Registry:
    roots, _samples = resolve_roots(opts.session_dirs)
    return Registry(
        roots=roots,
        state=StateDir(opts.state_dir),
        busy_timeout=opts.busy_timeout,
        max_live_entries=opts.max_live_entries,
    )
