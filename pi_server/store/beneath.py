"""Opening a path without ever leaving a folder, even while someone swaps symlinks.

Checking a path (realpath, then "is it under the root?") and then opening it by
name leaves a window in which a file or a folder on the way can be replaced by a
symlink to somewhere else. Here the check is the open: every component is opened
relative to the folder descriptor it was found in, with O_NOFOLLOW, so what is
opened is the thing that was checked. A symlink on the way (allowed when it
resolves within the root) sends the walk once more along its resolved path, which
is walked the same way.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterable

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
CONFINED = _NOFOLLOW != 0 and os.open in os.supports_dir_fd  # POSIX; elsewhere, opens by path


class Escapes(OSError):
    """The path leads out of the folder it must stay in."""

    def __init__(self, path: str, root: str) -> None:
        super().__init__(errno.EXDEV, f"{path} leads outside {root}")
        self.filename = path


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` ("" for the root itself), or None when not under it."""
    if path == root:
        return ""
    base = root.rstrip(os.sep) + os.sep
    return path[len(base) :] if path.startswith(base) else None


_ROOT_FDS: dict[str, int] = {}  # a descriptor per root, kept: most opens then cost two calls, not three
_ROOT_LOCK = threading.Lock()


def _root_fd(root: str, fresh: bool = False) -> int:
    """The kept descriptor of a root folder (never closed: another thread may be using it)."""
    fd = None if fresh else _ROOT_FDS.get(root)
    if fd is None:
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        with _ROOT_LOCK:
            _ROOT_FDS[root] = fd  # one replaced (a root made anew) is left open, not closed under a reader
    return fd


def _walk(root: str, rel: str, flags: int, mode: int) -> int:
    """Open `rel` below `root`, component by component, never following a symlink."""
    parts = [p for p in rel.split(os.sep) if p and p != "."]
    if ".." in parts:
        raise Escapes(rel, root)
    try:
        return _walk_from(_root_fd(root), parts, flags, mode)
    except FileNotFoundError:
        return _walk_from(_root_fd(root, fresh=True), parts, flags, mode)  # the root was made anew


def _walk_from(root_fd: int, parts: list[str], flags: int, mode: int) -> int:
    if not parts:  # the root itself (read-only: callers check what they got with fstat)
        return os.open(".", os.O_RDONLY | _DIRECTORY | _CLOEXEC, dir_fd=root_fd)
    dfd = root_fd
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
            if dfd != root_fd:
                os.close(dfd)
            dfd = nxt
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dfd)
    finally:
        if dfd != root_fd:
            os.close(dfd)


def open_beneath(path: str, roots: Iterable[str], flags: int, mode: int = 0o666) -> int:
    """A descriptor on `path`, opened so that it cannot be anything outside `roots`.

    Raises `Escapes` when the path (symlinks resolved) is outside every root, and the
    usual OSError when it is missing. Pass O_DIRECTORY to open a folder."""
    path = os.path.abspath(path)
    roots = [os.path.abspath(r) for r in roots]
    if not CONFINED:
        if not any(_under(os.path.realpath(path), os.path.realpath(r)) is not None for r in roots):
            raise Escapes(path, os.pathsep.join(roots))
        return os.open(path, flags | _CLOEXEC, mode)
    for root in roots:  # the path as given: no symlink on the way, nothing to resolve
        rel = _under(path, root)
        if rel is not None:
            try:
                return _walk(root, rel, flags, mode)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
            break
    real = os.path.realpath(path)  # a symlink on the way: it must resolve within a root
    for root in roots:
        real_root = os.path.realpath(root)
        rel = _under(real, real_root)
        if rel is not None:
            try:
                return _walk(real_root, rel, flags, mode)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EMLINK):  # swapped again meanwhile
                    raise Escapes(path, root) from None
                raise
    raise Escapes(path, os.pathsep.join(roots))
