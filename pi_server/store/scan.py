"""Bounded, non-blocking reads of session files.

A session file is read in chunks, never a whole line grown in memory to find
its end: a line longer than `MAX_LINE` is recorded and skipped. Only regular
files are opened (a FIFO or a device under the roots would block or never end),
and holes in sparse files are jumped over, not read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from typing import Any

import msgspec

from pi_server.store import beneath
from pi_server.store.records import NotASession

MAX_LINE = 64 << 20  # longest line indexed; longer ones are skipped with a diagnostic
CHUNK = 8 << 20  # bytes read per call
BATCH = 1 << 20  # bytes of lines indexed in one decode (store/batch.py)
TAIL = 4096  # bytes before the indexed end that fingerprint the indexed prefix
MAX_PREAMBLE = 1000  # lines read looking for the header before a file is taken for not a session
MAX_DIAGNOSTICS = 1000  # per file; the lines past it are skipped all the same
NEWLINES = re.compile(b"\n+")


def open_regular(path: str, roots: tuple[str, ...] = ()) -> int:
    """A read-only descriptor on a regular file; anything else is not a session. With
    `roots`, the file opened is within them whatever is swapped meanwhile (store/beneath.py)."""
    if "\x00" in path:
        raise NotASession(f"{path!r}: not a valid path")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = beneath.open_beneath(path, roots, flags) if roots else os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked on what was opened, not on the name
        os.close(fd)
        raise NotASession(f"{path}: not a regular file")
    return fd


def find_newline(fd: int, start: int, end: int, limit: int | None = None) -> int:
    """Offset of the first newline in [start, end), looking at most `limit` bytes; -1 if none."""
    stop = end if limit is None else min(end, start + limit)
    pos = start
    while pos < stop:
        try:
            pos = os.lseek(fd, pos, os.SEEK_DATA)  # holes hold only zeros: skip them
        except OSError as e:
            if e.errno == errno.ENXIO:
                return -1  # nothing but a hole up to the end
            if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
        if pos >= stop:
            return -1
        buf = os.pread(fd, min(CHUNK, stop - pos), pos)
        if not buf:
            return -1
        i = buf.find(b"\n")
        if i >= 0:
            return pos + i
        pos += len(buf)
    return -1


def release_memory() -> None:
    """Hand the heap pages freed while indexing back to the system (glibc keeps them
    otherwise: after a 100 MB file, about 20 MB that nothing uses)."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim: Any = None


def tail_hash(fd: int, size: int) -> bytes:
    """A digest of the bytes just before `size`: a rewrite of the indexed prefix changes it."""
    n = min(size, TAIL)
    return hashlib.blake2b(os.pread(fd, n, size - n), digest_size=16).digest() if n else b""


def prefix_changed(fd: int, end: int, size: int, header: bytes, digest: bytes) -> bool:
    """The `size` bytes already indexed are not what they were: shrunk, header or tail rewritten."""
    if end < size:
        return True
    if header and os.pread(fd, len(header), 0) != header:
        return True
    return bool(size) and tail_hash(fd, size) != digest


def plainly_malformed(err: BaseException, line: bytes) -> bool:
    """msgspec refused the line, and no other reading could accept it: not JSON at all (not
    invalid UTF-8, a lone surrogate, deep nesting or `1e400`, which `loads` reads as pi does)."""
    if type(err) is not msgspec.DecodeError or b"\\u" in line:
        return False
    msg = str(err)
    readable = ("depth", "recursion", "UTF-8", "out of range")  # out of range: `1e400`, infinity to JSON.parse
    return not any(m in msg for m in readable) and line.isascii()
