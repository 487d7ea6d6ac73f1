"""Answers encoded once, by msgspec, straight to the bytes on the wire.

pygls sends a result by walking it with its cattrs converter and then
`json.dumps`: for a plain-data answer that is ~18 ms for a 200-row `/tree`
window and ~0.4 s for a 4,000-message context, against ~0.2 ms and ~23 ms for
`msgspec.json.encode`. Our `pi/*` handlers return an `Encoded` answer and the
protocol writes it as it is; everything else (LSP features, errors) keeps
pygls's path.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import msgspec

from pi_server.server import memory
from pi_server.store.decode import jdumps

log = logging.getLogger("pi_server")
_encode = msgspec.json.Encoder().encode


STEP = 4096  # list items encoded per piece by `encode_steps`: ~1-4 ms each


class Encoded:
    """A JSON-RPC result already encoded to JSON, as bytes in one or more pieces."""

    __slots__ = ("parts", "size")

    def __init__(self, data: bytes | list[bytes]) -> None:
        self.parts = [data] if isinstance(data, bytes) else data
        self.size = sum(map(len, self.parts))

    @property
    def data(self) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


def _bytes(value: Any) -> bytes:
    try:
        return _encode(value)
    except UnicodeEncodeError:
        # a lone surrogate (pi cuts strings in UTF-16 units): escaped as \udXXX, as JS writes it
        return jdumps(msgspec.to_builtins(value, builtin_types=(msgspec.Raw,)))


def encode(result: Any) -> Encoded:
    """Plain data or msgspec Structs (as `msgspec.to_builtins` would give them) to bytes."""
    if type(result) is Encoded:
        return result  # encoded where it was made (off the event loop)
    return Encoded(_bytes(result))


def encode_steps(result: Any) -> Encoded:
    """`encode` in pieces of at most STEP list items, for an answer of a million messages: one
    encoder call over all of it holds the interpreter lock for most of a second (every other
    thread, the one answering requests among them, waiting), and joining the pieces would
    copy it all once more. The pieces go to the wire as they are."""
    parts: list[bytes] = []
    _steps(result, parts)
    return Encoded(parts)


def _steps(value: Any, parts: list[bytes]) -> None:
    if type(value) is dict and value:
        sep = b"{"
        for k, v in value.items():
            parts.append(sep + _bytes(k) + b":")
            _steps(v, parts)
            sep = b","
        parts.append(b"}")
    elif type(value) is list and len(value) > STEP:
        parts.append(b"[")
        for start in range(0, len(value), STEP):
            if start:
                parts.append(b",")
            parts.append(_bytes(value[start : start + STEP])[1:-1])  # its own brackets dropped
        parts.append(b"]")
    else:
        parts.append(_bytes(value))


def frame(msg_id: Any, result: Encoded, include_headers: bool = True) -> bytes:
    """The whole response message: header (Content-Length in bytes) and body."""
    return b"".join(frame_parts(msg_id, result, include_headers))


def frame_parts(msg_id: Any, result: Encoded, include_headers: bool = True) -> list[bytes]:
    """The response message in pieces, the answer's bytes among them as they are (a context
    answer can be tens of megabytes: joining would copy it twice)."""
    start = b'{"id":' + _encode(msg_id) + b',"jsonrpc":"2.0","result":'
    parts = [start, *result.parts, b"}"]
    if include_headers:
        size = len(start) + result.size + 1
        parts.insert(0, b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % size)
    return parts


class EncodedResults:
    """Protocol mixin: an `Encoded` result goes out as bytes, without pygls's converter."""

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is not None or not isinstance(result, Encoded):
            super()._send_response(msg_id, result, error)  # type: ignore[misc]
            return
        self._result_types.pop(msg_id, None)  # type: ignore[attr-defined]
        writer = self.writer  # type: ignore[attr-defined]
        if writer is None:
            log.error("unable to send an answer: no transport")
            return
        try:
            write_parts = getattr(writer, "write_parts", None)
            if write_parts is not None:  # a connection that takes one message in pieces (server/outbound.py)
                write_parts(frame_parts(msg_id, result, self._include_headers))  # type: ignore[attr-defined]
            elif inspect.isawaitable(res := writer.write(frame(msg_id, result, self._include_headers))):  # type: ignore[attr-defined]
                asyncio.ensure_future(res)
            memory.after_answer(result.size)  # a long-running daemon gives a large answer's memory back
        except BrokenPipeError:
            raise
        except Exception as e:
            log.exception("error sending an answer")
            self._server._report_server_error(e, RuntimeError)  # type: ignore[attr-defined]
