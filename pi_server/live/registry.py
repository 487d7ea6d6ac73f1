"""The registry of served sessions: an index per file (least recently used dropped past a
budget, reloaded from the index cache), background indexing, changes on disk, and the
entry points for writes.

All of it is synchronous and meant to run on one worker thread: the server
never touches an index from two threads at once.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_server.live.errors import OutsideRoots, SessionNotFound
from pi_server.live.leaf import kept_leaf, pointer_holds
from pi_server.store.cache import IndexCache, fingerprint
from pi_server.store.discovery import (
    is_within,
    iter_session_entries,
    iter_session_files,
    list_sessions,
    matches,
    session_info,
)
from pi_server.store.state import StateDir

if TYPE_CHECKING:  # the rest is imported where used: a listing from the cache needs none of it
    from pi_server.live import ops as oplib
    from pi_server.live.appends import SessionAppender
    from pi_server.live.queue import Written
    from pi_server.live.session import LiveSession, Refreshed
    from pi_server.store.index import SessionIndex
    from pi_server.tree.outline import Outline

log = logging.getLogger("pi_server")
STEP_S = 0.01  # longest run of a stepped call before other requests get the worker


@dataclass
class Registry:
    roots: list[str]
    state: StateDir
    busy_timeout: float  # the options' (server/options.py), as every default
    max_live_entries: int  # indexes beyond this are dropped (their cache stays on disk)
    sessions: OrderedDict[str, LiveSession] = field(default_factory=OrderedDict)  # least recently used first
    cache: IndexCache | None = None
    evicted: dict[str, int] = field(default_factory=dict)  # path -> entry count when dropped
    building: dict[str, SessionIndex] = field(default_factory=dict)  # background indexing in progress
    turns: dict[str, Any] = field(default_factory=dict)  # session path -> the server's own running turn
    pinned: dict[str, int] = field(default_factory=dict)  # path -> requests in progress that keep it in memory
    # left out of listings until they change: path -> fingerprint (not a session, or killed a worker)
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)
    save_dropped: Any = None  # `save_index` for a dropped index, elsewhere (server/offcore.py); None: here
    unreported: list[Refreshed | None] = field(default_factory=list)  # a listing's re-reads: the server notifies them
    _dirs: dict[str, str] = field(default_factory=dict)  # folders' real paths during one listing
    _leaves: dict[str, Any] | None = None  # the leaf pointers on disk, read once per listing

    def __post_init__(self) -> None:
        if self.cache is None:
            self.cache = IndexCache(self.state.root)

    # ---------------------------------------------------------------- lookup

    def resolve(self, session: str) -> str:
        if not isinstance(session, str) or "\x00" in session:
            raise SessionNotFound(f"{session!r} is not a valid session path")
        path = os.path.abspath(os.path.expanduser(session))
        if not is_within(path, self.roots):
            raise OutsideRoots(f"{session} is outside the session roots")
        return path

    def get(self, session: str) -> LiveSession:
        path = self.resolve(session)
        live = self.sessions.get(path)
        if live is not None:
            self.sessions.move_to_end(path)
            return live
        if not os.path.isfile(path):
            raise SessionNotFound(f"no session file {session}")
        from pi_server.store.index import NotASession, SessionIndex
        idx = self.building.pop(path, None)  # half indexed in the background: finish it now
        from_cache = False
        if idx is None:
            idx = self.cache.load(path, tuple(self.roots))
            from_cache = idx is not None
        try:
            if idx is None:
                idx = SessionIndex.open(path, tuple(self.roots))
            elif not from_cache:
                idx.refresh()
                if idx.header is None:
                    raise NotASession(path)
        except NotASession:
            raise SessionNotFound(f"{session} is not a pi session file") from None
        except OSError as e:
            raise SessionNotFound(f"cannot read {session}: {e.strerror}") from None
        return self._adopt(path, idx, from_cache)

    def index_step(self, path: str, budget: int = 1 << 20) -> bool:
        """Index a little of one file (for background indexing); True once it is done.

        Requests run between steps, so they never wait behind a whole large file.
        """
        if path in self.sessions:
            return True
        if not is_within(path, self.roots):  # a symlink out of the roots: never read it
            return True
        from pi_server.store.records import NotASession
        idx = self.building.get(path)
        if idx is None:
            cached = self.cache.load(path, tuple(self.roots))
            if cached is not None:
                self._adopt(path, cached, True)
                return True
            from pi_server.store.index import SessionIndex

            idx = self.building[path] = SessionIndex(path, roots=tuple(self.roots))
        try:
            idx.refresh(max_bytes=budget)
        except (NotASession, OSError):
            self.building.pop(path, None)
            return True
        if not idx.done:
            return False
        self.building.pop(path, None)
        if idx.header is not None:
            self._adopt(path, idx, False)
        return True

    def never_indexed(self, path: str, link: bool | None = None) -> bool:
        """A file neither served nor described by the listing cache. One the cache describes is
        known from now on (as a dropped index the cache reloads), so its changes are followed.
        `link`: whether the file is a symlink, when the caller knows (None: looked up)."""
        if path in self.sessions or path in self.evicted:
            return False
        fp = self._vet(path, link)
        return fp is not None and self._from_listing_cache(path, fp) is None

    def _vet(self, path: str, link: bool | None = None, entry: os.DirEntry[str] | None = None) -> dict[str, int] | None:
        """The fingerprint of a file that may be listed: within the roots (symlinks resolved),
        there, and not left out until it changes; None otherwise. `link` False: a file that is
        no symlink, found by walking the roots (which follows no symlinked folder), so within them."""
        if link is not False and not is_within(path, self.roots, self._dirs, link):
            return None
        fp = fingerprint(path, entry)
        if fp is None or self.skipped.get(path) == fp:
            return None
        return fp

    def _from_listing_cache(self, path: str, fp: dict[str, int]) -> dict[str, Any] | None:
        """The listing cache's SessionInfo for the file as it is now; the file is known from then on."""
        info = self.cache.cached_info(path, fp)
        if info is None or not isinstance(info.get("entryCount"), int):
            return None
        self.evicted[path] = info["entryCount"]
        return info

    def to_index(self, paths: list[str]) -> list[str]:
        """Of `paths`, the files never indexed (`never_indexed`)."""
        self._dirs = {}
        return [path for path in paths if self.never_indexed(path)]

    def list_known_steps(self, cwd: str | None) -> Generator[None, None, tuple[list[dict], list[str]]]:
        """`list_steps` without a search and without the files never indexed: the listing, and
        those files (for worker processes to index). Each file is looked at once: one stat, and
        its SessionInfo from the index it has in memory or from the listing cache."""
        described: dict[str, dict[str, Any] | None] = {}
        missing: list[str] = []
        self._dirs, self._leaves = {}, self.state.leaves()
        t0 = time.monotonic()
        for entry in iter_session_entries(self.roots):
            path = entry.path
            fp = self._vet(path, entry.is_symlink(), entry)
            if fp is None:
                described[path] = None
            elif path in self.sessions or path in self.evicted:
                described[path] = self._describe(path, None, fp)
            else:
                info = self._from_listing_cache(path, fp)
                described[path] = None if info is None else self._with_leaf(path, info, None)
                if info is None:
                    missing.append(path)
            if time.monotonic() - t0 > STEP_S:
                yield
                t0 = time.monotonic()
        self._leaves = None
        listed = list_sessions(self.roots, cwd=cwd, describe=lambda p, q: described[p], paths=list(described))
        return listed, missing

    def indexed_elsewhere(self, done: list[tuple[str, dict[str, Any] | str | None]]) -> None:
        """Files another process indexed into the index cache: their listing facts are kept, their
        indexes loaded from the cache when a request needs them. A file that is not a session
        (None), or that process failed on (a string: why), is left out of listings until it changes."""
        for path, facts in done:
            if facts is None or isinstance(facts, str):
                fp = fingerprint(path)
                if fp is not None:
                    self.skipped[path] = fp
            elif path not in self.sessions and path not in self.evicted:
                self.cache.remember_info(path, facts["fp"], facts["info"])
                self.evicted[path] = facts["entries"]

    def adopt_loaded(
        self, path: str, idx: SessionIndex, outline: Outline, from_cache: bool, pin: bool = False
    ) -> LiveSession:
        """Serve an index read (and cached) off the core worker (server/offcore.py) with its outline, unless one was
        read meanwhile; what was appended since is read now (a small step). `pin`: kept in memory until `unpin`."""
        live = self.sessions.get(path)
        if live is None:
            self.building.pop(path, None)
            generation, fp = idx.generation, fingerprint(path)
            if fp is None or fp["size"] != idx.size:
                idx.refresh()
            live = self._adopt(path, idx, from_cache, outline, generation)
        if pin:
            self.pinned[path] = self.pinned.get(path, 0) + 1
        return live

    def pin(self, path: str) -> bool:
        """Keep a served session in memory until `unpin` (a request on it runs); False: not in memory."""
        if path in self.sessions:
            self.pinned[path] = self.pinned.get(path, 0) + 1
        return path in self.sessions

    def unpin(self, path: str) -> None:
        if self.pinned.get(path, 0) > 1:
            self.pinned[path] -= 1
        else:
            self.pinned.pop(path, None)

    def _adopt(
        self, path: str, idx: SessionIndex, from_cache: bool, outline: Outline | None = None, saved: int | None = None
    ) -> LiveSession:
        from pi_server.live.session import LiveSession
        from pi_server.tree.outline import Outline

        leaf, explicit = kept_leaf(idx, self.state.leaf(path))
        outline = outline or Outline(idx)
        live = LiveSession(idx, outline, leaf, explicit, from_cache=from_cache, view_saved=outline.seeded)
        self.sessions[path] = live
        if saved is None and (not from_cache or idx.generation > 1):
            self.save_index(live)
        else:  # `saved`: read off the worker, and cached there when it had to be
            live.saved_generation = idx.generation if saved is None else saved
        fp = fingerprint(path)
        if fp is not None:
            self.cache.remember_info(path, fp, {**session_info(idx), "_size": idx.size})
        self._evict(keep=path)
        return live

    def _evict(self, keep: str) -> None:
        """Drop the least recently used indexes beyond the budget; their caches reload them fast."""
        total = sum(len(live.index) for live in self.sessions.values())
        for path in list(self.sessions):
            if total <= self.max_live_entries:
                break
            if path == keep or path in self.pinned or self.state.pending(path):
                continue
            live = self.sessions.pop(path)
            (self.save_dropped or self.save_index)(live)
            self.evicted[path] = len(live.index)
            total -= len(live.index)

    def save_index(self, live: LiveSession, cache: IndexCache | None = None) -> None:
        from pi_server.tree.saved import VIEW_MIN_ENTRIES

        idx = live.index
        large = len(idx) >= VIEW_MIN_ENTRIES
        if live.saved_generation != idx.generation or (large and not live.view_saved):
            # a large session's tree and view go with it: its first window after a restart reads them
            leaf = idx.position(live.leaf_id) if large and live.leaf_id is not None else None
            view = live.outline.saved_view(leaf) if large else None
            (cache or self.cache).save(idx, view)
            live.saved_generation, live.view_saved = idx.generation, large

    def save_all(self) -> None:
        """Write the index cache of every session that changed since it was last saved."""
        for live in list(self.sessions.values()):
            self.save_index(live)
        self.cache.save_listing(keep=set(self.all_files()))

    def entry_pos(self, live: LiveSession, entry_id: str) -> int:
        return live.entry_pos(entry_id)

    def files_steps(self) -> Generator[None, None, list[str]]:
        """The session files under the roots, in steps; files left out until they change are left out."""
        files = []
        t0 = time.monotonic()
        for path in iter_session_files(self.roots):
            if path not in self.skipped or self.skipped[path] != fingerprint(path):
                files.append(path)
            if time.monotonic() - t0 > STEP_S:
                yield
                t0 = time.monotonic()
        return files

    def list_steps(
        self,
        cwd: str | None = None,
        query: str | None = None,
        limit: int | None = None,
        paths: tuple[str, ...] | None = None,
    ) -> Generator[None, None, list[dict]]:
        """`list` in steps of about STEP_S seconds (run by the server's `core_steps`), so a
        searched listing of a large store never holds the worker for long. `paths`: only
        these files (those a search in the worker processes matched, checked to be within the roots)."""
        described: dict[str, dict[str, Any] | None] = {}
        self._dirs, self._leaves = {}, self.state.leaves()
        t0 = time.monotonic()
        walked = iter_session_entries(self.roots) if paths is None else paths
        for found in walked:
            if isinstance(found, str):
                path, fp = found, self._vet(found, False)  # `paths`: found within the roots by a worker
            else:
                path, fp = found.path, self._vet(found.path, found.is_symlink(), found)
            described[path] = None if fp is None else self._describe(path, query, fp)
            if time.monotonic() - t0 > STEP_S:
                yield
                t0 = time.monotonic()
        self._leaves = None
        # the files just walked, not a second walk: the last step stays short
        return list_sessions(
            self.roots, cwd=cwd, query=query, limit=limit, describe=lambda p, q: described[p], paths=list(described)
        )

    def _describe(self, path: str, query: str | None, fp: dict[str, int]) -> dict[str, Any] | None:
        """One file's SessionInfo (None: skip it); a file that fails is skipped, never the listing.
        `fp`: the file's fingerprint, already vetted by the caller (`_vet`)."""
        try:
            return self._describe_one(path, query, fp)
        except (SessionNotFound, OutsideRoots, OSError, ValueError):
            return None
        except Exception:
            log.exception("listing skipped %s", path)
            return None

    def _describe_one(self, path: str, query: str | None, fp: dict[str, int]) -> dict[str, Any] | None:
        """One file's SessionInfo (None: skip it), with the leaf the server keeps for it. A file
        not served is read only through `get`, which checks the roots again."""
        live = self.sessions.get(path)
        info = None
        if live is None and not query:
            info = self.cache.cached_info(path, fp)
        if info is None:
            from pi_server.store.records import NotASession  # here: a listing from the cache reads no file
            try:
                live = self.get(path)
                if live.index.size != fp["size"] or live.index.partial_tail:
                    self.unreported.append(self.refresh(path))  # as the watcher's would be, when it is slower
            except (SessionNotFound, NotASession, OSError):
                self.skipped[path] = fp  # left out until it changes, as when a worker process fails on it
                return None
            if live.index.header is None:
                return None
            info = session_info(live.index)
            self.cache.remember_info(path, fp, {**info, "_size": live.index.size})
            if query and not matches(live.index, query):
                return None
        return self._with_leaf(path, info, live)

    def _with_leaf(self, path: str, info: dict[str, Any], live: LiveSession | None) -> dict[str, Any]:
        """The SessionInfo to answer: the leaf the server keeps for the file (a served session's,
        else a pointer set while the file had this size), the cache's own fields left out."""
        out = dict(info)
        size = out.pop("_size", None)
        if live is not None:
            out["leafId"] = live.leaf_id
        else:
            saved = self._saved_leaf(path)
            if saved is not None and pointer_holds(saved, size):
                out["leafId"] = saved["leafId"]
        return out

    def _saved_leaf(self, path: str) -> dict[str, Any] | None:
        """The leaf pointer kept for a file (during a listing, from the one read of them)."""
        if self._leaves is None:
            return self.state.leaf(path)
        v = self._leaves.get(path)
        return v if isinstance(v, dict) and "leafId" in v else None

    def clean_temp_files(self) -> int:
        """Remove the temp files killed writes left (store/state.py); how many."""
        from pi_server.store.state import clean_all_temp_files

        return clean_all_temp_files([self.state.root, self.state.root / "pending", self.cache.dir], self.roots)

    def all_files(self) -> list[str]:
        return list(iter_session_files(self.roots))

    # ---------------------------------------------------------------- changes on disk

    def refresh(self, path: str, loaded: tuple[SessionIndex, Outline, bool] | None = None) -> Refreshed | None:
        """Re-read a file that changed. Appended entries move the leaf (as pi's reload would).
        `loaded`: the index of a dropped session, read off the worker (`adopt_loaded`'s arguments)."""
        from pi_server.live.session import Refreshed
        from pi_server.store.records import NotASession

        live = self.sessions.get(path)
        if live is None:
            if path not in self.evicted:
                return None
            before = self.evicted.pop(path)
            try:
                live = self.get(path) if loaded is None else self.adopt_loaded(path, *loaded)
            except (SessionNotFound, OutsideRoots):
                return Refreshed(path, [], True, None)
            if live.from_cache and len(live.index) >= before:
                appended = live.index.ids[before:]
                return Refreshed(path, appended, False, live.leaf_id) if appended else None
            return Refreshed(path, [], True, live.leaf_id)
        try:
            appended, reset = live.index.refresh()
        except (NotASession, OSError):
            self.sessions.pop(path, None)
            return Refreshed(path, [], True, None)
        if live.index.header is None:  # emptied, or no longer a session
            self.sessions.pop(path, None)
            return Refreshed(path, [], True, None)
        if reset:
            live.leaf_id, live.explicit = live.index.last_id, False
            self.state.forget_leaf(path)
        elif appended:
            live.leaf_id, live.explicit = appended[-1], False
            self.state.forget_leaf(path)
        if not appended and not reset:
            return None
        return Refreshed(path, appended, reset, live.leaf_id)

    def forget(self, path: str) -> None:
        self.sessions.pop(path, None)
        self.evicted.pop(path, None)

    # ---------------------------------------------------------------- turns and writes

    def busy(self, live: LiveSession, now: float | None = None) -> bool:
        """A turn is in progress: ours, or pi's (the last entry waits for the model or a tool)."""
        from pi_server.live.busy import pi_turn_running

        return live.path in self.turns or pi_turn_running(live, self.busy_timeout, now)

    def write(self, live: LiveSession, ops: list[oplib.Op]) -> Written:
        """Apply now, or queue when the session is busy."""
        from pi_server.live import queue
        from pi_server.store.writer import refuse_samples

        refuse_samples(live.path)
        return queue.write(self.state, live, ops, self.busy(live))

    def flush(self, live: LiveSession, force: bool = False) -> list[str]:
        """Flush the pending queue in order when the turn is over (or timed out)."""
        if not self.state.pending(live.path) or (self.busy(live) and not force):
            return []
        from pi_server.live import queue
        from pi_server.live.busy import pi_turn_running

        return queue.flush(self.state, live, lambda: pi_turn_running(live, self.busy_timeout))

    def appender(self, live: LiveSession) -> SessionAppender:
        """Appends of the server's own turn: children of the leaf, written now."""
        from pi_server.live.appends import SessionAppender
        from pi_server.store.writer import refuse_samples

        refuse_samples(live.path)
        return SessionAppender(live, self.state)

    def switch(
        self, live: LiveSession, target: str | None, label: str | None, persist: bool, summary: dict | None = None
    ) -> tuple[dict[str, Any], Written]:
        from pi_server.live import navigate
        from pi_server.store.writer import refuse_samples

        if label is not None or persist or summary is not None:
            refuse_samples(live.path)
        return navigate.switch(
            self.state, live, target, label=label, persist=persist, summary=summary, busy=self.busy(live)
        )

    def fork(self, live: LiveSession, leaf_id: str) -> str:
        from pi_server.live import navigate
        from pi_server.store.writer import refuse_samples

        refuse_samples(live.path)
        return navigate.fork(live, leaf_id)

    def new_session(self, cwd: str, entries: list[dict[str, Any]] | None = None) -> str:
        """pi's SessionManager.create layout: <root>/--<cwd>--/<timestamp>_<uuid>.jsonl: the header
        and the first entries, written at once."""
        from pi_server.store.writer import new_session_file, refuse_samples

        rest = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
        safe = "--" + rest.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"
        directory = os.path.join(self.roots[0], safe)
        refuse_samples(directory)
        os.makedirs(directory, exist_ok=True)
        return new_session_file(directory, {"cwd": cwd}, entries or [], tuple(self.roots))
