"""Finding session files under the roots and describing them as pi's SessionInfo."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_server.jsutil import js_date_ms, js_split_ws

if TYPE_CHECKING:  # imported where used: a listing from the listing cache reads no file
    from pi_server.store.index import SessionIndex

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"


def agent_dir() -> str:
    """pi's agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (sessions, settings, auth)."""
    agent = os.environ.get("PI_CODING_AGENT_DIR")
    return os.path.expanduser(agent) if agent else os.path.join(os.path.expanduser("~"), ".pi", "agent")


def default_roots() -> list[str]:
    """`$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions` (as pi)."""
    return [os.path.join(agent_dir(), "sessions")]


def resolve_roots(dirs: list[str] | None) -> tuple[list[str], bool]:
    """The roots to serve, and whether they are the bundled samples.

    The samples only when nothing points anywhere: no `PI_CODING_AGENT_DIR` and no `~/.pi`.
    A variable or a `~/.pi` without sessions is an empty store, never demo data.
    """
    if dirs:
        return [os.path.abspath(os.path.expanduser(d)) for d in dirs], False
    roots = default_roots()
    pi_home = os.path.join(os.path.expanduser("~"), ".pi")
    if os.environ.get("PI_CODING_AGENT_DIR") or os.path.lexists(pi_home):
        return roots, False
    return [str(SAMPLES_DIR)], True


def agent_dir_problem() -> str | None:
    """What is wrong with `PI_CODING_AGENT_DIR` as a place to find sessions, or None.

    pi reads `$PI_CODING_AGENT_DIR/sessions`; a path that is not there, or the sessions
    folder itself given where its parent was meant, is named with what to set instead.
    """
    env = os.environ.get("PI_CODING_AGENT_DIR")
    if not env:
        return None
    agent = os.path.abspath(os.path.expanduser(env))
    sessions = os.path.join(agent, "sessions")
    if os.path.isdir(sessions):
        return None
    if not os.path.exists(agent):
        return f"PI_CODING_AGENT_DIR is {agent}, which does not exist"
    if not os.path.isdir(agent):
        return f"PI_CODING_AGENT_DIR is {agent}, which is not a directory"
    if _holds_sessions(agent):
        return (
            f"PI_CODING_AGENT_DIR is {agent}, a sessions folder: pi reads {sessions}; "
            f"set PI_CODING_AGENT_DIR={os.path.dirname(agent)}"
        )
    return None  # an agent folder where pi has not saved a session yet


def _holds_sessions(folder: str) -> bool:
    """Session files directly in the folder, or pi's `--<cwd>--` folders holding them."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return False
    for e in entries:
        if e.name.endswith(".jsonl") and e.is_file():
            return True
        if e.name.startswith("--") and e.name.endswith("--") and e.is_dir():
            try:
                if any(n.endswith(".jsonl") for n in os.listdir(e.path)):
                    return True
            except OSError:
                continue
    return False


def iter_session_files(roots: list[str]) -> Iterator[str]:
    """The `*.jsonl` files under the roots (hidden folders skipped, symlinked folders not
    followed), names sorted, each folder's files before its subfolders."""
    return (e.path for e in iter_session_entries(roots))


def iter_session_entries(roots: list[str]) -> Iterator[os.DirEntry[str]]:
    """`iter_session_files` as the folders' entries: whether a file is a symlink is known from
    its folder's listing, and its stat is one call relative to the folder."""
    for root in roots:
        if os.path.isdir(root):
            yield from _walk(root)


def _walk(folder: str) -> Iterator[os.DirEntry[str]]:
    # as os.walk would (top down, symlinked folders not followed), names sorted
    try:
        with os.scandir(folder) as it:
            found = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    subdirs = []
    for e in found:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if not e.name.startswith(".") and not e.is_symlink():
                subdirs.append(e.path)
        elif e.name.endswith(".jsonl"):
            yield e
    for sub in subdirs:
        yield from _walk(sub)


def is_within(path: str, roots: list[str], dirs: dict[str, str] | None = None, link: bool | None = None) -> bool:
    """The file, symlinks resolved, is under one of the roots. `dirs`: real paths of folders
    already resolved during one listing (a listing of 3,000 files resolves each folder once,
    not every folder of every path); `link`: whether the file is a symlink, when known."""
    real = _realpath(path, dirs, link)
    for r in roots:
        rr = real_path(r) if dirs is None else _real_dir(dirs, r)
        if real == rr or real.startswith(rr.rstrip(os.sep) + os.sep):
            return True
    return False


def _realpath(path: str, dirs: dict[str, str] | None, link: bool | None = None) -> str:
    if dirs is None or (os.path.islink(path) if link is None else link):
        return real_path(path)
    folder, name = os.path.split(path)
    return os.path.join(_real_dir(dirs, folder), name)


def _real_dir(dirs: dict[str, str], folder: str) -> str:
    """A folder's real path, resolved once per listing (`dirs`)."""
    real = dirs.get(folder)
    if real is None:
        real = dirs[folder] = real_path(folder)
    return real


