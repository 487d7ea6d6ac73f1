"""What the server keeps in its state directory: leaf pointers and pending writes.

Every file is written atomically (temp file + rename), so a crash leaves the
previous version, never a torn one; read-modify-writes hold fcntl locks, so
several servers (two editor windows) can share one state dir.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from pi_server.store import beneath

log = logging.getLogger("pi_server")


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "pi-server")


def atomic_write(path: str | Path, data: bytes, *, durable: bool = True, roots: tuple[str, ...] = ()) -> None:
    """Temp file + rename. `durable` also fsyncs (not needed for caches, which are rebuilt if torn).

    Both are made through one descriptor on the folder (with `roots`, opened within them:
    store/beneath.py), so a folder swapped for a symlink meanwhile cannot send the file
    elsewhere. The temp file is locked while it exists: one nobody holds was left by a
    killed write, and `clean_temp_files` removes it."""
    path = Path(path)
    if roots:
        dfd = beneath.open_beneath(str(path.parent), roots, os.O_RDONLY | os.O_DIRECTORY)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        tmp, fd = _new_temp(dfd, path.name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def _new_temp(dfd: int, name: str) -> tuple[str, int]:
    """A new `.{name}.XXXXXXXX` in the folder (the names tempfile gives: `TEMP_NAME`)."""
    for _ in range(100):
        tmp = f".{name}.{secrets.token_hex(4)}"
        try:
            return tmp, os.open(
                tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd
            )
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}")
SESSION_TEMP_NAME = re.compile(r"\..+\.jsonl\.[a-z0-9_]{8}")  # in the session folders: only ours
SECOND_LOOK_S = 0.1  # an empty temp file may be one whose writer is about to lock it: looked at again


def clean_all_temp_files(state_folders: list[Path], roots: tuple[str, ...]) -> int:
    """Remove the temp files killed writes left in the state dir's folders and the session
    folders (symlinked folders not followed); how many."""
    n = sum(clean_temp_files(d) for d in state_folders)
    for root in roots:
        for folder, _dirs, _files in os.walk(root):
            n += clean_temp_files(folder, SESSION_TEMP_NAME)
    if n:
        log.info("removed %d temporary files left by interrupted writes", n)
    return n


def clean_temp_files(folder: str | Path, name: re.Pattern[str] = TEMP_NAME) -> int:
    """Remove the temp files killed writes left in `folder` (those no writer holds);
    returns how many. Symlinks and anything but regular files are left alone."""
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        names = [e.name for e in os.scandir(dfd) if name.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
        done = {n: _remove_unheld(dfd, n, empty_too=False) for n in names}
        empty = [n for n, removed in done.items() if removed is None]
        if empty:
            time.sleep(SECOND_LOOK_S)  # a live writer locks its file the moment it makes it
            done |= {n: _remove_unheld(dfd, n, empty_too=True) for n in empty}
        return sum(1 for removed in done.values() if removed)
    finally:
        os.close(dfd)


def _remove_unheld(dfd: int, name: str, *, empty_too: bool) -> bool | None:
    """Remove a temp file no writer holds: True when removed, False when held or gone,
    None when it is empty and `empty_too` is off (to be looked at again)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        if st.st_size == 0 and not empty_too:
            return None
        os.unlink(name, dir_fd=dfd)
        return True
    except OSError:
        return False  # held by a live writer, or already gone
    finally:
        os.close(fd)


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
