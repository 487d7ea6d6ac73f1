"""The stdio server: `pi/*` served by a lean JSON-RPC loop, LSP handed to pygls when needed.

Editors spend their time in `pi/*` methods, which need nothing from pygls or
lsprotocol: params are validated by our own models and answers are bytes from
msgspec. Importing pygls costs ~0.5 s and ~30 MiB and its message pipeline a few
milliseconds per request, so this loop reads frames itself, runs `pi/*`
handlers on the `Host` it is, and writes their bytes. Everything else (the LSP
features for open `.jsonl` documents, unknown methods) goes to a pygls server
loaded on the first such message (`server/adopted.py`): it shares this host's
registry, worker and background work, is given the `initialize` (and
`initialized`) this loop already handled, and writes through the same output.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import threading
from typing import Any, BinaryIO

import orjson

from pi_server.server import errors, memory, methods, rpc, wire
from pi_server.server.host import Host, ServerOptions
from pi_server.server.quickstart import Early

log = logging.getLogger("pi_server")

# filled as requests arrive: a method's module is imported on its first request (methods.MODULES)
HANDLERS: dict[str, rpc.Handler] = {}
# notifications with nothing to do unless pygls already serves documents
QUIET = frozenset({"$/setTrace", "$/logTrace", "workspace/didChangeConfiguration"})
CHUNK = 1 << 20
# the watcher starts at `initialized` (a change from then on is seen); indexing starts after the
# first answer, or this long after `initialized` without one: its first pass over the store
# would otherwise delay that answer
BACKGROUND_AFTER_S = 0.25


class ClientError(Exception):
    """The client answered one of our requests with an error."""


def parse_frames(buf: bytearray) -> tuple[list[bytes], str | None]:
    """Complete `Content-Length` frames taken off the front of `buf`; a framing error ends the stream."""
    bodies = []
    while True:
        sep = buf.find(b"\r\n\r\n")
        if sep < 0:
            return bodies, None
        length = None
        for line in bytes(buf[:sep]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value) if value.strip().isdigit() else None
        if length is None:
            return bodies, "a frame without a valid Content-Length"
        end = sep + 4 + length
        if len(buf) < end:
            return bodies, None
        bodies.append(bytes(buf[sep + 4 : end]))
        del buf[:end]


def loads(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)  # lone surrogates (\ud83d), which orjson refuses and JSON.parse keeps


def handler(method: str) -> rpc.Handler:
    """The handler of a `pi/*` method, its module imported on the first request for it."""
    found = HANDLERS.get(method)
    if found is None:
        methods.load(method)
        HANDLERS.update(rpc.guarded_methods())
        found = HANDLERS[method]
    return found


class LeanServer(Host):
    """One stdio client: reads frames, serves `pi/*` itself, hands the rest to pygls."""

    def __init__(self, options: ServerOptions, early: Early, out: BinaryIO) -> None:
        self.init_host(options)
        self.early = early
        self.out = out
        self.write_lock = threading.Lock()
        self.done = asyncio.Event()
        self.inflight: dict[Any, asyncio.Task] = {}
        self.pending: dict[str, asyncio.Future] = {}
        self.next_id = 0
        self.client_caps: dict[str, Any] = {}
        self.init_body: bytes | None = None
        self.initialized_body: bytes | None = None
        self.shutting_down = False
        self.delegate: Any = None  # server.adopted.Adopted, once loaded
        self.loading: asyncio.Task | None = None
        self.backlog: list[bytes] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.background_due = False

    # ------------------------------------------------------------------ wire

    def write(self, *parts: bytes) -> None:
        """One whole message (or pygls's, already framed), from any thread."""
        with self.write_lock:
            try:
                for data in parts:
                    self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                log.warning("the client is gone")
                if self.loop is not None:
                    self.loop.call_soon_threadsafe(self.done.set)

    def send(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_message(self, msg: dict[str, Any]) -> None:
        self.send(wire.encode(msg).data)

    def send_error(self, msg_id: Any, error: dict[str, Any]) -> None:
        self.send_message({"jsonrpc": "2.0", "id": msg_id, "error": error})

    # ------------------------------------------------------------------ Host's connection services

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        self.send_message({"jsonrpc": "2.0", "method": method, "params": payload})

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        rid = f"pi-server-{self.next_id}"
        fut = self.pending[rid] = self.loop.create_future()
        self.send_message({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            return await fut
        finally:
            self.pending.pop(rid, None)

    def supports_progress(self) -> bool:
        window = self.client_caps.get("window")
        return isinstance(window, dict) and bool(window.get("workDoneProgress"))

    # ------------------------------------------------------------------ reading

    def read_forever(self, fd: int) -> None:
        """The reader thread: frames off the descriptor, each handed to the loop in order."""
        buf = bytearray(self.early.consumed)
        while True:
            bodies, problem = parse_frames(buf)
            for body in bodies:
                self.loop.call_soon_threadsafe(self.received, body)
            if problem is not None:
                log.error("ending the connection: %s", problem)
                break
            try:
                chunk = os.read(fd, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
        self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.finish()))

    def received(self, body: bytes) -> None:
        """One message from the client, dispatched on the loop."""
        try:
            msg = loads(body)
        except ValueError:
            log.warning("dropped a message that is not JSON")
            return
        if not isinstance(msg, dict):
            log.warning("dropped a message that is not a JSON-RPC object")
            return
        method = msg.get("method")
        if not isinstance(method, str):
            self.response(msg, body)
        elif method in HANDLERS or method in methods.MODULES:
            if "id" in msg and not self.shutting_down:
                self.inflight[msg["id"]] = asyncio.ensure_future(self.serve(msg))
        else:
            self.lifecycle(method, msg, body)

    def lifecycle(self, method: str, msg: dict[str, Any], body: bytes) -> None:
        if method == "initialize":
            self.initialize(msg, body)
        elif method == "initialized":
            if self.registry is not None and self.authorized and self.initialized_body is None:
                self.start_watching()
                self.background_due = True
                self.loop.call_later(BACKGROUND_AFTER_S, self.begin_background)
            self.initialized_body = body  # a pygls loaded later is given it after `initialize`
            if self.delegate is not None:
                self.to_delegate(body)
        elif method == "shutdown":
            self.shutting_down = True
            asyncio.ensure_future(self.shutdown(msg.get("id")))
        elif method == "exit":
            asyncio.ensure_future(self.finish())
        elif method == "$/cancelRequest":
            params = msg.get("params")
            task = self.inflight.get(params.get("id")) if isinstance(params, dict) else None
            if task is not None:
                task.cancel()
            elif self.delegate is not None:
                self.to_delegate(body)
        elif method in QUIET and self.delegate is None and self.loading is None:
            return
        else:
            self.to_delegate(body)

    def response(self, msg: dict[str, Any], body: bytes) -> None:
        fut = self.pending.get(msg.get("id"))  # type: ignore[arg-type]
        if fut is None:
            if self.delegate is not None or self.loading is not None:
                self.to_delegate(body)  # an answer to pygls's own request
            return
        if fut.done():
            return
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            fut.set_exception(ClientError(f"{err.get('code')}: {err.get('message')}"))
        else:
            fut.set_result(msg.get("result"))

    # ------------------------------------------------------------------ methods

    async def serve(self, msg: dict[str, Any]) -> None:
        msg_id = msg["id"]
        try:
            result = await handler(msg["method"])(self, msg.get("params"))
        except errors.PiError as e:
            self.send_error(msg_id, e.error())
        except asyncio.CancelledError:
            self.send_error(msg_id, {"code": -32800, "message": f'Request with id "{msg_id}" is canceled'})
        except Exception as e:  # a bug answers an error, never ends the loop
            log.exception("internal error in %s", msg["method"])
            self.send_error(msg_id, errors.Internal(f"internal error: {type(e).__name__}").error())
        else:
            self.write(*wire.frame_parts(msg_id, result))
            memory.after_answer(len(result.data))
        finally:
            self.inflight.pop(msg_id, None)
            self.begin_background()

    def begin_background(self) -> None:
        """Start the background indexing once (see BACKGROUND_AFTER_S)."""
        if self.background_due and not self.shutting_down:
            self.background_due = False
            self.start_indexing()

    def initialize(self, msg: dict[str, Any], body: bytes) -> None:
        """Options and registry here; the reply went out before pygls (quickstart), or comes
        from pygls now (a client set-up not seen before), which records it for next time."""
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        caps = params.get("capabilities")
        self.client_caps = caps if isinstance(caps, dict) else {}
        self.init_body = body
        for problem in self.setup(params.get("initializationOptions"), self.client_caps.get("experimental")):
            log.warning("%s", problem)
            self.notify("window/showMessage", {"type": 2, "message": f"pi-server: {problem}"})
        answered = self.early.sent is not None and msg.get("id") == self.early.msg_id
        if self.delegate is not None:  # loaded by a message sent before `initialize`
            self.to_delegate(body)
        elif not answered:
            self.ensure_delegate()

    async def shutdown(self, msg_id: Any) -> None:
        try:
            await self.shutdown_core()
        finally:
            if msg_id is not None:
                self.send_message({"jsonrpc": "2.0", "id": msg_id, "result": None})

    # ------------------------------------------------------------------ pygls, when needed

    def ensure_delegate(self) -> None:
        if self.delegate is None and self.loading is None:
            self.loading = asyncio.ensure_future(self.load_delegate())

    def to_delegate(self, body: bytes) -> None:
        """Hand a message to pygls, in order; the first one loads it."""
        if self.delegate is not None and not self.backlog:
            self.delegate.feed(body)
            return
        self.backlog.append(body)
        self.ensure_delegate()

    async def load_delegate(self) -> None:
        log.info("loading pygls for the LSP features")
        # imported off the loop's thread: `pi/*` requests keep being answered meanwhile
        module = await self.loop.run_in_executor(None, importlib.import_module, "pi_server.server.adopted")
        delegate = module.adopt(self)
        for body in (self.init_body, self.initialized_body):
            if body is not None:
                delegate.feed(body)
        while self.backlog:
            delegate.feed(self.backlog.pop(0))
        self.delegate = delegate
        self.loading = None

    # ------------------------------------------------------------------ running

    async def finish(self) -> None:
        """End after what pygls was handed is handled (pygls answers in order: an `initialize`
        it is answering goes out before the `exit` that follows it)."""
        if self.loading is not None:
            await self.loading
        self.done.set()

    async def run(self, fd: int) -> None:
        self.loop = asyncio.get_running_loop()
        threading.Thread(target=self.read_forever, args=(fd,), name="pi-stdin", daemon=True).start()
        await self.done.wait()


def serve_stdio(options: ServerOptions, early: Early, out: BinaryIO, fd: int = 0) -> None:
    """Serve one client on stdio until `exit` or the end of its stream."""
    server = LeanServer(options, early, out)
    try:
        asyncio.run(server.run(fd))
    except KeyboardInterrupt:
        pass
    finally:
        server.stop.set()
        server.worker.shutdown(wait=False, cancel_futures=True)
