"""`pi-server daemon`: one long-running server per user and configuration, on a Unix socket.

Every connection is its own LSP client, served as TCP connections are
(`server/tcp.py`: its own pygls protocol over the hub's one registry, worker
and background work), without the token: the socket's folder is 0700, the
socket 0600, and each peer's uid is checked against ours before a byte is read.
A connection starts with one greeting line (`rendezvous`): `lsp` (then LSP
frames), `status` or `stop`. With no client for `idle_exit` seconds the daemon
saves its indexes and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from pi_server import __version__, rendezvous
from pi_server.live.registry import Registry
from pi_server.server import offcore
from pi_server.server.host import ServerOptions
from pi_server.server.tcp import LINE_LIMIT, Connection, Hub, attach, handle_connection

log = logging.getLogger("pi_server")

GREETING_TIMEOUT = 10.0


@dataclass
class Daemon:
    hub: Hub
    key: str
    sock_path: str
    pid_file: str
    idle_exit: float
    log_path: str
    started: float = field(default_factory=time.time)
    idle_since: float = field(default_factory=time.monotonic)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    saved: asyncio.Event = field(default_factory=asyncio.Event)  # set once the indexes are saved on exit

    def status(self) -> dict[str, Any]:
        reg = self.hub.registry
        return {
            "pid": os.getpid(),
            "version": __version__,
            "socket": self.sock_path,
            "key": self.key,
            "uptime": round(time.time() - self.started, 3),
            "clients": len(self.hub.connections),
            "sessionsIndexed": len(reg.sessions),
            "rss": rss_bytes(),
            "roots": list(reg.roots),
            "stateDir": str(reg.state.root),
            "log": self.log_path,
            "idleExit": self.idle_exit,
        }


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux units; macOS: bytes


async def _admit_local(hub: Hub, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Connection:
    conn = hub.connect()
    attach(conn, writer)  # the peer's uid was checked: no token
    return conn


async def handle(d: Daemon, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    try:
        uid = rendezvous.peer_uid(sock)
    except OSError:
        uid = None
    if uid != os.getuid():  # refused before a byte is read or written
        log.warning("connection refused: peer uid %s is not ours", uid)
        writer.close()
        return
    try:
        line = await asyncio.wait_for(reader.readline(), GREETING_TIMEOUT)
    except (TimeoutError, ValueError, ConnectionError, asyncio.LimitOverrunError):
        writer.close()
        return
    parts = line.decode("ascii", "replace").split()
    if len(parts) != 3 or parts[0] != rendezvous.GREETING.decode() or parts[1] not in rendezvous.VERBS:
        log.warning("connection dropped: not a pi-server greeting")
        writer.close()
        return
    if parts[2] != d.key:  # another configuration's connector: never served here
        writer.write(rendezvous.GREETING + b" other-configuration\n")
        writer.close()
        return
    verb = parts[1]
    if verb == "lsp":
        writer.write(rendezvous.GREETING + b" ok\n")
        try:
            await handle_connection(d.hub, reader, writer, admit=_admit_local)
        finally:
            if not d.hub.connections:
                d.idle_since = time.monotonic()
        return
    if verb == "status":
        writer.write(rendezvous.GREETING + b" ok " + json.dumps(d.status()).encode() + b"\n")
    else:
        writer.write(rendezvous.GREETING + b" ok stopping\n")
        d.done.set()
        await d.saved.wait()  # the caller's end of stream says the indexes are saved
    with contextlib.suppress(Exception):
        await writer.drain()
    writer.close()


async def _idle_watch(d: Daemon) -> None:
    tick = max(0.05, min(1.0, d.idle_exit / 4))
    while not d.done.is_set():
        await asyncio.sleep(tick)
        if not d.hub.connections and time.monotonic() - d.idle_since >= d.idle_exit:
            log.info("no client for %.0f s: exiting", d.idle_exit)
            d.done.set()


def bind(sock_path: str, pid_file: str, key: str) -> socket.socket | None:
    """The listening socket (None when a daemon of this key already answers there).

    Bound and listening under a temporary name, then linked into place (and recorded): a
    connector never finds the path before it answers, and a link never replaces
    anything that appeared there meanwhile."""
    found = rendezvous.dial(sock_path, pid_file, key, "status")
    if found is not None:
        found[0].close()
        return None
    tmp_path = f"{sock_path}.{os.getpid()}.new"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # 0600 from the start: no moment where others could connect
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        s.bind(tmp_path)
        os.chmod(tmp_path, 0o600)
        s.listen(128)
        try:
            os.link(tmp_path, sock_path)
        except FileExistsError:  # another daemon of this key won the race: it serves
            s.close()
            return None
        # the record that tells our dead daemon's socket (to replace) from anyone else's (to refuse)
        rec = json.dumps({"pid": os.getpid(), "ino": os.lstat(sock_path).st_ino, "version": __version__})
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(pid_file), prefix=".pid.")
        with os.fdopen(fd, "w") as f:
            f.write(rec)
        os.replace(tmp, pid_file)
    except BaseException:
        s.close()
        raise
    finally:
        os.umask(old)
        with contextlib.suppress(OSError):
            os.unlink(tmp_path)
    return s


def _remove_own(d: Daemon) -> None:
    """The socket and pid record, if they are still this daemon's (a successor may have replaced them)."""
    try:
        with open(d.pid_file) as f:
            mine = json.load(f).get("pid") == os.getpid()
    except (OSError, ValueError, AttributeError):
        mine = False
    if mine:
        for p in (d.sock_path, d.pid_file):
            with contextlib.suppress(OSError):
                os.unlink(p)


