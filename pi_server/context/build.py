"""pi's buildSessionContext: the linear messages for a leaf of the tree.

Settings come from the one settings replay (context/settings.py); the last
compaction on the path contributes its summary first, then the kept entries
from firstKeptEntryId, then everything after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from pi_server.context.settings import Settings, last_of_each_kind, replay, setting_positions
from pi_server.jsutil import js_date_json, js_key
from pi_server.store import entry_types as et
from pi_server.store import slices
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
    edits: list[int] | None = None  # per message: the context edit applied to it (index into the path, -1: none)
    edit_positions: list[int] | None = None  # the same as index positions, when built from an index
    edits_in_force: dict[Any, int] | None = None  # target id -> its latest edit on the path (index into the path)
    selected: list[int] | None = None  # the context entries (indexes into the path)


def _summary_message(role: str, e: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """pi's create*Message: the given fields (absent ones left out, as JSON drops undefined) and the time."""
    m: dict[str, Any] = {"role": role}
    for k in keys:
        if k in e:
            m[k] = e[k]
    m["timestamp"] = js_date_json(e.get("timestamp"))
    return m


def custom_message(e: dict[str, Any]) -> dict[str, Any]:
    m = _summary_message("custom", e, ("customType", "content", "display", "details"))
    if m.get("content") is None:  # pi passes `content ?? []`
        m = {"role": "custom", "customType": e.get("customType"), "content": [], **m}
        if "customType" not in e:
            m.pop("customType")
    return m


def branch_summary_message(e: dict[str, Any]) -> dict[str, Any]:
    return _summary_message("branchSummary", e, ("summary", "fromId"))


def compaction_summary_message(e: dict[str, Any]) -> dict[str, Any]:
    return _summary_message("compactionSummary", e, ("summary", "tokensBefore"))


def entry_message(e: dict[str, Any], *, empty_summaries: bool = False) -> dict[str, Any] | None:
    """The message an entry stands for. Contexts drop empty branch summaries;
    pi's summarizers (`empty_summaries=True`) keep them."""
    t = e.get("type")
    if t == et.MESSAGE:
        m = e.get("message")
        if type(m) is msgspec.Raw:
            return m  # the file's own bytes, exactly the message pi holds (store/reading.py)
        if not isinstance(m, dict):
            return None
        if m.get("content") is None and isinstance(m.get("role"), str) and m["role"] in _NORMALIZED:
            return {**m, "content": _NORMALIZED[m["role"]]}  # pi's null-content normalization
        return m
    if t == et.CUSTOM_MESSAGE:
        return custom_message(e)
    if t == et.BRANCH_SUMMARY and (empty_summaries or e.get("summary")):
        return branch_summary_message(e)
    return None


_NORMALIZED: dict[str, Any] = {"system": "", "user": [], "assistant": [], "toolResult": []}


def entry_messages(e: dict[str, Any]) -> list[dict[str, Any]]:
    """pi's sessionEntryToContextMessages: a compaction gives its checkpoint then its summary."""
    if e.get("type") == et.COMPACTION:
        summary = compaction_summary_message(e)
        system = e.get("systemMessage")
        return [system, summary] if system else [summary]
    m = entry_message(e)
    return [] if m is None else [m]


def project(e: dict[str, Any], edit: dict[str, Any] | None) -> list[dict[str, Any]]:
    """pi's projectContextEntry: an entry's messages with its latest context edit applied."""
    messages = entry_messages(e)
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    new = replacement.get("content") if isinstance(replacement, dict) else None
    out = []
    for m in messages:
        role = m.get("role")
        if role not in _EDITABLE:
            out.append(m)
            continue
        content = [{"type": "text", "text": new}] if role in _BLOCKS_ONLY and isinstance(new, str) else new
        out.append({**m, "content": content})
    return out


_EDITABLE = frozenset(("user", "assistant", "toolResult", "custom"))
_BLOCKS_ONLY = frozenset(("assistant", "toolResult"))


