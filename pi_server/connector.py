"""What editors start: relays stdio to the configuration's daemon, starting one if none answers.

Standard library only (and `rendezvous`): the editor waits for this process's
start, not for the server's. The client's first message (`initialize`) is read
here, since its initializationOptions may name the roots and the state dir that
pick the daemon; it goes to the daemon with the greeting, and everything after
it is relayed, both ways. When the daemon goes away the connector exits
non-zero, so the editor restarts it (and a daemon with it).

Every module imported here is paid on every start, so it imports few: the C parts
of `json` and `threading` rather than the packages (which bring `re`, `enum`,
`functools`, `collections`), and nothing with `from __future__`.
"""

import _json
import _thread
import os
import sys
import time

from pi_server import rendezvous

START_TIMEOUT = 30.0  # seconds a new daemon may take to listen (an import on a busy machine)
CHUNK = 1 << 16


class ConnectError(Exception):
    """No daemon could be reached or started: one line for the user, exit status 2."""


class Config:
    """The flags that pick (and start) a daemon. A plain class: dataclasses cost an import."""

    def __init__(
        self,
        session_dirs: list[str] | None = None,
        state_dir: str | None = None,
        busy_timeout: float | None = None,
        max_live_entries: int | None = None,
        log_file: str | None = None,
        idle_exit: float | None = None,
        verbose: bool = False,
    ) -> None:
        self.session_dirs = session_dirs or []
        self.state_dir = state_dir
        self.busy_timeout = busy_timeout
        self.max_live_entries = max_live_entries
        self.log_file = log_file
        self.idle_exit = idle_exit
        self.verbose = verbose  # like the log file: the daemon this starts logs so

    def merged(self, init: object) -> "Config":
        """The flags under the client's initializationOptions, as the server resolves them
        (a field of the wrong type is the server's to report: here it just does not count)."""
        o = init if isinstance(init, dict) else {}
        dirs = o.get("sessionDirs")
        state = o.get("stateDir")
        busy = o.get("busyTimeout")
        live = o.get("maxLiveEntries")
        ok_dirs = isinstance(dirs, list) and dirs and all(isinstance(d, str) for d in dirs)
        return Config(
            session_dirs=list(dirs) if ok_dirs else self.session_dirs,  # type: ignore[arg-type]
            state_dir=state if isinstance(state, str) and state else self.state_dir,
            busy_timeout=busy if _positive(busy) else self.busy_timeout,
            max_live_entries=live if _positive(live) and isinstance(live, int) else self.max_live_entries,
            log_file=self.log_file,
            idle_exit=self.idle_exit,
            verbose=self.verbose,
        )

    def daemon_argv(self) -> list[str]:
        argv = ["--state-dir", self.state()]
        for d in self.session_dirs:
            argv += ["--sessions-dir", os.path.abspath(os.path.expanduser(d))]
        if self.busy_timeout is not None:
            argv += ["--busy-timeout", str(self.busy_timeout)]
        if self.max_live_entries is not None:
            argv += ["--max-live-entries", str(self.max_live_entries)]
        if self.log_file:
            argv += ["--log-file", os.path.abspath(self.log_file)]
        if self.idle_exit is not None:
            argv += ["--idle-exit", str(self.idle_exit)]
        if self.verbose:
            argv.append("-v")
        return argv

    def state(self) -> str:
        return os.path.abspath(os.path.expanduser(self.state_dir or rendezvous.default_state_dir()))

    def key(self) -> str:
        return rendezvous.config_key(
            self.session_dirs, self.state(), self.busy_timeout or 120.0, self.max_live_entries or 100_000
        )


