"""Where a daemon listens and how a connector knows it is ours (standard library only).

The connector imports this before anything else, so it must stay cheap: no
package of ours beyond `pi_server.__init__`, nothing outside the standard
library. A configuration (roots, state dir, server flags, the environment that
changes what is served, pi-server's version) hashes to a key; the daemon of
that key listens at `<socket dir>/<key>.sock` and answers a one-line greeting
naming the same key, so a connector never talks to another configuration's
daemon or to another program.
"""

# `_socket`, not `socket`: the socket module's import (its enums, `selectors`) is a good part
# of a connector's start, and a Unix socket needs none of it. No `from __future__`, `json` or
# `struct` either: each is an import of every start.
import _socket
import errno
import os
import stat
import sys

from pi_server import __version__

TYPE_CHECKING = False  # not typing's: its import costs a start too
if TYPE_CHECKING:
    from socket import socket

GREETING = b"PI-SERVER/1"
VERBS = ("lsp", "status", "stop")
MAX_LINE = 4096  # a greeting or a status line
# first frames up to this size go with the greeting: a socket buffer takes them at once, so the
# greeting's answer is never waited for behind them (larger ones follow the answer)
EARLY_MAX = 1 << 16
# the peer's credentials: Linux's `struct ucred` (pid, uid, gid); the BSDs' `struct xucred`
# (version, uid, groups); the uid is the second 32-bit field of both
_UCRED_SIZE = 12
_XUCRED_SIZE = 72
# environment read by the server: a daemon serves the environment of the connector that started it
_ENV_PREFIXES = ("PI_", "ANTHROPIC_", "OPENAI_")
_ENV_NAMES = ("HOME", "USERPROFILE", "XDG_STATE_HOME")
# not the configuration: how to start pi-server, and what pi sets in its own environment (a pi
# with pi-server's extension must find the daemon its user's editors use)
_ENV_IGNORED = ("PI_SERVER_NO_DAEMON", "PI_SERVER_IDLE_EXIT", "PI_SERVER_COMMAND", "PI_CODING_AGENT")


try:  # CPython's own SHA-256: hashlib's would load OpenSSL, ~4 MB of every connector's memory
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha256 as _sha256


class Refused(Exception):
    """Something at the socket path (or its folder) is not ours: never used, never deleted."""


def socket_dir() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "pi-server")
    return os.path.join(temp_dir(), f"pi-server-{os.getuid()}")


def temp_dir() -> str:
    """The folder `tempfile.gettempdir()` picks ($TMPDIR, $TEMP, $TMP, then /tmp, /var/tmp,
    /usr/tmp, the working folder: the first one we may write to), without importing tempfile
    (shutil, random: ~5 ms of a start). The connector and the daemon it starts both ask here."""
    candidates = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
    for d in [*candidates, "/tmp", "/var/tmp", "/usr/tmp"]:
        if d and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return os.path.abspath(d)
    return os.getcwd()


def ensure_socket_dir() -> str:
    """The socket folder, created 0700; refused when it is not a folder of ours closed to others."""
    path = socket_dir()
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{path} is not a folder (a {kind(st)}): pi-server will not use it")
    if st.st_uid != os.getuid():
        raise Refused(f"{path} belongs to another user: pi-server will not use it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if stat.S_ISREG(st.st_mode):
        return "regular file"
    if stat.S_ISSOCK(st.st_mode):
        return "socket"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    return "special file"


def default_state_dir() -> str:
    # as store.state.default_state_dir, not imported: the connector imports nothing of the core
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "pi-server")


