"""The server's appends, one typed call per entry kind, shaped as pi's SessionManager writes them.

Each `append_*` builds `{type, id, parentId, timestamp, ...}` in pi's key order
and hands it to one `_append_entry`; entries hang under the current leaf unless
pi's own call takes an explicit parent (a branch summary, the leaf marker).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from pi_server.context.build import build_context
from pi_server.jsutil import js_date_json, js_trim
from pi_server.live.errors import EntryNotFound, Refused
from pi_server.live.session import LiveSession
from pi_server.llm.transcript import current_system_message
from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.store.records import NotASession
from pi_server.store.state import StateDir
from pi_server.store.writer import append_lines, migrate_in_place, new_id, now_iso
from pi_server.tree.paths import path_to

LEAF_MARKER = "pi-server/leaf"
_LINE_BREAKS = re.compile(r"[\r\n]+")


class SystemInForce(msgspec.Struct):
    """The system message in force at `leaf` of the file as it was at `size` bytes."""

    leaf: str | None
    size: int
    system: dict[str, Any] | None


def system_in_force(idx: SessionIndex, leaf: str | None) -> SystemInForce:
    """pi's getCurrentSystemMessage of the context at `leaf` (any thread: it only reads `idx`)."""
    # system messages are never left opaque: the others need not be parsed to find them
    ctx = build_context(idx, leaf, opaque=True) if idx.ids else None
    system = current_system_message([m for m in ctx.messages if type(m) is dict]) if ctx else None
    return SystemInForce(leaf, idx.size, system)


class SessionAppender:
    def __init__(self, live: LiveSession, state: StateDir) -> None:
        self.live = live
        self.state = state
        self.appended: list[str] = []  # every id the file gained, ours and any a concurrent pi wrote
        self._others = False  # others' entries read with our last append, not yet reported by catch_up

    def append_message(self, message: dict[str, Any]) -> str:
        return self._append_entry(et.MESSAGE, self.live.leaf_id, message=message)

    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append_entry(et.MODEL_CHANGE, self.live.leaf_id, provider=provider, modelId=model_id)

    def append_thinking_level_change(self, level: str) -> str:
        return self._append_entry(et.THINKING_LEVEL_CHANGE, self.live.leaf_id, thinkingLevel=level)

    def record_thinking_level(self) -> str | None:
        """pi's _recordThinkingLevel before a prompt: after a jump above a thinking change, the
        branch's last thinking_level_change differs from the level in use and the level in use
        is recorded on the branch again. The level in use is the file's latest (as last set)
        once the leaf was moved by a switch; a session continued at its last entry uses its
        branch's level, as pi on resume. Returns the id written, if any."""
        live = self.live
        if not live.explicit:
            return None
        idx = live.index
        types = idx.types
        latest = next((p for p in range(len(idx) - 1, -1, -1) if types[p] == et.THINKING_LEVEL_CHANGE), -1)
        leaf = idx.by_id.get(live.leaf_id) if live.leaf_id is not None else None
        if latest < 0 or leaf is None:
            return None
        on_branch = next((p for p in reversed(path_to(idx, leaf)) if types[p] == et.THINKING_LEVEL_CHANGE), -1)
        if on_branch < 0 or on_branch == latest:
            return None
        level = idx.read_entry(latest).get("thinkingLevel")
        if isinstance(level, str) and level != idx.read_entry(on_branch).get("thinkingLevel"):
            return self.append_thinking_level_change(level)
        return None

    def append_label(self, target_id: str, label: str | None) -> str:
        """pi's appendLabelChange: an empty label clears (the field is left out)."""
        fields: dict[str, Any] = {"targetId": target_id}
        if label:
            fields["label"] = label
        return self._append_entry(et.LABEL, self.live.leaf_id, **fields)

    def append_session_name(self, name: str) -> str:
        """pi 1.6.0's appendSessionInfo: line breaks become one space, then the name is trimmed."""
        return self._append_entry(et.SESSION_INFO, self.live.leaf_id, name=js_trim(_LINE_BREAKS.sub(" ", name)))

    def append_branch_summary(
        self,
        branch_from: str | None,
        summary: str,
        details: dict[str, Any],
        from_id: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> str:
        """pi 1.6.0's branchWithSummary: the summary hangs under the entry the branch continues
        from; `fromId` is the leaf navigated away from."""
        fields: dict[str, Any] = {"fromId": from_id if from_id is not None else "root", "summary": summary}
        fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        return self._append_entry(et.BRANCH_SUMMARY, branch_from, **fields, fromHook=False)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: dict[str, Any],
        usage: dict[str, Any] | None = None,
        found: SystemInForce | None = None,
    ) -> str:
        """pi 1.6.0's appendCompaction: the prompt state in force is stored with it (stamped with
        the entry's time); a retain-none compaction (no kept entry) keeps from itself. `found`:
        that state as the compaction's preparation found it, used while the file is unchanged
        (finding it walks the whole branch: seconds on a session of a million entries)."""
        idx = self.live.index
        timestamp = now_iso()
        if found is not None and found.leaf == self.live.leaf_id and found.size == idx.size:
            system = found.system
        else:
            system = system_in_force(idx, self.live.leaf_id).system
        fields: dict[str, Any] = {"timestamp": timestamp, "summary": summary}
        fields["firstKeptEntryId"] = first_kept_entry_id
        fields["tokensBefore"] = tokens_before
        fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        fields["fromHook"] = False
        if system:
            fields["systemMessage"] = {**system, "timestamp": js_date_json(timestamp)}
        return self._append_entry(et.COMPACTION, self.live.leaf_id, **fields)

    def append_context_edit(self, target_id: str, replacement: dict[str, Any] | None) -> str:
        """pi 1.6.0's appendContextEdit (see `checked_edit`)."""
        replacement = checked_edit(self.live, target_id, replacement)
        return self._append_entry(et.CONTEXT_EDIT, self.live.leaf_id, targetId=target_id, replacement=replacement)

    def append_leaf_marker(self, leaf_id: str | None) -> str:
        """A custom entry under the chosen leaf, so `pi --resume` continues there."""
        return self._append_entry(et.CUSTOM, leaf_id, customType=LEAF_MARKER, data={"leafId": leaf_id})

    def _append_entry(self, etype: str, parent: str | None, **fields: Any) -> str:
        idx = self.live.index
        entry = {"type": etype, "id": new_id(idx.by_id), "parentId": parent, "timestamp": now_iso(), **fields}
        if etype == et.COMPACTION and entry.get("firstKeptEntryId") is None:
            entry["firstKeptEntryId"] = entry["id"]  # pi 1.6.0: retain none, keep from the compaction itself
        if idx.version < 3 and migrate_in_place(idx):
            idx.refresh()  # ids are kept; the header changed
        append_lines(idx.path, [entry], idx.roots)
        # the entry landed: nothing after this may report the write as failed
        try:
            got = idx.refresh()[0]
            self.appended += got
            # what pi (or another server) appended right behind this entry: catch_up reports it
            self._others = self._others or any(i != entry["id"] for i in got)
            self.live.leaf_id = idx.last_id
        except (OSError, NotASession):
            self.live.leaf_id = entry["id"]
        self.live.explicit = False
        self.state.forget_leaf(idx.path)
        return entry["id"]

    def catch_up(self) -> bool:
        """Read what others appended (pi, another server) before writing under the leaf,
        as pi's reload would: appended entries move the leaf. True when the file changed, here
        or in the re-read after our last append (so a turn pi started meanwhile is seen)."""
        appended, reset = self.live.index.refresh()
        if appended or reset:
            self.appended += appended
            self.live.leaf_id, self.live.explicit = self.live.index.last_id, False
        changed, self._others = bool(appended or reset) or self._others, False
        return changed


