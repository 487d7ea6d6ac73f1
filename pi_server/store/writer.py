"""Appending to a session file beside a running pi, and pi's v1/v2 → v3 migration.

The only writes to an existing session: whole lines appended with O_APPEND, one
write call each, after making sure the file ends with a newline; and, before the
first append to an old file, pi's migration done atomically.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import stat
import uuid
from datetime import UTC, datetime
from typing import Any

from pi_server.jsutil import js_finite
from pi_server.store import beneath
from pi_server.store import entry_types as et
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


def append_lines(path: str, entries: list[dict[str, Any]], roots: tuple[str, ...] = ()) -> None:
    """Append whole lines, each so that no moment leaves a partial line (`_append_line`).

    `roots`: the file is opened within them (store/beneath.py), never through a symlink
    swapped in after the caller checked the path. A write that fails part way (disk
    full, a file size limit) is taken back, so no partial line is left for pi's next
    append to be glued onto.
    """
    refuse_samples(path)
    flags = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = beneath.open_beneath(path, roots, flags) if roots else os.open(path, flags)
    except OSError as e:
        raise WriteFailed(f"cannot open {path} for appending: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteFailed(f"{path} is not a regular file")
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n" and not _blank_tail(fd, size):
            _write_whole(fd, b"\n", path)  # a line cut short: end it so it is skipped, as pi 1.6 does on open
        for e in entries:
            _append_line(fd, dumps(e) + b"\n", path)
    finally:
        os.close(fd)


TAIL_PEEK = 1 << 16


def _blank_tail(fd: int, size: int) -> bool:
    """The unfinished last line is spaces only: a room (`_append_line`) cut short, which
    a line may simply follow (JSON allows leading blanks)."""
    pos = size
    while pos > 0:
        start = max(0, pos - TAIL_PEEK)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if chunk[nl + 1 :].strip(b" "):
            return False
        if nl >= 0:
            return True
        pos = start
    return True


ONE_WRITE = 512  # bytes: a line this short goes out in one write (it spans at most two pages)


def _append_line(fd: int, line: bytes, path: str) -> None:
    """Append one line so that a kill at any moment leaves no partial last line.

    One write of a long line can be cut short (a fatal signal stops it between pages).
    So the line's room is taken first, in one append: spaces ending in its newline.
    Cut short, that leaves spaces only, which pi's next line follows harmlessly (JSON
    allows leading blanks); whole, the file ends with a newline, and the line is then
    written into its room, where nothing else can write. Cut short there, it is a
    malformed line that pi and pi-server skip, and the file still ends with a newline.
    """
    if len(line) <= ONE_WRITE:
        _write_whole(fd, line, path)
        return
    _write_whole(fd, b" " * (len(line) - 1) + b"\n", path)
    end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND left the offset just past our room
    mode = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, mode & ~os.O_APPEND)  # (Linux's pwrite ignores offsets on O_APPEND)
    try:
        body, at, done = line[:-1], end - len(line), 0
        while done < len(body):
            n = os.pwrite(fd, body[done:], at + done)
            if n <= 0:
                raise OSError(errno.EIO, "short write")
            done += n
    except OSError as e:
        with contextlib.suppress(OSError):
            os.pwrite(fd, b" " * done, at)  # blank the room again: an empty line, skipped
        raise WriteFailed(f"cannot append to {path}: {e.strerror or e}") from None
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, mode)


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
    atomic_write(idx.path, b"\n".join(lines) + b"\n", roots=idx.roots)
    return True


def new_session_file(
    directory: str, header_extra: dict[str, Any], entries: list[dict[str, Any]], roots: tuple[str, ...] = ()
) -> str:
    """A new session file named as pi names them; written atomically (with `roots`, into the
    folder opened within them: a folder swapped for a symlink cannot send it elsewhere)."""
    refuse_samples(directory)
    ts = now_iso()
    sid = _uuid7()
    header = {"type": et.SESSION, "version": CURRENT_VERSION, "id": sid, "timestamp": ts, **header_extra}
    path = os.path.join(directory, f"{ts.replace(':', '-').replace('.', '-')}_{sid}.jsonl")
    atomic_write(path, b"".join(dumps(x) + b"\n" for x in [header, *entries]), roots=roots)
    return path


def _uuid7() -> str:
    ms = int(datetime.now(UTC).timestamp() * 1000)
    rand = secrets.randbits(74)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))