_FD_LINKS = hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd")


def real_path(path: str) -> str:
    """`os.path.realpath(path)`, asked of the kernel where it can answer: three system calls
    (open without reading, the descriptor's link, close) instead of one per component. Each
    call gives up the interpreter lock, and beside a busy thread each waits to take it back."""
    if _FD_LINKS:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):  # missing, a dangling link: resolved as far as it goes
            return os.path.realpath(path)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        # a file deleted meanwhile, or one out of this process's view of the filesystem
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


def _iso(ms: float) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def session_info(idx: SessionIndex, leaf_id: str | None = None) -> dict[str, Any]:
    """pi's SessionInfo of one indexed file (dates as ISO strings)."""
    h = idx.header
    assert h is not None
    created_ms = js_date_ms(h.timestamp)
    if idx.last_activity_ms is not None and idx.last_activity_ms > 0:
        modified_ms = idx.last_activity_ms
    elif created_ms == created_ms:
        modified_ms = created_ms
    else:
        modified_ms = os.stat(idx.path).st_mtime * 1000
    info: dict[str, Any] = {
        "session": idx.path,
        "id": h.id,
        "cwd": h.cwd,
        "created": _iso(created_ms) if created_ms == created_ms else None,
        "modified": _iso(modified_ms),
        "messageCount": idx.message_count,
        "entryCount": len(idx),
        "firstMessage": idx.first_message or "(no messages)",
        "leafId": leaf_id if leaf_id is not None else idx.last_id,
    }
    if idx.name is not None:
        info["name"] = idx.name
    if h.parent_session is not None:
        info["parentSession"] = h.parent_session
    return info


def all_messages_text(idx: SessionIndex) -> str:
    """pi's allMessagesText: user and assistant text, joined by spaces."""
    positions = [p for p, r in enumerate(idx.roles) if r in ("user", "assistant")]
    from pi_server.store import content

    parts = []
    for e in idx.read_entries(positions):
        msg = e.get("message") or {}
        if "content" not in msg:
            continue
        text = content.join_text(msg.get("content"), " ")
        if text:
            parts.append(text)
    return " ".join(parts)


def query_tokens(query: str | None) -> list[str]:
    """pi's search terms: the query lowered, split on whitespace (none: every session matches)."""
    return js_split_ws((query or "").lower())


def search_text(idx: SessionIndex) -> str:
    """What a searched listing looks in: the session's name and all its message text, lowered."""
    return f"{idx.name or ''} {all_messages_text(idx)}".lower()


def matches(idx: SessionIndex, query: str | None) -> bool:
    tokens = query_tokens(query)
    return not tokens or text_matches(search_text(idx), tokens)


def text_matches(text: str, tokens: list[str]) -> bool:
    return all(t in text for t in tokens)


def list_sessions(
    roots: list[str],
    *,
    cwd: str | None = None,
    query: str | None = None,
    limit: int | None = None,
    describe: Callable[[str, str | None], dict[str, Any] | None] | None = None,
    paths: list[str] | None = None,
) -> list[dict[str, Any]]:
    """SessionInfo for every session under the roots matching `query`, newest `modified` first;
    with `cwd`, only the sessions whose header names that directory.

    `describe(path, query)` gives one file's SessionInfo, or None to leave it out
    (not a session, or no match); by default each file is indexed afresh. `paths`: the
    files under the roots when the caller has just walked them.
    """
    describe = describe or _describe_fresh
    want_cwd = resolve_cwd(cwd) if cwd is not None else None
    out = []
    for path in iter_session_files(roots) if paths is None else paths:
        info = describe(path, query)
        if info is None or (want_cwd is not None and not _same_cwd(info["cwd"], want_cwd)):
            continue
        out.append(info)
    # pi 1.6.0 reads a directory's files by name, descending, then sorts stably by `modified`
    out.sort(key=lambda s: _name_key(os.path.basename(s["session"])), reverse=True)
    out.sort(key=lambda s: s["modified"], reverse=True)
    return out[:limit] if limit is not None else out


def _describe_fresh(path: str, query: str | None) -> dict[str, Any] | None:
    from pi_server.store.index import NotASession, SessionIndex

    try:
        idx = SessionIndex.open(path)
    except (NotASession, OSError):
        return None
    return session_info(idx) if matches(idx, query) else None


def resolve_cwd(p: str) -> str:
    """pi's resolvePath: `~` expanded, made absolute and normalized."""
    if p == "~" or p.startswith("~/"):
        p = os.path.join(os.path.expanduser("~"), p[2:])
    return os.path.abspath(p)


def _same_cwd(header_cwd: Any, resolved: str) -> bool:
    """pi 1.6.0's list(cwd, dir): a session belongs to the cwd its header names, resolved."""
    return isinstance(header_cwd, str) and header_cwd != "" and resolve_cwd(header_cwd) == resolved


def _name_key(name: str) -> tuple[str, str]:
    """Close to pi's localeCompare for file names: letters without case first, then lower before upper."""
    return name.casefold(), name.swapcase()
