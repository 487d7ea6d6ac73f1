"""Moving through the tree as pi does: branch switches (with a summary on request) and forks."""

from __future__ import annotations

import os
from typing import Any

from pi_server.live import ops as oplib
from pi_server.live.queue import Written, write
from pi_server.live.session import LiveSession
from pi_server.store import entry_types as et
from pi_server.store.content import join_text
from pi_server.store.state import StateDir
from pi_server.store.writer import new_id, new_session_file
from pi_server.tree.paths import path_to


def navigate_target(live: LiveSession, target: str | None) -> tuple[str | None, str | None]:
    """pi's navigateTree: (new leaf, editor text). A user or custom message gives its text back."""
    idx = live.index
    if target is None:
        return None, None
    pos = live.entry_pos(target)
    entry = idx.read_entry(pos)
    msg = entry.get("message") if isinstance(entry.get("message"), dict) else None
    parent = idx.parents[pos] if idx.parents[pos] in idx.by_id else None
    if entry.get("type") == et.MESSAGE and msg and msg.get("role") == "user":
        return parent, join_text(msg.get("content"), "")
    if entry.get("type") == et.CUSTOM_MESSAGE:
        return parent, join_text(entry.get("content"), "")
    return target, None


def switch(
    state: StateDir,
    live: LiveSession,
    target: str | None,
    *,
    label: str | None,
    persist: bool,
    summary: dict[str, Any] | None,
    busy: bool,
) -> tuple[dict[str, Any], Written]:
    """Move the leaf as pi's navigateTree does; with a summary, append it under the new leaf."""
    new_leaf, editor_text = navigate_target(live, target)
    before = live.leaf_id, live.explicit
    if summary is not None:
        summary = {**summary, "fromId": live.leaf_id}  # pi 1.6.0: the leaf navigated away from
    live.leaf_id, live.explicit = new_leaf, True
    try:
        return _switch_writes(state, live, target, new_leaf, editor_text, label, persist, summary, busy)
    except Exception:
        if live.explicit:  # nothing landed: the switch did not happen
            live.leaf_id, live.explicit = before
        raise


def _switch_writes(
    state: StateDir,
    live: LiveSession,
    target: str | None,
    new_leaf: str | None,
    editor_text: str | None,
    label: str | None,
    persist: bool,
    summary: dict[str, Any] | None,
    busy: bool,
) -> tuple[dict[str, Any], Written]:
    ops: list[oplib.Op] = []
    if summary is not None:
        details = {"readFiles": summary["readFiles"], "modifiedFiles": summary["modifiedFiles"]}
        ops.append(
            oplib.SummaryOp(
                parentId=new_leaf,
                summary=summary["summary"],
                details=details,
                label=label,
                persist=persist,
                fromId=summary.get("fromId"),
                usage=summary.get("usage"),
            )
        )
    else:
        if label is not None and target is not None:
            # as pi's appendLabelChange: a child of the current leaf, which moves onto it
            ops.append(oplib.LabelOp(targetId=target, label=label))
        if persist:
            ops.append(oplib.LeafOp(leafId=new_leaf))
    written = write(state, live, ops, busy) if ops else Written()
    summary_id = written.ids[0][0] if summary is not None and written.ids[0] else None
    if live.explicit:  # nothing appended: the switch itself is the state to keep
        state.set_leaf(live.path, live.leaf_id, live.index.size)
    out: dict[str, Any] = {"leafId": live.leaf_id, "queued": written.queued}
    if editor_text is not None:
        out["editorText"] = editor_text
    if summary is not None:
        out["summaryEntryId"] = summary_id
    return out, written


def fork(live: LiveSession, leaf_id: str) -> str:
    """pi's createBranchedSession: a new file holding the path to `leaf_id`, labels re-created.

    Label entries leave the path and what follows each is re-chained to the
    entry before it; a compaction that kept from a label keeps from the entry
    that replaced it.
    """
    idx = live.index
    pos = live.entry_pos(leaf_id)
    path: list[dict[str, Any]] = []
    replaced: dict[str, str] = {}  # label id -> the retained entry after it
    pending: list[str] = []
    parent: str | None = None
    for e in idx.read_entries(path_to(idx, pos)):
        if e.get("type") == et.LABEL:
            pending.append(e.get("id"))  # type: ignore[arg-type]
            continue
        for label_id in pending:
            replaced[label_id] = e.get("id")  # type: ignore[assignment]
        pending.clear()
        e = {**e, "parentId": parent}
        if e.get("type") == et.COMPACTION and e.get("firstKeptEntryId") != e.get("id"):
            kept = e.get("firstKeptEntryId")
            e["firstKeptEntryId"] = replaced.get(kept, kept) if isinstance(kept, str) else kept
        path.append(e)
        parent = e.get("id")
    on_path = {e.get("id") for e in path}
    taken = set(on_path)
    labels = []
    for target, (label, ts) in idx.labels.items():
        if target in on_path:
            lid = new_id(taken)
            taken.add(lid)
            labels.append(
                {"type": et.LABEL, "id": lid, "parentId": parent, "timestamp": ts, "targetId": target, "label": label}
            )
            parent = lid
    cwd = idx.header.cwd if idx.header else ""
    header = {"cwd": os.path.abspath(cwd) if cwd else cwd, "parentSession": os.path.abspath(idx.path)}
    return new_session_file(os.path.dirname(idx.path), header, path + labels, idx.roots)