async def _run(options: ServerOptions, sock: socket.socket, d_args: dict[str, Any]) -> None:
    hub = Hub(options)
    d = Daemon(hub=hub, **d_args)
    hub.root.tasks.append(asyncio.ensure_future(offcore.warm_up(hub.root, hub.registry)))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, d.done.set)
    server = await asyncio.start_unix_server(lambda r, w: handle(d, r, w), sock=sock, limit=LINE_LIMIT)
    log.info("daemon %d listening on %s (pi-server %s)", os.getpid(), d.sock_path, __version__)
    watch = asyncio.ensure_future(_idle_watch(d))
    async with server:
        await d.done.wait()
        watch.cancel()
        server.close()
        _remove_own(d)  # new connectors start a new daemon from now on
        try:
            await asyncio.wait_for(hub.root.shutdown_core(), 30)  # background work stopped, indexes saved
            await hub.root.core(_remember_warm, hub.registry)
        except Exception:
            log.exception("saving the indexes on exit failed")
        d.saved.set()
        await asyncio.sleep(0)  # `stop` callers hear it before the loop ends
    log.info("daemon %d exits", os.getpid())


def _remember_warm(reg: Registry) -> None:
    """The sessions in memory, for the next daemon to read back as it starts (`offcore.warm_up`)."""
    reg.cache.save_listing(warm=[*reversed(reg.sessions)])


class ListenFailed(Exception):
    """The daemon cannot take its socket (something foreign there, or the OS refused)."""


def run(
    session_dirs: list[str],
    state_dir: str | None,
    busy_timeout: float,
    max_live_entries: int,
    idle_exit: float | None,
    log_file: str | None,
    verbose: bool,
) -> int:
    """`pi-server daemon run`: its log in the state dir (or `log_file`), never the caller's streams."""
    from pi_server.store.state import default_state_dir

    state = os.path.abspath(os.path.expanduser(state_dir or default_state_dir()))
    log_path, problem = _log_path(log_file, state)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        filename=log_path,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    if problem:
        log.warning("%s", problem)
    from pi_server import redact
    from pi_server.llm.client import api_key

    redact.install([api_key()])  # the API key never reaches a log line, whoever logs it
    options = ServerOptions(
        session_dirs=[os.path.abspath(os.path.expanduser(d)) for d in session_dirs],
        state_dir=state,
        busy_timeout=busy_timeout,
        max_live_entries=max_live_entries,
    )
    try:
        return serve_daemon(options, 600.0 if idle_exit is None else idle_exit, log_path)
    except (OSError, rendezvous.Refused) as e:
        log.error("the daemon cannot listen: %s", e)
        raise ListenFailed(f"the daemon cannot listen: {getattr(e, 'strerror', None) or e}") from None


def _log_path(flag: str | None, state: str) -> tuple[str, str | None]:
    """Where the daemon logs, and the problem to log once: a state dir it cannot write is
    served without the index cache, and the log goes beside the socket instead."""
    if flag:
        return os.path.abspath(flag), None
    path = os.path.join(state, "daemon.log")
    try:
        os.makedirs(state, exist_ok=True)
        with open(path, "a"):
            pass
        probe = os.path.join(state, f".probe-{os.getpid()}")
        with open(probe, "wb") as f:
            f.write(b"x" * 4096)
        os.unlink(probe)
        return path, None
    except OSError as e:
        other = os.path.join(rendezvous.ensure_socket_dir(), f"daemon-{os.getpid()}.log")
        why = e.strerror or str(e)
        return other, f"state dir {state} cannot be written ({why}): serving without the index cache"


# Modules a first client's work would import on the event loop, every request waiting: the
# watcher's (watchfiles awaits its thread through anyio, ~40 ms of imports) and progress's.
LATE_MODULES = ("anyio.to_thread", "anyio._backends._asyncio", "anyio.streams.memory", "pygls.progress")


def _import_late_modules() -> None:
    for name in LATE_MODULES:
        with contextlib.suppress(ImportError):  # another version lays them out otherwise: imported when used
            importlib.import_module(name)


def serve_daemon(options: ServerOptions, idle_exit: float, log_path: str) -> int:
    """Listen for this configuration's clients until stopped or idle; 0 also when one already runs."""
    _import_late_modules()
    key = rendezvous.config_key(
        options.session_dirs,
        options.state_dir or rendezvous.default_state_dir(),
        options.busy_timeout,
        options.max_live_entries,
    )
    rendezvous.ensure_socket_dir()
    sock_path, pid_file, _lock = rendezvous.paths(key)
    sock = bind(sock_path, pid_file, key)
    if sock is None:
        log.info("a daemon already serves this configuration at %s", sock_path)
        return 0
    args = {"key": key, "sock_path": sock_path, "pid_file": pid_file, "idle_exit": idle_exit, "log_path": log_path}
    asyncio.run(_run(options, sock, args))
    return 0
