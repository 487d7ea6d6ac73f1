"""TCP transport: every connection has its own protocol and proves the token itself.

pygls's own TCP server shares one protocol (and one writer) among all
connections, so one authenticated client would open the door for every local
process. Here each connection gets its own server object (own protocol, own
`authorized` flag, own writer) over one shared core: one registry built from
the server's flags, one worker thread, one set of background tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types as lsp

from pi_server.live.registry import Registry
from pi_server.server.app import PiServer, ServerOptions, create_server
from pi_server.server.base import build_registry
from pi_server.server.livepi import LivePis
from pi_server.server.logonce import Repeated, quiet_loop_errors
from pi_server.server.methods import live
from pi_server.server.options import Options, resolve
from pi_server.server.outbound import Outbound

log = logging.getLogger("pi_server")

PRE_AUTH_MAX_FRAME = 1 << 20  # an `initialize` is a few KB; nothing bigger is buffered for a stranger
MAX_FRAME = 256 << 20  # authenticated clients (prompt images are base64)
MAX_HEADER_LINES = 16
AUTH_TIMEOUT = 10.0  # seconds a connection may stay open without authenticating
# connections not yet authenticated, at most (a quarter of RLIMIT_NOFILE when that is lower):
# past it the one waiting longest is closed, so strangers cannot take the descriptors (or the
# memory) authenticated clients need, and a real client (which authenticates at once) gets in
MAX_STRANGERS = 64
LINGER_SECONDS = 1.0
PROGRESS_TIMEOUT = 5.0  # seconds a client may take to accept a progress token
LINE_LIMIT = 8192  # longest header line
# what every authenticated client hears: changes to the files, not replies to someone's request
BROADCAST = frozenset({"pi/sessionUpdated", "pi/sessionsChanged", "pi/savePoint"})


class BadFrame(Exception):
    """Not a JSON-RPC frame we accept: the connection is dropped."""


class Hub:
    """The core all connections share, and the list of who is connected."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.connections: set[Connection] = set()
        self.live = LivePis()  # before the root: every connection shares it
        # runs the background work; never connected, its notifications go to everyone
        self.root = Connection(options, self)
        self.root.protocol.client_capabilities = lsp.ClientCapabilities()
        self.worker = self.root.worker
        self.registry: Registry = build_registry(resolve(None, options)[0])
        self.root.registry = self.registry
        self.started = False
        # connections open and not (yet) authenticated, oldest first
        self.strangers: dict[asyncio.StreamWriter, None] = {}
        self.max_strangers = stranger_cap()
        self.repeated = Repeated()

    def connect(self) -> Connection:
        conn = create_server(self.options, lambda o: Connection(o, self))
        assert isinstance(conn, Connection)
        self.connections.add(conn)
        return conn

    def disconnect(self, conn: Connection) -> None:
        self.connections.discard(conn)
        live.let_go(conn)  # the session its pi held (if any) is a file again
        for t in conn.tasks:  # its turns: nobody is left to answer their tool requests
            t.cancel()

    def start_background(self) -> None:
        if not self.started:
            self.started = True
            self.root.start_background()

    def broadcast(self, method: str, payload: dict[str, Any]) -> None:
        for conn in list(self.connections):
            if conn.authorized and conn.protocol.writer is not None:
                conn.protocol.notify(method, conn.typed(method, payload))  # an LSP method's params typed


