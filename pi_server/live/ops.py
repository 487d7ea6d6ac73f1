"""The writes a client asks for, typed; queued as they are while a turn runs.

A queued write is stored in the state dir as `{"op": kind, ...}`; its parent is
resolved when it is applied, against the leaf of that moment.
"""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server.live.appends import SessionAppender, SystemInForce
from pi_server.live.errors import EntryNotFound


class LabelOp(msgspec.Struct, tag="label", tag_field="op"):
    targetId: str
    label: str | None = None


class NameOp(msgspec.Struct, tag="name", tag_field="op"):
    name: str


class SummaryOp(msgspec.Struct, tag="summary", tag_field="op"):
    """A branch summary under `parentId`; then, on request, its label and a leaf marker on it."""

    parentId: str | None
    summary: str
    details: dict[str, Any]
    label: str | None = None
    persist: bool = False
    fromId: str | None = None  # the leaf navigated away from (pi 1.6.0); None: the root
    usage: dict[str, Any] | None = None


class CompactionOp(msgspec.Struct, tag="compaction", tag_field="op"):
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    details: dict[str, Any]
    usage: dict[str, Any] | None = None
    systemInForce: SystemInForce | None = None  # as the preparation found it (appends.py)


class LeafOp(msgspec.Struct, tag="leaf", tag_field="op"):
    leafId: str | None


class EditOp(msgspec.Struct, tag="context_edit", tag_field="op"):
    targetId: str
    replacement: dict[str, Any] | None


Op = LabelOp | NameOp | SummaryOp | CompactionOp | LeafOp | EditOp
OLD_SUMMARY_LABEL = "<the summary entry>"  # how earlier versions queued a label on a summary


def apply(op: Op, appender: SessionAppender) -> list[str]:
    """Append the entries of one write; returns their ids."""
    live = appender.live
    if isinstance(op, LabelOp):
        if op.targetId not in live.index.by_id:
            raise EntryNotFound(f"no entry {op.targetId} in {live.path}")
        return [appender.append_label(op.targetId, op.label)]
    if isinstance(op, NameOp):
        return [appender.append_session_name(op.name)]
    if isinstance(op, SummaryOp):
        ids = [appender.append_branch_summary(op.parentId, op.summary, op.details, op.fromId, op.usage)]
        if op.label is not None:
            ids.append(appender.append_label(ids[0], op.label))
        if op.persist:
            ids.append(appender.append_leaf_marker(ids[0]))
        return ids
    if isinstance(op, CompactionOp):
        found = op.systemInForce
        return [appender.append_compaction(op.summary, op.firstKeptEntryId, op.tokensBefore, op.details, op.usage, found)]
    if isinstance(op, EditOp):
        return [appender.append_context_edit(op.targetId, op.replacement)]
    return [appender.append_leaf_marker(op.leafId)]


def encode(ops: list[Op]) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(op) for op in ops]


def decode(raw: list[Any]) -> list[Op]:
    """Queued writes as stored; unreadable ones are dropped, an old summary label folded in."""
    out: list[Op] = []
    for item in raw:
        try:
            op = msgspec.convert(item, Op)
        except (msgspec.ValidationError, TypeError):
            continue
        if isinstance(op, LabelOp) and op.targetId == OLD_SUMMARY_LABEL:
            if out and isinstance(out[-1], SummaryOp):
                out[-1].label = op.label or ""
            continue
        out.append(op)
    return out
