"""Answer `initialize` over stdio before anything heavy is imported.

The `initialize` reply only lists what the server can do, and building it takes
pygls (~0.4 s to import `lsprotocol.types` on an idle machine, several times
that on a busy one), which the `pi/*` methods do not need (`server/lean.py`).
So the stdio server reads the first message itself with only the standard
library; when a previous start recorded pygls's own reply for the same client
capabilities, options and code (the key below), that reply goes out at once.
Otherwise the lean loop loads pygls and hands it the `initialize`: its reply
goes out through `Filter` and is recorded for the next start. Whenever pygls is
loaded later (an LSP request), it is handed the `initialize` too, and a record
that differs from its reply is replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any, BinaryIO

CACHE_FILE = "initialize-replies.json"
_KEEP = 8  # replies kept: one per client set-up (editor, options)


def state_dir(flag: str | None) -> str:
    # as store.state.default_state_dir, not imported: its imports cost more than this module
    if flag:
        return flag
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "pi-server")


def _warn(text: str) -> None:
    import logging  # only here: logging's imports are a good part of this module's budget

    logging.getLogger("pi_server").warning("%s", text)


def read_message(fd: int) -> tuple[bytes, dict[str, Any] | None]:
    """(every byte read, the first message) from the raw file descriptor; None if not JSON-RPC."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = os.read(fd, 65536)
        if not chunk:
            return buf, None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            length = int(value)
    if length is None:
        return buf, None
    while len(rest) < length:
        chunk = os.read(fd, 65536)
        if not chunk:
            return buf, None
        buf += chunk
        rest += chunk
    try:
        msg = json.loads(rest[:length])
    except ValueError:
        return buf, None
    return buf, msg if isinstance(msg, dict) else None


def _code_stamp() -> list[Any]:
    """What the reply depends on besides the client: our server code, pygls's and lsprotocol's."""
    server = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(os.path.dirname(server), "__init__.py")]  # the version
    for name in ("pygls", "lsprotocol"):  # an upgrade rewrites the package's __init__.py
        files += [p for d in sys.path if os.path.isfile(p := os.path.join(d or ".", name, "__init__.py"))][:1]
    for root, subdirs, names in os.walk(server):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        files += [os.path.join(root, f) for f in sorted(names) if f.endswith(".py")]
    stamp: list[Any] = [sys.version]
    for path in files:
        st = os.stat(path)
        stamp.append((path, st.st_size, st.st_mtime_ns))
    return stamp


def key_of(msg: dict[str, Any], stamp: list[Any]) -> str | None:
    params = msg.get("params")
    if msg.get("method") != "initialize" or "id" not in msg or not isinstance(params, dict):
        return None
    if not isinstance(params.get("capabilities"), dict):
        return None
    what = [params.get("capabilities"), params.get("initializationOptions"), stamp]
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(path: str, key: str, result: Any) -> None:
    data = _load(path)
    data.pop(key, None)
    data[key] = result
    while len(data) > _KEEP:
        data.pop(next(iter(data)))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError as e:
        _warn(f"cannot record the initialize reply: {e}")


class Early:
    """What happened before pygls: the bytes read, the key, and whether the reply went out."""

    def __init__(self, consumed: bytes, msg: dict[str, Any] | None, key: str | None, cache: str, sent: Any) -> None:
        self.consumed = consumed
        self.msg_id = msg.get("id") if msg else None
        self.key = key
        self.cache = cache
        self.sent = sent  # the result sent (None: nothing sent)


def answer_initialize(state_flag: str | None, fd_in: int = 0, out: BinaryIO | None = None) -> Early:
    consumed, msg = read_message(fd_in)
    cache = os.path.join(state_dir(state_flag), CACHE_FILE)
    key = key_of(msg, _code_stamp()) if msg else None
    sent = None
    if key is not None and msg is not None:
        known = _load(cache).get(key)
        if isinstance(known, dict):
            body = json.dumps({"id": msg["id"], "jsonrpc": "2.0", "result": known}).encode()
            stream = out or sys.stdout.buffer
            stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stream.flush()
            sent = known
    return Early(consumed, msg, key, cache, sent)


class Filter:
    """stdout for pygls: pygls's own `initialize` reply is recorded, and dropped if already sent."""

    def __init__(self, early: Early, out: BinaryIO) -> None:
        self.early = early
        self.out = out
        self.pending = early.key is not None

    def write(self, data: bytes) -> int:
        if self.pending:
            _, _, body = data.partition(b"\r\n\r\n")
            try:
                msg = json.loads(body)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("id") == self.early.msg_id and "method" not in msg:
                self.pending = False
                return self._own_reply(data, msg)
        return self.out.write(data)

    def _own_reply(self, data: bytes, msg: dict[str, Any]) -> int:
        early = self.early
        result = msg.get("result")  # None for an error: that is not recorded, and forgets the old one
        if result != early.sent and early.key is not None:
            if early.sent is not None:
                _warn("the recorded initialize reply was out of date; recorded pygls's own")
            _save(early.cache, early.key, result)
        if early.sent is not None:
            return len(data)  # the client has it already
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.close()