def first_entries(provider: str, model_id: str, level: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What pi's SessionManager holds back until the conversation starts and then writes with
    the header in one go: the model, the thinking level, then the messages (system, user)."""
    out: list[dict[str, Any]] = []
    taken: set[str] = set()
    parent: str | None = None
    kinds: list[tuple[str, dict[str, Any]]] = [
        (et.MODEL_CHANGE, {"provider": provider, "modelId": model_id}),
        (et.THINKING_LEVEL_CHANGE, {"thinkingLevel": level}),
    ]
    kinds += [(et.MESSAGE, {"message": m}) for m in messages]
    for etype, fields in kinds:
        eid = new_id(taken)
        taken.add(eid)
        out.append({"type": etype, "id": eid, "parentId": parent, "timestamp": now_iso(), **fields})
        parent = eid
    return out


def checked_edit(live: LiveSession, target_id: str, replacement: dict[str, Any] | None) -> dict[str, Any] | None:
    """What pi 1.6.0's appendContextEdit accepts: omit (None) or replace the content of a
    user/assistant/toolResult message or a custom message on the active branch. Returns the
    replacement as stored (a string for an assistant or tool result becomes one text block)."""
    if replacement is not None and not isinstance(replacement.get("content"), str | list):
        raise Refused("Context edit replacement must be null or contain string/array content")
    idx = live.index
    pos = idx.by_id.get(target_id)
    if pos is None:
        raise EntryNotFound(f"Entry {target_id} not found")
    leaf = idx.by_id.get(live.leaf_id) if live.leaf_id is not None else None
    if leaf is None or pos not in path_to(idx, leaf):
        raise Refused(f"Entry {target_id} is not on the active branch")
    etype, role = idx.types[pos], idx.roles[pos]
    if not (etype == et.CUSTOM_MESSAGE or (etype == et.MESSAGE and role in ("user", "assistant", "toolResult"))):
        raise Refused(f"Entry {target_id} does not contribute editable model content")
    if replacement is not None and role in ("assistant", "toolResult") and isinstance(replacement["content"], str):
        return {"content": [{"type": "text", "text": replacement["content"]}]}
    return replacement