def _positive(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


def connect(cfg: Config, verb: str = "lsp", start: bool = True, payload: bytes = b"") -> tuple[object, bytes] | None:
    """A greeted connection to the daemon of `cfg`, started (under a lock) when none answers;
    `payload` (the client's first frames) is sent with the greeting."""
    key = cfg.key()
    rendezvous.ensure_socket_dir()
    sock_path, pid_file, lock_path = rendezvous.paths(key)
    found = rendezvous.dial(sock_path, pid_file, key, verb, payload=payload)
    if found is not None or not start:
        return found
    import fcntl

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # ten connectors at once start one daemon
        found = rendezvous.dial(sock_path, pid_file, key, verb, payload=payload)
        if found is None:
            found = _start(cfg, key, sock_path, pid_file, verb, payload)
    finally:
        os.close(fd)
    return found


def _start(cfg: Config, key: str, sock_path: str, pid_file: str, verb: str, payload: bytes) -> tuple[object, bytes]:
    import subprocess

    argv = [sys.executable, "-m", "pi_server", "daemon", "run", *cfg.daemon_argv()]
    # a session of its own and no standard streams: it never holds a terminal, a pipe or a CI run
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    deadline = time.monotonic() + START_TIMEOUT
    delay = 0.005
    while time.monotonic() < deadline:
        found = rendezvous.dial(sock_path, pid_file, key, verb, payload=payload)
        if found is not None:
            return found
        code = proc.poll()
        if code is not None:
            found = rendezvous.dial(sock_path, pid_file, key, verb, payload=payload)
            if found is not None:
                return found
            raise ConnectError(f"the daemon did not start (exit status {code}); see its log {_log(cfg, key)}")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise ConnectError(f"the daemon did not answer within {START_TIMEOUT:.0f} s; see its log {_log(cfg, key)}")


def _log(cfg: Config, key: str) -> str:
    return cfg.log_file or os.path.join(cfg.state(), "daemon.log")


def read_first(fd: int) -> tuple[bytes, object]:
    """(the bytes of the client's first frame, its parsed JSON or None)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return buf, None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = _content_length(head)
    if length is None:
        return buf, None
    while len(rest) < length:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return head + b"\r\n\r\n" + rest, None
        rest += chunk
    try:
        msg = loads(rest[:length])
    except ValueError:
        msg = None
    return head + b"\r\n\r\n" + rest, msg


class _Decoding:
    """What the C scanner asks of its context: `json.loads`'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.__getitem__


_scan = _json.make_scanner(_Decoding())
_SPACE = " \t\n\r"


def loads(data: bytes) -> object:
    """`json.loads` of one UTF-8 body, by the C scanner `json.loads` itself runs (the json
    package's import, with `re`'s, is ~3 ms of a start); ValueError for anything else."""
    if data.startswith(b"\xef\xbb\xbf"):  # a BOM, which json.loads skips (utf-8-sig is one more import)
        data = data[3:]
    try:
        text = data.decode("utf-8", "surrogatepass")
        start = len(text) - len(text.lstrip(_SPACE))
        obj, end = _scan(text, start)
    except (StopIteration, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"not JSON: {type(e).__name__}") from None
    if text[end:].strip(_SPACE):
        raise ValueError("not JSON: extra data")
    return obj


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


class ExitWatch:
    """Frames from the client, watched for `exit`: after it the daemon closing is no failure."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.seen = False

    def feed(self, data: bytes) -> None:
        self.buf += data
        while True:
            sep = self.buf.find(b"\r\n\r\n")
            if sep < 0:
                return
            length = _content_length(bytes(self.buf[:sep]))
            if length is None:  # not framed: the daemon will say so, we only stop looking
                self.buf.clear()
                return
            end = sep + 4 + length
            if len(self.buf) < end:
                return
            body = bytes(self.buf[sep + 4 : end])
            del self.buf[:end]
            if b'"exit"' in body:
                try:
                    self.seen = self.seen or loads(body).get("method") == "exit"  # type: ignore[attr-defined]
                except (ValueError, AttributeError):
                    pass


def relay(sock: object, sent: bytes) -> int:
    """Bytes both ways until the daemon closes (`sent`: what the client said that the daemon
    already has); 0 after the client's `exit` or end of input."""
    import _socket

    assert isinstance(sock, _socket.socket)
    watch = ExitWatch()
    ended: list[bool] = []  # set by the upstream thread at the client's end of input
    watch.feed(sent)

    def upstream() -> None:
        try:
            while True:
                data = os.read(0, CHUNK)
                if not data:
                    break
                watch.feed(data)
                sock.sendall(data)
        except OSError:  # the daemon went away mid-write (or stdin failed): not the client's end
            return
        ended.append(True)
        try:
            sock.shutdown(_socket.SHUT_WR)
        except OSError:
            pass

    _thread.start_new_thread(upstream, ())  # it never ends the process: serve's os._exit does
    try:
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:  # straight to the descriptor: no buffer to flush
                view = view[os.write(1, view) :]
    except BrokenPipeError:
        return 0  # the editor is gone
    except OSError:
        pass
    if watch.seen or ended:
        return 0
    print("pi-server: the daemon went away", file=sys.stderr, flush=True)
    return 1


_VALUED = {
    "--sessions-dir": "session_dirs",
    "--state-dir": "state_dir",
    "--busy-timeout": "busy_timeout",
    "--max-live-entries": "max_live_entries",
    "--log-file": "log_file",
    "--idle-exit": "idle_exit",
}
_IGNORED = ("--stdio",)  # stdio is what this speaks


def parse_flags(argv: list[str]) -> Config | None:
    """The connector's flags, read without argparse (its import is a good part of a start);
    None for anything else (help, TCP, --no-daemon, a bad value): the full parser takes those."""
    if os.environ.get("PI_SERVER_NO_DAEMON") == "1":
        return None
    args = argv[1:] if argv[:1] == ["serve"] else argv
    cfg = Config()
    i = 0
    try:
        while i < len(args):
            a = args[i]
            name, eq, value = a.partition("=")
            if a in ("-v", "--verbose"):
                cfg.verbose = True
                i += 1
                continue
            if a in _IGNORED or name == "--clientProcessId":
                i += 1 if eq or name != "--clientProcessId" else 2
                continue
            field = _VALUED.get(name)
            if field is None:
                return None
            if not eq:
                i += 1
                value = args[i]
            i += 1
            if field == "session_dirs":
                cfg.session_dirs.append(value)
            elif field in ("busy_timeout", "idle_exit"):
                setattr(cfg, field, float(value))
            elif field == "max_live_entries":
                cfg.max_live_entries = int(value)
                if cfg.max_live_entries < 0:
                    return None
            else:
                setattr(cfg, field, value)
    except (IndexError, ValueError):
        return None
    if cfg.idle_exit is None and os.environ.get("PI_SERVER_IDLE_EXIT"):
        try:
            cfg.idle_exit = float(os.environ["PI_SERVER_IDLE_EXIT"])
        except ValueError:
            return None
    return cfg


def serve(cfg: Config) -> int:
    first, msg = read_first(0)
    if not first:
        return 0
    params = msg.get("params") if isinstance(msg, dict) else None
    init = params.get("initializationOptions") if isinstance(params, dict) else None
    try:
        found = connect(cfg.merged(init), payload=first)
    except (rendezvous.Refused, ConnectError) as e:
        print(f"pi-server: {e}", file=sys.stderr, flush=True)
        return 2
    except OSError as e:
        print(f"pi-server: cannot reach the daemon: {e.strerror or e}", file=sys.stderr, flush=True)
        return 2
    assert found is not None
    code = relay(found[0], first)
    os._exit(code)  # the relay thread may still be blocked reading stdin
