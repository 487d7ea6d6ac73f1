"""The pygls server object: options, the worker thread and the mapping of core errors.

Core work runs on one worker thread (indexes are never shared between
threads), so the event loop only reads and writes messages; long calls run
in steps (`core_steps`) at background priority, so a request queued meanwhile
runs before their next step (`worker.CoreWorker`).
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import orjson
from lsprotocol import converters
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInternalError
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
from pi_server.server.worker import BACKGROUND, REQUEST, CoreWorker
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


def _shallow_response(msg: Any) -> dict[str, Any]:
    # results are sent as they are: json.dumps unstructures any lsprotocol object inside them
    # (pygls passes its own hook as `default`), so large plain answers (20,000 tree rows or
    # symbols) are not copied dict by dict first
    return {"id": msg.id, "jsonrpc": msg.jsonrpc, "result": msg.result}


def converter_factory() -> Any:
    conv = converters.get_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, _plain_params)
    for cls in (JsonRPCResponseMessage, lsp.DocumentSymbolResponse):
        conv.register_unstructure_hook(cls, _shallow_response)
    return conv


class PiProtocol(EncodedResults, LanguageServerProtocol):
    """`pi/*` answers go out pre-encoded by msgspec (server/wire.py); everything else pygls
    sends through `_send_data` below."""

    def _send_data(self, data: Any) -> None:
        """Messages encoded with orjson (a 20,000-symbol outline: ~10x faster than the json
        module); what orjson refuses (lone surrogates, nesting over 254, huge ints) goes the
        json module's way."""
        writer = self.writer
        if not data or writer is None:
            return super()._send_data(data)
        try:
            body = orjson.dumps(data, default=self._serialize_message)
        except TypeError:
            return super()._send_data(data)
        head = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        try:
            res = writer.write(head.encode() + body if self._include_headers else body)
            if inspect.isawaitable(res):
                asyncio.ensure_future(res)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

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
        self.worker = CoreWorker()
        # the event loop (reading requests, writing answers) takes the GIL back from a busy
        # core worker within 1 ms instead of CPython's 5 ms: a tail latency of each request
        sys.setswitchinterval(0.001)
        self._running_steps: dict[Any, asyncio.Future] = {}
        self.tasks: list[asyncio.Task] = []
        self.stop = asyncio.Event()
        self.authorized = options.token is None
        self.client_tools: list[str] = []  # from the client's experimental.piTools

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