def context_entries(path: list[dict[str, Any]], compaction: dict[str, Any] | None) -> list[int]:
    """pi's buildContextEntries, as indexes into `path`: the last compaction first, then its
    kept entries (system messages left out), then everything after it."""
    if compaction is None:
        return list(range(len(path)))
    cid = compaction.get("id")
    cidx = next((i for i, e in enumerate(path) if e.get("id") == cid), -1)
    if cidx < 0:
        return list(range(len(path)))
    kept = compaction.get("firstKeptEntryId")
    start = next((i for i in range(cidx) if path[i].get("id") == kept), cidx)
    out = [cidx]
    for i in range(start, cidx):
        e = path[i]
        m = e.get("message")
        if not (e.get("type") == et.MESSAGE and isinstance(m, dict) and m.get("role") == "system"):
            out.append(i)
    out.extend(range(cidx + 1, len(path)))
    return out


def context_for_path(path: list[dict[str, Any]], settings: Settings | None = None) -> SessionContext:
    """pi's buildSessionProjection over the entries of a path, root first (`settings`: its replay,
    when the caller already has it)."""
    if settings is None:
        settings = replay(path)
    selected = context_entries(path, settings.compaction)
    edits: dict[Any, int] = {}
    for i in selected:
        if path[i].get("type") == et.CONTEXT_EDIT:
            edits[js_key(path[i].get("targetId"))] = i
    if not edits:
        messages, ids, sources = _plain(path, selected)
        edit_of = [-1] * len(messages)
    else:
        messages, ids, sources, edit_of = [], [], [], []
        for k, i in enumerate(selected):
            e = path[i]
            if e.get("type") == et.COMPACTION and k > 0:
                continue  # an older compaction inside the kept range contributes nothing
            edit = edits.get(js_key(e.get("id")), -1)
            for m in project(e, path[edit] if edit >= 0 else None):
                messages.append(m)
                ids.append(e.get("id"))  # type: ignore[arg-type]
                sources.append(i)
                edit_of.append(edit)
    return SessionContext(
        messages,
        ids,
        settings.model,
        settings.thinking_level,
        sources,
        edits=edit_of,
        edits_in_force=edits,
        selected=selected,
    )


def _plain(path: list[dict[str, Any]], selected: list[int]) -> tuple[list[Any], list[Any], list[int]]:
    """The projection when no context edit is in force: a message entry as it is (thousands
    per context, so that case is inlined), everything else through `project`."""
    messages: list[Any] = []
    ids: list[Any] = []
    sources: list[int] = []
    if selected and path[selected[0]].get("type") == et.COMPACTION:
        e = path[selected[0]]
        for m in project(e, None):
            messages.append(m)
            ids.append(e.get("id"))
            sources.append(selected[0])
        selected = selected[1:]
    # an opaque message (file bytes) is always a plain message entry's, taken as it is: runs of
    # them are copied in bulk, the few other entries go through the general rule
    msgs = [path[i].get("message") for i in selected]
    entry_ids = [path[i].get("id") for i in selected]
    raw = msgspec.Raw
    others = [k for k, m in enumerate(msgs) if type(m) is not raw]
    if not others and not messages:  # every message as the file holds it: the lists as they are
        return msgs, entry_ids, list(selected)
    start = 0
    for k in [*others, len(selected)]:
        for run in range(start, k, slices.STEP):  # a slice at a time: a million in one copy is one hold
            stop = min(run + slices.STEP, k)
            messages += msgs[run:stop]
            ids += entry_ids[run:stop]
            sources += selected[run:stop]
        start = k + 1
        if k == len(selected):
            break
        e, m = path[selected[k]], msgs[k]
        t = e.get("type")
        if t == et.MESSAGE and type(m) is dict and m.get("content") is not None:
            produced = [m]
        elif t == et.COMPACTION:  # an older compaction inside the kept range contributes nothing
            continue
        else:
            produced = project(e, None)
        for pm in produced:
            messages.append(pm)
            ids.append(entry_ids[k])
            sources.append(selected[k])
    return messages, ids, sources