class Connection(PiServer):
    """One TCP client: its own protocol and authorization, the hub's core."""

    def __init__(self, options: ServerOptions, hub: Hub) -> None:
        super().__init__(options)
        self.hub = hub
        self.fanout: dict[str, list[tuple[Connection, str]]] = {}  # the root's progress tokens
        self.live_pis = hub.live
        if hasattr(hub, "worker"):  # the root made the worker every other connection shares
            self.worker.shutdown(wait=False)
            self.worker = hub.worker

    def open_registry(self, opts: Options) -> Registry:
        # the server's own flags rule: a client cannot widen the roots or pick the state dir
        return self.hub.registry

    def start_background(self) -> None:
        if self is self.hub.root:
            super().start_background()
        else:
            self.hub.start_background()

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        if method in BROADCAST or self is self.hub.root:  # the root's own news is everyone's
            self.hub.broadcast(method, payload)
        elif self.protocol.writer is not None:
            self.protocol.notify(method, self.typed(method, payload))

    async def begin_progress(self, title: str, message: str | None = None, percentage: int | None = None) -> str | None:
        """The root's progress (the store's indexing) is shown by every client that takes
        progress, each under its own token."""
        if self is not self.hub.root:
            return await super().begin_progress(title, message, percentage)
        clients = [c for c in self.hub.connections if c.authorized and c.protocol.writer is not None]
        tokens = await asyncio.gather(*(_progress_of(c, title, message, percentage) for c in clients))
        shown = [(c, t) for c, t in zip(clients, tokens, strict=True) if t is not None]
        if not shown:
            return None
        token = f"fanout-{id(shown)}"
        self.fanout[token] = shown
        return token

    def report_progress(self, token: str | None, message: str, percentage: int | None = None) -> None:
        for conn, t in self.fanout.get(token or "", []):
            conn.report_progress(t, message, percentage)
        if self is not self.hub.root:
            super().report_progress(token, message, percentage)

    def end_progress(self, token: str | None, message: str | None = None) -> None:
        for conn, t in self.fanout.pop(token or "", []):
            conn.end_progress(t, message)
        if self is not self.hub.root:
            super().end_progress(token, message)

    def refuse(self) -> None:
        writer = self.protocol.writer
        if writer is not None:
            writer.close()


async def _progress_of(conn: Connection, title: str, message: str | None, percentage: int | None) -> str | None:
    """One client's progress token; a client slow to accept it goes without (the work never waits)."""
    try:
        return await asyncio.wait_for(conn.begin_progress(title, message, percentage), PROGRESS_TIMEOUT)
    except TimeoutError:
        return None


async def read_frame(reader: asyncio.StreamReader, max_len: int) -> bytes | None:
    """One `Content-Length` framed body; None at a clean end of stream."""
    length = None
    for i in range(MAX_HEADER_LINES + 1):
        line = await reader.readline()
        if not line:
            if i == 0:
                return None
            raise BadFrame("end of stream inside headers")
        if line in (b"\r\n", b"\n"):
            break
        name, sep, value = line.partition(b":")
        if not sep:
            raise BadFrame("not a header line")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise BadFrame("bad Content-Length") from None
    else:
        raise BadFrame("too many header lines")
    if length is None or length < 0 or length > max_len:
        raise BadFrame(f"frame of {length} bytes refused")
    return await reader.readexactly(length)


def _send(writer: asyncio.StreamWriter, obj: dict[str, Any]) -> None:
    body = json.dumps(obj).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


