"""The pygls server: LSP features and `pi/*` over every transport (daemon, TCP, stdio).

The state and the core calls are `host.Host`'s; this class adds what pygls does: typed LSP messages, the workspace of open
documents, and the connection services (`notify`, `request`, progress) over
pygls's protocol.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from typing import Any

import orjson
from lsprotocol import converters
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInternalError, JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from pi_server import __version__
from pi_server.server import errors
from pi_server.server.host import Host, ServerOptions, build_registry
from pi_server.server.rpc import PI_METHODS
from pi_server.server.wire import EncodedResults

log = logging.getLogger("pi_server")


__all__ = ["PiProtocol", "PiServer", "ServerOptions", "build_registry", "converter_factory"]


def _plain_params(obj: dict[str, Any], cls: type) -> Any:
    # only messages pygls has no type for (our pi/* methods) come here: their params
    # stay plain dicts, validated by msgspec in the handlers (server/rpc.py)
    return cls(**obj)


def _shallow_response(msg: Any) -> dict[str, Any]:
    # results are sent as they are: json.dumps unstructures any lsprotocol object inside them
    # (pygls passes its own hook as `default`), so large plain answers (20,000 tree rows or
    # symbols) are not copied dict by dict first
    return {"id": msg.id, "jsonrpc": msg.jsonrpc, "result": msg.result}


@functools.cache
def converter_factory() -> Any:
    """One converter for every connection of the process: cattrs generates (and compiles) a
    (un)structuring function per lsprotocol class the first time a converter meets it, which
    for an `initialize` is ~20 ms; a converter per connection paid that on every connect.
    Nothing registers hooks on it after this, so connections can share it."""
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

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Our errors (`errors.PiError`) as the contract's error
        answer; pygls would report anything that is not its own exception as internal."""
        exc = None if future.cancelled() else future.exception()
        if isinstance(exc, errors.PiError):
            self._request_futures.pop(msg_id, None)
            self._send_response(msg_id, error=lsp.ResponseError(code=exc.code, message=exc.message, data=exc.data))
            return
        super()._send_handler_result(future, msg_id=msg_id)

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"piSessions": {"protocolVersion": 1, "methods": list(PI_METHODS)}}
        return result


class PiServer(Host, LanguageServer):
    def __init__(self, options: ServerOptions) -> None:
        super().__init__(
            "pi-server",
            __version__,
            protocol_cls=PiProtocol,
            converter_factory=converter_factory,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
        )
        self.init_host(options)

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        """Send a notification (the TCP transport routes file notifications to every client)."""
        self.protocol.notify(method, self.typed(method, payload))

    def typed(self, method: str, params: Any) -> Any:
        """An LSP method's params as their lsprotocol type, which pygls sends them through
        (a `pi/*` method's stay plain)."""
        types = lsp.METHOD_TO_TYPES.get(method)
        if types is not None and types[2] is not None and isinstance(params, dict):
            return self.protocol._converter.structure(params, types[2])
        return params

    async def request(self, method: str, params: Any) -> Any:
        reply = await self.protocol.send_request_async(method, self.typed(method, params))
        if reply is None or isinstance(reply, dict | list | str | int | float | bool):
            return reply
        return getattr(reply, "__dict__", reply)  # pygls may hand back an attrs object

    def supports_progress(self) -> bool:
        caps = self.client_capabilities.window
        return bool(caps is not None and caps.work_done_progress)

    def refuse(self) -> None:
        """Drop a client that failed the token check (the server serves one client)."""
        writer = getattr(self.protocol, "writer", None)
        close = getattr(writer, "close", None)
        if close is not None:
            close()
        self.stop.set()
        self.shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, JsonRpcMethodNotFound):
            # a client asking what this server does not offer is the client's business
            log.debug("%s", error)
        elif not isinstance(error, errors.PiError):
            log.error("%s", error)
