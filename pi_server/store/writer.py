"""Appending to a session file beside a running pi, and pi's v1/v2 → v3 migration.

The only writes to an existing session: whole lines appended with O_APPEND, one
write call each, after making sure the file ends with a newline; and, before the
first append to an old file, pi's migration done atomically.
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from pi_server.store.index import SessionIndex
from pi_server.store.records import CURRENT_VERSION
from pi_server.store.state import atomic_write


class WriteFailed(Exception):
    pass


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


def dumps(entry: dict[str, Any]) -> bytes:
    # compact, non-ASCII kept, as JSON.stringify writes it
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()


def append_lines(path: str, entries: list[dict[str, Any]]) -> None:
    """Append whole lines; each line is one write(2) on an O_APPEND descriptor."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as e:
        raise WriteFailed(f"cannot open {path} for appending: {e.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    os.write(fd, b"\n")  # a line cut short: never glue ours onto it
        for e in entries:
            data = dumps(e) + b"\n"
            if os.write(fd, data) != len(data):
                raise WriteFailed(f"short write to {path}")
    except OSError as e:
        raise WriteFailed(f"cannot append to {path}: {e.strerror}") from None
    finally:
        os.close(fd)


def migrate_in_place(idx: SessionIndex) -> bool:
    """pi's migration to v3, keeping the ids already shown. Returns True if it rewrote."""
    if idx.version >= CURRENT_VERSION or idx.header is None:
        return False
    header = dict(idx.header.raw)
    header["version"] = CURRENT_VERSION
    lines = [dumps(header)]
    for e in idx.read_entries(list(range(len(idx)))):
        lines.append(dumps(e))
    atomic_write(idx.path, b"\n".join(lines) + b"\n")
    return True


def new_session_file(directory: str, header_extra: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """A new session file named as pi names them; written atomically."""
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