_PRODUCES = frozenset((et.MESSAGE, et.CUSTOM_MESSAGE, et.BRANCH_SUMMARY, et.CONTEXT_EDIT))


def build_context(
    idx: SessionIndex, leaf_id: str | None, *, before_first: bool = False, opaque: bool = False
) -> SessionContext:
    """Context for a leaf (None: the file's last entry; before_first: empty).

    Only the entries that can change the answer are read: the last settings
    entries, the last compaction, and the message entries after its first kept
    entry. The result is the one `context_for_path` gives for the whole path.
    `opaque`: messages taken as they are come as `msgspec.Raw` bytes of the file
    (parsing them is most of a cold build, and an answer only re-encodes them).
    """
    if before_first or not idx.ids:
        return SessionContext([], [], None, "off", [], [])
    leaf = idx.by_id[leaf_id] if leaf_id is not None else len(idx.ids) - 1
    # which entries a leaf's context reads only changes with the file: kept per generation
    chosen = idx.memo(("context", leaf, idx.generation), lambda: _select(idx, leaf))
    entries = _opaque_entries(idx, chosen) if opaque else idx.cached_entries(chosen)
    ctx = context_for_path(entries, _settings(idx, leaf, chosen))
    slices.dismantle(entries)  # freed at the return, a million entries would be one long hold
    ctx.positions = [chosen[i] for i in ctx.sources]
    ctx.edit_positions = [chosen[i] if i >= 0 else -1 for i in ctx.edits or ()]
    ctx.edits_in_force = {t: chosen[i] for t, i in (ctx.edits_in_force or {}).items()}
    ctx.selected = [chosen[i] for i in ctx.selected or ()]
    ctx.entry_ids = [idx.ids[p] for p in ctx.positions]
    return ctx


def _select(idx: SessionIndex, leaf: int) -> list[int]:
    chosen = _select_from_ancestry(idx, leaf) if not idx.irregular else None
    return chosen if chosen is not None else _select_by_walk(idx, path_to(idx, leaf))


def _opaque_entries(idx: SessionIndex, chosen: list[int]) -> list[dict[str, Any]]:
    """The chosen entries with plain messages left as bytes; a context edit's target is
    parsed (the edit rewrites its content)."""
    entries = idx.cached_entries(chosen, opaque=True)
    types = idx.types
    if et.CONTEXT_EDIT not in map(types.__getitem__, chosen):
        return entries
    targets = {t for p, e in zip(chosen, entries, strict=True) if types[p] == et.CONTEXT_EDIT and type(t := e.get("targetId")) is str}
    if targets:
        for k, p in enumerate(chosen):
            if idx.ids[p] in targets and type(entries[k].get("message")) is msgspec.Raw:
                entries[k] = idx.cached_entries([p])[0]
    return entries


def _settings(idx: SessionIndex, leaf: int, chosen: list[int]) -> Settings:
    """The settings replay of the chosen entries, reading only the last of each kind
    (`chosen` holds every entry that can set one)."""
    if idx.irregular:
        last = sorted(chosen[i] for i in last_of_each_kind(idx, chosen) if i >= 0)
    else:
        last = setting_positions(idx, leaf)
    return replay(idx.cached_entries(last))


def _select_by_walk(idx: SessionIndex, path: list[int]) -> list[int]:
    types = idx.types
    last_model, last_thinking, last_compaction = last_of_each_kind(idx, path)
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
    types, parents, by_id = idx.types, idx.parents, idx.by_id
    window: list[int] = []  # compaction .. leaf, leaf first
    cur, limit = leaf, len(idx)
    while cur != comp:
        if cur == -1 or len(window) > limit:
            return None
        window.append(cur)
        p = parents[cur]
        cur = by_id.get(p, -1) if p is not None else -1
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
