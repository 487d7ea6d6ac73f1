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
from pi_server.store.records import COMPACTION, MODEL, THINKING, setting_kind
from pi_server.tree.paths import path_to


@dataclass(slots=True)
class SessionContext:
    messages: list[dict[str, Any]]
    entry_ids: list[str]
    model: dict[str, Any] | None
    thinking_level: Any
    sources: list[int]  # index into the given path of the entry behind each message
    positions: list[int] | None = None  # index positions of those entries, when built from an index


def _summary_message(role: str, e: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """pi's create*Message: the given fields (absent ones left out, as JSON drops undefined) and the time."""
    m: dict[str, Any] = {"role": role}
    for k in keys:
        if k in e:
            m[k] = e[k]
    m["timestamp"] = js_date_json(e.get("timestamp"))
    return m


def custom_message(e: dict[str, Any]) -> dict[str, Any]:
    return _summary_message("custom", e, ("customType", "content", "display", "details"))


def branch_summary_message(e: dict[str, Any]) -> dict[str, Any]:
    return _summary_message("branchSummary", e, ("summary", "fromId"))


def compaction_summary_message(e: dict[str, Any]) -> dict[str, Any]:
    return _summary_message("compactionSummary", e, ("summary", "tokensBefore"))


def entry_message(e: dict[str, Any], *, empty_summaries: bool = False) -> dict[str, Any] | None:
    """The message an entry stands for. Contexts drop empty branch summaries;
    pi's summarizers (`empty_summaries=True`) keep them."""
    t = e.get("type")
    if t == "message":
        m = e.get("message")
        return m if isinstance(m, dict) else None
    if t == "custom_message":
        return custom_message(e)
    if t == "branch_summary" and (empty_summaries or e.get("summary")):
        return branch_summary_message(e)
    return None


def context_for_path(path: list[dict[str, Any]]) -> SessionContext:
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    for e in path:
        t = e.get("type")
        if t == "message":
            m = e.get("message")
            if type(m) is dict and m.get("role") == "assistant":
                model = _model(m.get("provider"), m.get("model"))
        elif t == "thinking_level_change":
            thinking = e.get("thinkingLevel")
        elif t == "model_change":
            model = _model(e.get("provider"), e.get("modelId"))
        elif t == "compaction":
            compaction = e

    messages: list[dict[str, Any]] = []
    ids: list[str] = []
    sources: list[int] = []
    if compaction is not None:
        messages.append(compaction_summary_message(compaction))
        ids.append(compaction.get("id"))  # type: ignore[arg-type]
        cid = compaction.get("id")
        cidx = next((i for i, e in enumerate(path) if e.get("type") == "compaction" and e.get("id") == cid), -1)
        sources.append(cidx)
        kept = compaction.get("firstKeptEntryId")
        start = next((i for i in range(max(cidx, 0)) if path[i].get("id") == kept), cidx)
        span = [*range(start, max(cidx, 0)), *range(cidx + 1, len(path))]
    else:
        span = range(len(path))
    for i in span:
        e = path[i]
        t = e.get("type")
        if t == "message":
            m = e.get("message")
            if type(m) is not dict:
                continue
        elif t == "custom_message" or t == "branch_summary":
            m = entry_message(e)
            if m is None:
                continue
        else:
            continue
        messages.append(m)
        ids.append(e.get("id"))  # type: ignore[arg-type]
        sources.append(i)
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

    Only the entries that can change the answer are read: the last settings
    entries, the last compaction, and the message entries after its first kept
    entry. The result is the one `context_for_path` gives for the whole path.
    """
    if before_first or not idx.ids:
        return SessionContext([], [], None, "off", [], [])
    leaf = idx.by_id[leaf_id] if leaf_id is not None else len(idx.ids) - 1
    chosen = _select_from_ancestry(idx, leaf) if not idx.irregular else None
    if chosen is None:
        chosen = _select_by_walk(idx, path_to(idx, leaf))
    ctx = context_for_path(idx.cached_entries(chosen))
    ctx.positions = [chosen[i] for i in ctx.sources]
    ctx.entry_ids = [idx.ids[p] for p in ctx.positions]
    return ctx


def _select_by_walk(idx: SessionIndex, path: list[int]) -> list[int]:
    types, roles = idx.types, idx.roles
    last_model = last_thinking = last_compaction = -1
    for i, pos in enumerate(path):
        kind = setting_kind(types[pos], roles[pos])
        if kind == MODEL:
            last_model = i
        elif kind == THINKING:
            last_thinking = i
        elif kind == COMPACTION:
            last_compaction = i
    start = 0
    keep: set[int] = {i for i in (last_model, last_thinking, last_compaction) if i >= 0}
    if last_compaction >= 0:
        kept_pos = _first_kept(idx, path[last_compaction])
        where = {pos: i for i, pos in enumerate(path[:last_compaction])} if kept_pos is not None else {}
        if kept_pos in where:
            start = where[kept_pos]
            keep.add(start)
        else:
            start = last_compaction  # nothing before the compaction is kept
    keep.update(i for i in range(start, len(path)) if types[path[i]] in _PRODUCES)
    return [path[i] for i in sorted(keep)]


def _first_kept(idx: SessionIndex, comp: int) -> int | None:
    kept = idx.cached_entries([comp])[0].get("firstKeptEntryId")
    return idx.by_id.get(kept) if isinstance(kept, str) else None


def _parent(idx: SessionIndex, pos: int) -> int:
    p = idx.parents[pos]
    return idx.by_id.get(p, -1) if p is not None else -1


def _select_from_ancestry(idx: SessionIndex, leaf: int) -> list[int] | None:
    """Same selection as _select_by_walk, walking only the compaction window."""
    comp = idx.anc_compaction[leaf]
    if comp < 0:
        return None  # every message on the path counts: walk it
    types = idx.types
    window: list[int] = []  # compaction .. leaf, leaf first
    cur = leaf
    while cur != comp:
        if cur == -1 or len(window) > len(idx):
            return None
        window.append(cur)
        cur = _parent(idx, cur)
    window.append(comp)
    window.reverse()
    kept_pos = _first_kept(idx, comp)
    before: list[int] = []  # first kept .. compaction (exclusive), if it is on the path
    if kept_pos is not None:
        cur = _parent(idx, comp)
        steps = 0
        while cur != -1 and cur != kept_pos and steps <= len(idx):
            before.append(cur)
            cur = _parent(idx, cur)
            steps += 1
        if cur == kept_pos:
            before.append(kept_pos)
            before.reverse()
        else:
            before = []
    settings = [p for p in (idx.anc_model[leaf], idx.anc_thinking[leaf]) if p >= 0]
    on_window = before + window
    inside = set(on_window)
    chosen = sorted(p for p in settings if p not in inside)  # earlier on the path than the window
    wanted = set(settings) | {kept_pos, comp}
    chosen += [p for p in on_window if types[p] in _PRODUCES or p in wanted]
    return chosen