def config_key(session_dirs: list[str], state_dir: str, busy_timeout: float, max_live_entries: int) -> str:
    """A short hash of everything that makes one daemon's answers differ from another's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and k not in _ENV_IGNORED
    }
    config = {
        "version": __version__,
        "roots": [os.path.abspath(os.path.expanduser(d)) for d in session_dirs],
        "state": os.path.abspath(os.path.expanduser(state_dir)),
        "busy": float(busy_timeout),
        "live": int(max_live_entries),
        "env": sorted(env.items()),
        "python": sys.executable,
    }
    # repr, not json.dumps: the same text for the same values, without the json package's import
    return _sha256(repr(sorted(config.items())).encode()).hexdigest()[:20]


def paths(key: str) -> tuple[str, str, str]:
    """(socket, pid record, start lock) of a key."""
    d = socket_dir()
    return os.path.join(d, f"{key}.sock"), os.path.join(d, f"{key}.pid"), os.path.join(d, f"{key}.lock")


def peer_uid(sock: "socket | _socket.socket") -> int | None:
    """The uid of the process at the other end (None where the OS cannot say)."""
    if hasattr(_socket, "SO_PEERCRED"):  # Linux
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED_SIZE)
    elif hasattr(_socket, "LOCAL_PEERCRED"):  # the BSDs and macOS (getpeereid reads the same xucred)
        raw = sock.getsockopt(0, _socket.LOCAL_PEERCRED, _XUCRED_SIZE)
    else:
        return None
    return int.from_bytes(raw[4:8], sys.byteorder)  # uid_t: unsigned


def recorded(pid_file: str, sock_path: str) -> bool:
    """Whether our pid record names the socket now at the path (the same inode)."""
    import json  # only here, on the way to replace a dead daemon's socket

    try:
        with open(pid_file) as f:
            rec = json.load(f)
        ino = os.lstat(sock_path).st_ino
    except (OSError, ValueError):
        return False
    return isinstance(rec, dict) and rec.get("ino") == ino


def check_path(sock_path: str) -> str:
    """What is at the socket path: "none" or "socket" (to try); anything else is refused, naming the path."""
    try:
        st = os.lstat(sock_path)
    except FileNotFoundError:
        return "none"
    if not stat.S_ISSOCK(st.st_mode):
        raise Refused(f"{sock_path} is a {kind(st)}, not pi-server's socket: remove it yourself if it is not needed")
    if st.st_uid != os.getuid():
        raise Refused(f"{sock_path} belongs to another user: refused")
    return "socket"


def dial(
    sock_path: str, pid_file: str, key: str, verb: str, timeout: float = 5.0, payload: bytes = b""
) -> "tuple[_socket.socket, bytes] | None":
    """A greeted connection to the daemon of `key` (and its answer line); None when no daemon
    listens there (nothing there, or our own dead daemon's socket, which is removed).

    `payload` (the client's first frames) goes with the greeting, once the peer is known to be
    our own user: the daemon reads it after the greeting, so the reply to it does not wait for
    one more round trip. A daemon that refuses the greeting never reads it."""
    early = len(payload) <= EARLY_MAX
    if check_path(sock_path) == "none":
        return None
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        try:
            s.connect(sock_path)
        except (ConnectionRefusedError, FileNotFoundError) as e:
            # nobody listens: our dead daemon's socket is replaced, anyone else's left alone
            if isinstance(e, FileNotFoundError) or recorded(pid_file, sock_path):
                _remove_stale(sock_path, pid_file)
                return None
            raise Refused(f"{sock_path} is a socket nothing answers on, not one pi-server recorded: refused") from None
        uid = peer_uid(s)
        if uid is not None and uid != os.getuid():
            raise Refused(f"{sock_path} is served by another user (uid {uid}): refused")
        try:
            s.sendall(b"%s %s %s\n" % (GREETING, verb.encode(), key.encode()) + (payload if early else b""))
            line = read_line(s)
        except OSError:
            line = b""
        if not line.startswith(GREETING + b" ok"):
            raise Refused(f"{sock_path} is another program's socket (it did not answer as pi-server): refused")
        s.settimeout(None)
        if not early:
            s.sendall(payload)
        return s, line[len(GREETING) + 3 :].strip()
    except BaseException:
        s.close()
        raise


def _remove_stale(sock_path: str, pid_file: str) -> None:
    for p in (sock_path, pid_file):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def read_line(s: "_socket.socket") -> bytes:
    """One line, read byte by byte: nothing after it is taken off the socket."""
    out = bytearray()
    while len(out) < MAX_LINE:
        try:
            b = s.recv(1)
        except TimeoutError:
            break
        except OSError as e:
            if e.errno in (errno.ECONNRESET, errno.EPIPE):
                break
            raise
        if not b or b == b"\n":
            break
        out += b
    return bytes(out)
