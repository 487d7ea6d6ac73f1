"""What the server keeps in its state directory: leaf pointers and pending writes.

Every file is written atomically (temp file + rename), so a crash leaves the
previous version, never a torn one; read-modify-writes hold fcntl locks, so
several servers (two editor windows) can share one state dir.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger("pi_server")


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "pi-server")


def atomic_write(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """Temp file + rename. `durable` also fsyncs (not needed for caches, which are rebuilt if torn)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_json(path: Path, default: Any) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return default  # missing or corrupt: start over, never trust it


def saved_leaf(root: str, session: str) -> dict[str, Any] | None:
    """The server's leaf pointer for a session, read without creating anything (for the CLI)."""
    leaves = _read_json(Path(root) / "leaves.json", {})
    v = leaves.get(os.path.abspath(session)) if isinstance(leaves, dict) else None
    return v if isinstance(v, dict) and "leafId" in v else None


@contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive fcntl lock on `path` (created if needed), shared by every server on the
    state dir. Yields False when `wait` is off and another process holds it; True when
    held, or when the lock cannot even be made (a read-only state dir: nothing there
    can change, so there is nothing to guard)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


class StateDir:
    """Leaf pointers and pending queues; safe with several servers on one state dir:
    every read-modify-write holds a file lock and re-reads what is on disk."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            log.warning("state dir %s: %s", root, e.strerror)
        self._leaves_path = self.root / "leaves.json"
        self._leaves_seen: tuple[Any, dict[str, Any]] = (None, {})

    # leaf pointers: {session: {"leafId": id | None, "size": bytes of the file when set}}

    def _leaves(self) -> dict[str, Any]:
        """The pointers on disk (another server may have changed them); re-read when the file did."""
        try:
            st = os.stat(self._leaves_path)
            key: Any = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            return {}
        if key != self._leaves_seen[0]:
            leaves = _read_json(self._leaves_path, {})
            self._leaves_seen = (key, leaves if isinstance(leaves, dict) else {})
        return self._leaves_seen[1]  # shared: callers that change it copy it first

    def leaves(self) -> dict[str, Any]:
        """Every pointer on disk, read once (a listing looks up thousands): not to be changed."""
        return self._leaves()

    def leaf(self, session: str) -> dict[str, Any] | None:
        v = self._leaves().get(session)
        return v if isinstance(v, dict) and "leafId" in v else None

    def set_leaf(self, session: str, leaf_id: str | None, size: int) -> None:
        with file_lock(self.root / "leaves.lock"):
            leaves = dict(self._leaves())
            leaves[session] = {"leafId": leaf_id, "size": size}
            atomic_write(self._leaves_path, json.dumps(leaves, indent=1).encode())

    def forget_leaf(self, session: str) -> None:
        """Drop a leaf pointer the file outgrew. Best effort: a pointer is only trusted while
        the file keeps the size it was set at, so one left behind is never used."""
        if session not in self._leaves():
            return
        try:
            with file_lock(self.root / "leaves.lock"):
                leaves = dict(self._leaves())
                if leaves.pop(session, None) is not None:
                    atomic_write(self._leaves_path, json.dumps(leaves, indent=1).encode())
        except OSError as e:
            log.warning("cannot update %s: %s", self._leaves_path, e.strerror)

    # pending writes, one file per session

    def _pending_path(self, session: str) -> Path:
        return self.root / "pending" / (hashlib.sha256(os.fsencode(session)).hexdigest()[:24] + ".json")

    def queue_lock(self, session: str) -> AbstractContextManager[bool]:
        """Held around every read-modify-write of a session's queue."""
        return file_lock(self._pending_path(session).with_suffix(".lock"))

    def flusher_lock(self, session: str) -> AbstractContextManager[bool]:
        """One flusher per session across servers: yields False when another one flushes."""
        return file_lock(self._pending_path(session).with_suffix(".flush"), wait=False)

    def pending(self, session: str) -> list[dict[str, Any]]:
        data = _read_json(self._pending_path(session), {})
        ops = data.get("ops") if isinstance(data, dict) and data.get("session") == session else None
        return ops if isinstance(ops, list) else []

    def set_pending(self, session: str, ops: list[dict[str, Any]]) -> None:
        """Replace the queue; call with `queue_lock` held."""
        path = self._pending_path(session)
        if not ops:
            path.unlink(missing_ok=True)
            return
        atomic_write(path, json.dumps({"session": session, "ops": ops}).encode())

    def sessions_with_pending(self) -> list[str]:
        out = []
        folder = self.root / "pending"
        if folder.is_dir():
            for p in folder.glob("*.json"):
                data = _read_json(p, {})
                if isinstance(data, dict) and isinstance(data.get("session"), str) and data.get("ops"):
                    out.append(data["session"])
        return out
