"""Appending to a session file beside a running pi, and pi's v1/v2 → v3 migration.

The only writes to an existing session: whole lines appended with O_APPEND, one
write call each, after making sure the file ends with a newline; and, before the
first append to an old file, pi's migration done atomically.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import uuid
from datetime import UTC, datetime
from typing import Any

from pi_server.jsutil import js_finite
from pi_server.store.index import SessionIndex
from pi_server.store.records import CURRENT_VERSION
from pi_server.store.state import atomic_write


class WriteFailed(Exception):
    pass


SAMPLES_DIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "samples"))
SAMPLES_READ_ONLY = (
    "the bundled sample sessions are read-only; to write, use a real store: "
    "start pi-server with --sessions-dir DIR (or run pi once to create ~/.pi/agent/sessions)"
)


def refuse_samples(path: str) -> None:
    """The samples ship inside the package (site-packages in an install): never written."""
    real = os.path.realpath(path)
    if real == SAMPLES_DIR or real.startswith(SAMPLES_DIR + os.sep):
        raise WriteFailed(SAMPLES_READ_ONLY)


def now_iso() -> str:
    t = datetime.now(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def new_id(taken: dict[str, Any] | set[str]) -> str:
    """8 hex characters not used in the file (as pi's ids)."""
    for _ in range(100):
        eid = secrets.token_hex(4)
        if eid not in taken:
            return eid
    return str(uuid.uuid4())


_LONE = re.compile("[\ud800-\udfff]")


def dumps(entry: dict[str, Any]) -> bytes:
    """The strict JSON line of an entry, as JSON.stringify writes it: compact, non-ASCII kept,
    a non-finite number as null, a lone surrogate (kept from a line pi wrote) as its escape."""
    try:
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # `1e400` read as infinity: never written as `Infinity`, which is not JSON
        text = json.dumps(js_finite(entry), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()


def append_lines(path: str, entries: list[dict[str, Any]]) -> None:
    """Append whole lines; each line is one write(2) on an O_APPEND descriptor.

    A write that fails part way (disk full, a file size limit) is taken back:
    the file is truncated to its size before it, so no partial line is left
    for pi's next append to be glued onto.
    """
    refuse_samples(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise WriteFailed(f"cannot open {path} for appending: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteFailed(f"{path} is not a regular file")
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _write_whole(fd, b"\n", path)  # a line cut short: never glue ours onto it
        for e in entries:
            _write_whole(fd, dumps(e) + b"\n", path)
    finally:
        os.close(fd)


def _write_whole(fd: int, data: bytes, path: str) -> None:
    """One write of `data`, or none: a short or failed write is truncated away."""
    before = os.fstat(fd).st_size
    try:
        n = os.write(fd, data)
        err = None if n == len(data) else "short write (disk full?)"
    except OSError as e:
        n, err = 0, e.strerror or str(e)
    if err is None:
        return
    try:
        if os.fstat(fd).st_size == before + n:  # nobody appended meanwhile: take ours back
            os.ftruncate(fd, before)
        elif n:
            os.write(fd, b"\n")  # pi appended after our partial line: end it, skip it
    except OSError:
        pass
    raise WriteFailed(f"cannot append to {path}: {err}")


def migrate_in_place(idx: SessionIndex) -> bool:
    """pi's migration to v3, keeping the ids already shown. Returns True if it rewrote."""
    if idx.version >= CURRENT_VERSION or idx.header is None:
        return False
    refuse_samples(idx.path)
    header = dict(idx.header.raw)
    header["version"] = CURRENT_VERSION
    lines = [dumps(header)]
    for e in idx.read_entries(list(range(len(idx)))):
        lines.append(dumps(e))
    atomic_write(idx.path, b"\n".join(lines) + b"\n")
    return True


def new_session_file(directory: str, header_extra: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """A new session file named as pi names them; written atomically."""
    refuse_samples(directory)
    ts = now_iso()
    sid = _uuid7()
    header = {"type": "session", "version": CURRENT_VERSION, "id": sid, "timestamp": ts, **header_extra}
    path = os.path.join(directory, f"{ts.replace(':', '-').replace('.', '-')}_{sid}.jsonl")
    atomic_write(path, b"".join(dumps(x) + b"\n" for x in [header, *entries]))
    return path


def _uuid7() -> str:
    ms = int(datetime.now(UTC).timestamp() * 1000)
    rand = secrets.randbits(74)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))
