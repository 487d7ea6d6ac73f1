"""pi's buildSessionContext: the linear messages for a leaf of the tree.

Settings are replayed along the path (thinking level, model from model_change
and assistant messages); the last compaction on the path contributes its
summary first, then the kept entries from firstKeptEntryId, then everything
after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_server.jsutil import js_date_json
from pi_server.store.index import SessionIndex
from pi_server.tree.paths import path_to


@dataclass(slots=True)
class SessionContext:
    messages: list[dict[str, Any]]
    entry_ids: list[str]
    model: dict[str, Any] | None
    thinking_level: Any


def _custom_message(e: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "custom"}
    for k in ("customType", "content", "display", "details"):
        if k in e:
            m[k] = e[k]
    m["timestamp"] = js_date_json(e.get("timestamp"))
    return m


def _to_message(e: dict[str, Any]) -> dict[str, Any] | None:
    t = e.get("type")
    if t == "message":
        m = e.get("message")
        return m if isinstance(m, dict) else None
    if t == "custom_message":
        return _custom_message(e)
    if t == "branch_summary" and e.get("summary"):
        m: dict[str, Any] = {"role": "branchSummary", "summary": e["summary"]}
        if "fromId" in e:
            m["fromId"] = e["fromId"]
        m["timestamp"] = js_date_json(e.get("timestamp"))
        return m
    return None


def context_for_path(path: list[dict[str, Any]]) -> SessionContext:
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    for e in path:
        t = e.get("type")
        if t == "thinking_level_change":
            thinking = e.get("thinkingLevel")
        elif t == "model_change":
            model = _model(e.get("provider"), e.get("modelId"))
        elif t == "message" and isinstance(e.get("message"), dict) and e["message"].get("role") == "assistant":
            model = _model(e["message"].get("provider"), e["message"].get("model"))
        elif t == "compaction":
            compaction = e

    messages: list[dict[str, Any]] = []
    ids: list[str] = []

    def add(e: dict[str, Any]) -> None:
        m = _to_message(e)
        if m is not None:
            messages.append(m)
            ids.append(e.get("id"))  # type: ignore[arg-type]

    if compaction is not None:
        summary: dict[str, Any] = {"role": "compactionSummary"}
        if "summary" in compaction:
            summary["summary"] = compaction["summary"]
        if "tokensBefore" in compaction:
            summary["tokensBefore"] = compaction["tokensBefore"]
        summary["timestamp"] = js_date_json(compaction.get("timestamp"))
        messages.append(summary)
        ids.append(compaction.get("id"))  # type: ignore[arg-type]
        cidx = next(
            (i for i, e in enumerate(path) if e.get("type") == "compaction" and e.get("id") == compaction.get("id")),
            -1,
        )
        kept = compaction.get("firstKeptEntryId")
        found = False
        for e in path[: max(cidx, 0)]:
            if e.get("id") == kept:
                found = True
            if found:
                add(e)
        for e in path[cidx + 1 :]:
            add(e)
    else:
        for e in path:
            add(e)
    return SessionContext(messages, ids, model, thinking)


def _model(provider: Any, model_id: Any) -> dict[str, Any]:
    m: dict[str, Any] = {}
    if provider is not None:
        m["provider"] = provider
    if model_id is not None:
        m["modelId"] = model_id
    return m


def build_context(idx: SessionIndex, leaf_id: str | None, *, before_first: bool = False) -> SessionContext:
    """Context for a leaf (None: the file's last entry; before_first: empty)."""
    if before_first or not idx.ids:
        return SessionContext([], [], None, "off")
    leaf = idx.by_id[leaf_id] if leaf_id is not None else len(idx.ids) - 1
    positions = path_to(idx, leaf)
    return context_for_path(idx.read_entries(positions))
