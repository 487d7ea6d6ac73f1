"""Live sessions: an index per file, its leaf pointer, and the writes the server makes.

All of it is synchronous and meant to run on one worker thread: the server
never touches an index from two threads at once.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pi_server.store.cache import IndexCache, fingerprint
from pi_server.store.content import join_text
from pi_server.store.discovery import is_within, iter_session_files, matches, session_info
from pi_server.store.index import NotASession, SessionIndex
from pi_server.store.state import StateDir
from pi_server.store.writer import WriteFailed, append_lines, migrate_in_place, new_id, new_session_file, now_iso
from pi_server.tree.outline import Outline
from pi_server.tree.paths import path_to

LEAF_MARKER = "pi-server/leaf"
SUMMARY_PLACEHOLDER = "<the summary entry>"  # a queued label on a summary not written yet


class SessionNotFound(Exception):
    pass


class EntryNotFound(Exception):
    pass


class OutsideRoots(Exception):
    pass


@dataclass
class LiveSession:
    index: SessionIndex
    outline: Outline
    leaf_id: str | None  # None with explicit=True: before the first entry
    explicit: bool = False  # set by a switch, not by the file
    saved_generation: int = -1  # index generation last written to the index cache
    from_cache: bool = False

    @property
    def path(self) -> str:
        return self.index.path


@dataclass
class Refreshed:
    session: str
    appended: list[str]
    reset: bool
    leaf_id: str | None


@dataclass
class Registry:
    roots: list[str]
    state: StateDir
    busy_timeout: float = 120.0
    sessions: OrderedDict[str, LiveSession] = field(default_factory=OrderedDict)  # least recently used first
    cache: IndexCache | None = None
    max_live_entries: int = 100_000  # indexes beyond this are dropped (their cache stays on disk)
    evicted: dict[str, int] = field(default_factory=dict)  # path -> entry count when dropped
    building: dict[str, SessionIndex] = field(default_factory=dict)  # background indexing in progress
    _last_summary: str | None = None
    turns: set[str] = field(default_factory=set)  # sessions where the server's own turn is running

    def __post_init__(self) -> None:
        if self.cache is None:
            self.cache = IndexCache(self.state.root)

    # ---------------------------------------------------------------- lookup

    def resolve(self, session: str) -> str:
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
        idx = self.building.pop(path, None)  # half indexed in the background: finish it now
        from_cache = False
        if idx is None:
            idx = self.cache.load(path)
            from_cache = idx is not None
        try:
            if idx is None:
                idx = SessionIndex.open(path)
            elif not from_cache:
                idx.refresh()
                if idx.header is None:
                    raise NotASession(path)
        except NotASession:
            raise SessionNotFound(f"{session} is not a pi session file") from None
        except OSError as e:
            raise SessionNotFound(f"cannot read {session}: {e.strerror}") from None
        return self._adopt(path, idx, from_cache)

    def index_step(self, path: str, budget: int = 4 << 20) -> bool:
        """Index a little of one file (for background indexing); True once it is done.

        Requests run between steps, so they never wait behind a whole large file.
        """
        if path in self.sessions:
            return True
        idx = self.building.get(path)
        if idx is None:
            cached = self.cache.load(path)
            if cached is not None:
                self._adopt(path, cached, True)
                return True
            idx = self.building[path] = SessionIndex(path)
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

    def _adopt(self, path: str, idx: SessionIndex, from_cache: bool) -> LiveSession:
        live = LiveSession(idx, Outline(idx), idx.last_id, from_cache=from_cache)
        saved = self.state.leaf(path)
        if saved is not None and saved.get("size") == idx.size:
            # the file has not grown since the switch: the switch still holds
            lid = saved["leafId"]
            if lid is None or lid in idx.by_id:
                live.leaf_id, live.explicit = lid, True
        self.sessions[path] = live
        if not from_cache or idx.generation > 1:
            self.save_index(live)
        else:
            live.saved_generation = idx.generation
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
            if path == keep or self.state.pending(path):
                continue
            live = self.sessions.pop(path)
            self.save_index(live)
            self.evicted[path] = len(live.index)
            total -= len(live.index)

    def save_index(self, live: LiveSession) -> None:
        if live.saved_generation != live.index.generation:
            self.cache.save(live.index)
            live.saved_generation = live.index.generation

    def save_all(self) -> None:
        """Write the index cache of every session that changed since it was last saved."""
        for live in list(self.sessions.values()):
            self.save_index(live)
        self.cache.save_listing(keep=set(self.all_files()))

    def entry_pos(self, live: LiveSession, entry_id: str) -> int:
        pos = live.index.by_id.get(entry_id)
        if pos is None:
            raise EntryNotFound(f"no entry {entry_id} in {live.path}")
        return pos

    def list(self, cwd: str | None = None, query: str | None = None, limit: int | None = None) -> list[dict]:
        """SessionInfo of every session, newest first; unchanged files answer from the listing cache."""
        out = []
        for path in iter_session_files(self.roots):
            fp = fingerprint(path)
            if fp is None:
                continue
            live = self.sessions.get(path)
            info = None
            if live is None and not query:
                info = self.cache.cached_info(path, fp)
            if info is None:
                try:
                    live = self.get(path)
                    if live.index.size != fp["size"] or live.index.partial_tail:
                        self.refresh(path)
                except (SessionNotFound, NotASession, OSError):
                    continue
                info = session_info(live.index)
                self.cache.remember_info(path, fp, {**info, "_size": live.index.size})
                if query and not matches(live.index, query):
                    continue
            info = {k: v for k, v in info.items() if k != "_size"}
            saved = self.state.leaf(path)
            if live is not None:
                info["leafId"] = live.leaf_id
            elif saved is not None and saved.get("size") == self.cache.cached_info(path, fp).get("_size"):
                info["leafId"] = saved["leafId"]
            if cwd is not None and info["cwd"] != cwd:
                continue
            out.append(info)
        out.sort(key=lambda s: s["modified"], reverse=True)
        return out[:limit] if limit is not None else out

    def all_files(self) -> list[str]:
        return list(iter_session_files(self.roots))

    # ---------------------------------------------------------------- changes on disk

    def refresh(self, path: str) -> Refreshed | None:
        """Re-read a file that changed. Appended entries move the leaf (as pi's reload would)."""
        live = self.sessions.get(path)
        if live is None:
            if path not in self.evicted:
                return None
            before = self.evicted.pop(path)
            try:
                live = self.get(path)
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

    # ---------------------------------------------------------------- busy

    def busy(self, live: LiveSession, now: float | None = None) -> bool:
        """A turn is in progress: ours, or pi's (the last entry waits for the model or a tool)."""
        idx = live.index
        if idx.path in self.turns:
            return True
        if not idx.ids:
            return False
        pos = len(idx) - 1
        if idx.types[pos] != "message":
            return False
        role = idx.roles[pos]
        if role == "assistant":
            entry = idx.read_entry(pos)
            if (entry.get("message") or {}).get("stopReason") != "toolUse":
                return False
        elif role not in ("user", "toolResult"):
            return False
        try:
            mtime = os.stat(idx.path).st_mtime
        except OSError:
            return False
        return ((now or time.time()) - mtime) < self.busy_timeout

    # ---------------------------------------------------------------- writes

    def _append(self, live: LiveSession, entries: list[dict[str, Any]]) -> list[str]:
        idx = live.index
        if idx.version < 3:
            if migrate_in_place(idx):
                idx.refresh()  # ids are kept; the header changed
        append_lines(idx.path, entries)
        appended, _ = idx.refresh()
        live.leaf_id, live.explicit = idx.last_id, False
        self.state.forget_leaf(idx.path)
        return appended

    def _entry(self, live: LiveSession, etype: str, parent: str | None, **fields: Any) -> dict[str, Any]:
        taken = live.index.by_id
        return {"type": etype, **fields, "id": new_id(taken), "parentId": parent, "timestamp": now_iso()}

    def _reorder(self, e: dict[str, Any]) -> dict[str, Any]:
        """Key order as pi writes entries: type, id, parentId, timestamp, then the rest."""
        head = {k: e[k] for k in ("type", "id", "parentId", "timestamp")}
        return {**head, **{k: v for k, v in e.items() if k not in head}}

    def apply(self, live: LiveSession, op: dict[str, Any]) -> list[str]:
        """Carry out one write; parents are resolved now, against the current leaf."""
        kind = op["op"]
        leaf = live.leaf_id
        if kind == "label":
            if op["targetId"] == SUMMARY_PLACEHOLDER:
                op = {**op, "targetId": self._last_summary}
            if op["targetId"] not in live.index.by_id:
                raise EntryNotFound(f"no entry {op['targetId']} in {live.path}")
            e = self._entry(live, "label", leaf, targetId=op["targetId"], label=op.get("label") or None)
            if e["label"] is None:
                e.pop("label")
            return self._append(live, [self._reorder(e)])
        if kind == "name":
            e = self._entry(live, "session_info", leaf, name=op["name"].strip())
            return self._append(live, [self._reorder(e)])
        if kind == "summary":
            parent = op.get("parentId")
            e = self._entry(
                live,
                "branch_summary",
                parent,
                fromId=parent if parent is not None else "root",
                summary=op["summary"],
                details=op["details"],
            )
            ids = self._append(live, [self._reorder(e)])
            self._last_summary = ids[-1]
            return ids
        if kind == "compaction":
            e = self._entry(
                live,
                "compaction",
                leaf,
                summary=op["summary"],
                firstKeptEntryId=op["firstKeptEntryId"],
                tokensBefore=op["tokensBefore"],
                details=op["details"],
            )
            return self._append(live, [self._reorder(e)])
        if kind == "leaf":
            target = op.get("leafId")
            e = self._entry(live, "custom", target, customType=LEAF_MARKER, data={"leafId": target})
            return self._append(live, [self._reorder(e)])
        raise WriteFailed(f"unknown write {kind!r}")

    def append_own(self, live: LiveSession, etype: str, fields: dict[str, Any]) -> str:
        """An entry of the server's own turn (message, model or thinking change): a child of the leaf, now."""
        e = self._entry(live, etype, live.leaf_id, **fields)
        return self._append(live, [self._reorder(e)])[-1]

    def new_session(self, cwd: str) -> str:
        """pi's SessionManager.create layout: <root>/--<cwd>--/<timestamp>_<uuid>.jsonl, header only."""
        rest = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
        safe = "--" + rest.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"
        directory = os.path.join(self.roots[0], safe)
        os.makedirs(directory, exist_ok=True)
        return new_session_file(directory, {"cwd": cwd}, [])

    def write(self, live: LiveSession, op: dict[str, Any]) -> tuple[list[str], bool]:
        """Apply now, or queue when the session is busy. Returns (new ids, queued)."""
        pending = self.state.pending(live.path)
        if pending or self.busy(live):
            self.state.set_pending(live.path, [*pending, op])
            return [], True
        return self.apply(live, op), False

    def flush(self, live: LiveSession, force: bool = False) -> list[str]:
        """Flush the pending queue in order when the turn is over (or timed out)."""
        ops = self.state.pending(live.path)
        if not ops or (self.busy(live) and not force):
            return []
        flushed: list[str] = []
        rest = list(ops)
        while rest:
            op = rest[0]
            try:
                flushed += self.apply(live, op)
            except EntryNotFound:
                pass  # its target is gone (file rewritten): drop it
            rest.pop(0)
            self.state.set_pending(live.path, rest)
        return flushed

    # ---------------------------------------------------------------- operations

    def navigate_target(self, live: LiveSession, target: str | None) -> tuple[str | None, str | None]:
        """pi's navigateTree: (new leaf, editor text). A user or custom message gives its text back."""
        idx = live.index
        if target is None:
            return None, None
        pos = self.entry_pos(live, target)
        entry = idx.read_entry(pos)
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else None
        parent = idx.parents[pos] if idx.parents[pos] in idx.by_id else None
        if entry.get("type") == "message" and msg and msg.get("role") == "user":
            return parent, join_text(msg.get("content"), "")
        if entry.get("type") == "custom_message":
            return parent, join_text(entry.get("content"), "")
        return target, None

    def switch(
        self,
        live: LiveSession,
        target: str | None,
        label: str | None,
        persist: bool,
        summary: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Move the leaf as pi's navigateTree does; with a summary, append it under the new leaf."""
        idx = live.index
        new_leaf, editor_text = self.navigate_target(live, target)
        live.leaf_id, live.explicit = new_leaf, True
        self.state.set_leaf(live.path, new_leaf, idx.size)
        queued = False
        summary_id = None
        if summary is not None:
            details = {"readFiles": summary["readFiles"], "modifiedFiles": summary["modifiedFiles"]}
            ids, q = self.write(
                live, {"op": "summary", "parentId": new_leaf, "summary": summary["summary"], "details": details}
            )
            summary_id, queued = (ids[-1] if ids else None), q
        label_target = (summary_id or SUMMARY_PLACEHOLDER) if summary is not None else target
        if label is not None and label_target is not None:
            # as pi's appendLabelChange: a child of the current leaf, which moves onto it
            _, q = self.write(live, {"op": "label", "targetId": label_target, "label": label})
            queued = queued or q
        if persist:
            _, q = self.write(live, {"op": "leaf", "leafId": summary_id or new_leaf})
            queued = queued or q
        out: dict[str, Any] = {"leafId": live.leaf_id, "queued": queued}
        if editor_text is not None:
            out["editorText"] = editor_text
        if summary is not None:
            out["summaryEntryId"] = summary_id
        return out

    def fork(self, live: LiveSession, leaf_id: str) -> str:
        """pi's createBranchedSession: a new file holding only the path, labels re-created."""
        idx = live.index
        pos = self.entry_pos(live, leaf_id)
        path = [e for e in idx.read_entries(path_to(idx, pos)) if e.get("type") != "label"]
        on_path = {e.get("id") for e in path}
        taken = set(on_path)
        labels = []
        parent = path[-1].get("id") if path else None
        for target, (label, ts) in idx.labels.items():
            if target in on_path:
                lid = new_id(taken)
                taken.add(lid)
                labels.append(
                    {
                        "type": "label",
                        "id": lid,
                        "parentId": parent,
                        "timestamp": ts,
                        "targetId": target,
                        "label": label,
                    }
                )
                parent = lid
        header = {"cwd": idx.header.cwd if idx.header else "", "parentSession": idx.path}
        return new_session_file(os.path.dirname(idx.path), header, path + labels)