async def authenticate(hub: Hub, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Connection | None:
    """The first frame must be an `initialize` with the right token; it is then handed to pygls
    on a new connection (a stranger costs no server object)."""
    body = await asyncio.wait_for(read_frame(reader, PRE_AUTH_MAX_FRAME), AUTH_TIMEOUT)
    if body is None:
        return None
    try:
        msg = json.loads(body)
    except ValueError:
        raise BadFrame("not JSON") from None
    if not isinstance(msg, dict):
        raise BadFrame("not a JSON-RPC message")
    if msg.get("method") != "initialize" or "id" not in msg:
        if "id" in msg and "method" in msg:
            _send(writer, _error(msg["id"], -32002, "server not initialized: send initialize with the token first"))
        log.warning("client refused: %s before initialize", msg.get("method"))
        return None
    p = msg.get("params")
    opts = p.get("initializationOptions") if isinstance(p, dict) else None
    token = opts.get("token") if isinstance(opts, dict) else None
    if not hub.root.token_ok(token):
        log.warning("client refused: %s token", "wrong" if token is not None else "no")
        _send(writer, _error(msg["id"], -32602, "invalid token"))
        return None
    conn = hub.connect()
    try:
        message = json.loads(body, object_hook=conn.protocol.structure_message)
    except Exception:
        hub.disconnect(conn)
        _send(writer, _error(msg["id"], -32602, "invalid params: not InitializeParams"))
        return None
    attach(conn, writer)
    conn.protocol.handle_message(message)
    return conn


def attach(conn: Connection, writer: asyncio.StreamWriter) -> None:
    """An admitted client: its protocol writes to the connection from now on (TCP after the
    token, the daemon's Unix socket after the peer's uid)."""
    conn.authorized = True
    conn.protocol.set_writer(Outbound(writer))  # type: ignore[arg-type]


async def _serve_authenticated(conn: Connection, reader: asyncio.StreamReader) -> None:
    proto = conn.protocol
    out = proto.writer
    assert isinstance(out, Outbound)
    while True:
        await out.ready()  # a client that does not read its replies is not read from either
        body = await read_frame(reader, MAX_FRAME)
        if body is None:
            return
        try:
            message = json.loads(body, object_hook=proto.structure_message)
        except Exception:
            log.warning("dropped a message that is not JSON-RPC")
            continue
        if getattr(message, "method", None) == "exit":
            return  # pygls would end the whole process; here only this connection ends
        try:
            proto.handle_message(message)
        except Exception:
            log.exception("unable to handle a message")
        if getattr(message, "method", None) and getattr(message, "id", None) is not None:
            out.track(proto._request_futures.get(message.id))


def stranger_cap() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(MAX_STRANGERS, soft // 4)) if soft != resource.RLIM_INFINITY else MAX_STRANGERS


Admit = Callable[[Hub, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[Connection | None]]


async def handle_connection(
    hub: Hub, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, admit: Admit | None = None
) -> None:
    """One client from admission (the token over TCP, the peer's uid over the daemon's socket)
    to its end; its failures end it alone."""
    if len(hub.strangers) >= hub.max_strangers:
        hub.repeated.warning("strangers", "client dropped: %d connections waiting to authenticate", len(hub.strangers))
        oldest = next(iter(hub.strangers))
        del hub.strangers[oldest]
        oldest.transport.abort()  # its descriptor back now
    hub.strangers[writer] = None
    conn = None
    try:
        conn = await (admit or authenticate)(hub, reader, writer)
        if conn is not None:
            hub.strangers.pop(writer, None)
            await _serve_authenticated(conn, reader)
        else:
            await _linger(reader, writer)
    except (TimeoutError, BadFrame, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
        log.warning("client dropped: %s", e or type(e).__name__)
        await _linger(reader, writer)
    except ConnectionError:
        pass
    finally:
        hub.strangers.pop(writer, None)
        if conn is not None:
            conn.protocol.writer = None
            hub.disconnect(conn)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close, then discard what the refused client still sends (briefly), so it reads
    our refusal and an end of stream rather than a reset."""
    with contextlib.suppress(Exception):
        await writer.drain()
        writer.write_eof()
        async with asyncio.timeout(LINGER_SECONDS):
            for _ in range(16):
                if not await reader.read(4096):
                    break


async def _run(options: ServerOptions, host: str, port: int) -> None:
    hub = Hub(options)
    quiet_loop_errors(asyncio.get_running_loop(), hub.repeated)
    try:
        server = await asyncio.start_server(
            lambda r, w: handle_connection(hub, r, w), host, port, limit=LINE_LIMIT, reuse_address=True
        )
    except OSError as e:
        raise ListenError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    bound = server.sockets[0].getsockname()[1]
    print(f"pi-server: listening on {host}:{bound}", file=sys.stderr, flush=True)
    log.info("listening on %s:%d", host, bound)
    async with server:
        await server.serve_forever()


class ListenError(Exception):
    """The port cannot be bound (in use, or not ours to take)."""


def serve_tcp(options: ServerOptions, host: str, port: int) -> None:
    """Serve until interrupted (bad clients are dropped, never the server)."""
    asyncio.run(_run(options, host, port))
