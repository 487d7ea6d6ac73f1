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
    sources: list[int]  # index into the given path of the entry behind each message
    positions: list[int] | None = None  # index positions of those entries, when built from an index


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
    sources: list[int] = []
    where = {id(e): i for i, e in enumerate(path)}

    def add(e: dict[str, Any]) -> None:
        m = _to_message(e)
        if m is not None:
            messages.append(m)
            ids.append(e.get("id"))  # type: ignore[arg-type]
            sources.append(where[id(e)])

    if compaction is not None:
        summary: dict[str, Any] = {"role": "compactionSummary"}
        if "summary" in compaction:
            summary["summary"] = compaction["summary"]
        if "tokensBefore" in compaction:
            summary["tokensBefore"] = compaction["tokensBefore"]
        summary["timestamp"] = js_date_json(compaction.get("timestamp"))
        messages.append(summary)
        ids.append(compaction.get("id"))  # type: ignore[arg-type]
        sources.append(where[id(compaction)])
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
    return SessionContext(messages, ids, model, thinking, sources)


def _model(provider: Any, model_id: Any) -> dict[str, Any]:
    m: dict[str, Any] = {}
    if provider is not None:
        m["provider"] = provider
    if model_id is not None:
        m["modelId"] = model_id
    return m


_PRODUCES = frozenset(("message", "custom_message", "branch_summary"))


def build_context(idx: SessionIndex, leaf_id: str | None, *, before_first: bool = False) -> SessionContext:
    """Context for a leaf (None: the file's last entry; before_first: empty).

    Only the entries that can change the answer are read from disk: the last
    settings entries, the last compaction, and the message entries after its
    first kept entry. The result is the one `context_for_path` gives for the
    whole path.
    """
    if before_first or not idx.ids:
        return SessionContext([], [], None, "off", [], [])
    leaf = idx.by_id[leaf_id] if leaf_id is not None else len(idx.ids) - 1
    path = path_to(idx, leaf)
    types, roles = idx.types, idx.roles
    last_model = last_thinking = last_compaction = -1
    for i, pos in enumerate(path):
        t = types[pos]
        if t == "message":
            if roles[pos] == "assistant":
                last_model = i
        elif t == "model_change":
            last_model = i
        elif t == "thinking_level_change":
            last_thinking = i
        elif t == "compaction":
            last_compaction = i
    start = 0
    keep: set[int] = {i for i in (last_model, last_thinking, last_compaction) if i >= 0}
    if last_compaction >= 0:
        comp = idx.read_entry(path[last_compaction])
        kept = comp.get("firstKeptEntryId")
        kept_pos = idx.by_id.get(kept) if isinstance(kept, str) else None
        where = {pos: i for i, pos in enumerate(path[:last_compaction])} if kept_pos is not None else {}
        if kept_pos in where:
            start = where[kept_pos]
            keep.add(start)
        else:
            start = last_compaction  # nothing before the compaction is kept
    keep.update(i for i in range(start, len(path)) if types[path[i]] in _PRODUCES)
    chosen = [path[i] for i in sorted(keep)]
    ctx = context_for_path(idx.cached_entries(chosen))
    ctx.positions = [chosen[i] for i in ctx.sources]
    ctx.entry_ids = [idx.ids[p] for p in ctx.positions]
    return ctx
