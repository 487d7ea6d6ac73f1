"""The pygls server: maps each JSON-RPC method to a core call.

Core work runs on one worker thread (indexes are never shared between
threads), so the event loop only reads and writes messages.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lsprotocol import converters
from lsprotocol import types as lsp
from pydantic import BaseModel, ValidationError
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from pi_server import __version__
from pi_server.live import sessions as live_errors
from pi_server.live.sessions import Registry
from pi_server.live.state import StateDir, default_state_dir
from pi_server.live.writer import WriteFailed as CoreWriteFailed
from pi_server.server import errors, params
from pi_server.store.discovery import resolve_roots

log = logging.getLogger("pi_server")
P = TypeVar("P", bound=BaseModel)

METHODS = [
    "pi/listSessions",
    "pi/getTree",
    "pi/getEntry",
    "pi/buildContext",
    "pi/switchBranch",
    "pi/summarizeBranch",
    "pi/setLabel",
    "pi/setSessionName",
    "pi/fork",
    "pi/compact",
    "pi/prompt",
    "pi/abort",
    "pi/setModel",
    "pi/setThinkingLevel",
]


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


class PiProtocol(LanguageServerProtocol):
    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"piSessions": {"protocolVersion": 1, "methods": METHODS}}
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
        self.options = options
        self.registry: Registry | None = None
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-core")
        self.tasks: list[asyncio.Task] = []
        self.stop = asyncio.Event()
        self.authorized = options.token is None
        self.summary_options: params.SummaryOptions | None = None
        self.agent_options: params.AgentOptions | None = None
        self.client_tools: list[str] = []  # from the client's experimental.piTools
        self.turns: dict[str, Any] = {}  # session path -> its running Turn

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

    def open_registry(self, init: params.InitOptions) -> Registry:
        """The core this client works on (over TCP, one shared core from the server's flags)."""
        return setup_registry(self, init)

    def start_background(self) -> None:
        """Indexing, watching and queue flushing, once the client is initialized."""
        from pi_server.server import background

        self.tasks.append(asyncio.ensure_future(background.initial_index(self)))
        if self.options.watch:
            self.tasks.append(asyncio.ensure_future(background.watch_roots(self)))
            self.tasks.append(asyncio.ensure_future(background.pending_timer(self)))

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

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        self.protocol.notify(method, payload)


def parse(model: type[P], raw: Any) -> P:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise errors.InvalidParams("invalid params: expected an object")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise errors.invalid_params(e) from None


def create_server(options: ServerOptions, cls: Callable[[ServerOptions], PiServer] = PiServer) -> PiServer:
    server = cls(options)
    from pi_server.server import documents, handlers

    handlers.register(server)
    documents.register(server)
    return server


def setup_registry(server: PiServer, init: params.InitOptions) -> Registry:
    dirs = init.sessionDirs or server.options.session_dirs or None
    roots, _samples = resolve_roots(dirs)
    state = init.stateDir or server.options.state_dir or default_state_dir()
    busy = init.busyTimeout or server.options.busy_timeout
    return Registry(
        roots=roots,
        state=StateDir(os.path.expanduser(state)),
        busy_timeout=busy,
        max_live_entries=init.maxLiveEntries or server.options.max_live_entries,
    )
