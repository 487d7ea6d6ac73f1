"""Compaction as pi 1.6.0 prepares it: on the projection, the cut point, what is summarized, the prompts.

Mirrors pi's prepareCompaction (context edits applied, the projected previous
compaction, system messages left to the entry's `systemMessage`),
findProjectedCutPoint, estimateProjectedContextTokens and the prompts of
generateSummary / generateTurnPrefixSummary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_server.context.build import context_for_path, entry_messages, project
from pi_server.jsutil import js_key
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.tokens import estimate_tokens, projected_context_tokens
from pi_server.store import entry_types as et
from pi_server.summaries.branch import (
    FileOps,
    extract_file_ops,
    file_lists,
    format_file_operations,
    serialize_conversation,
)
from pi_server.summaries.client import request_body
from pi_server.summaries.prompts import (
    COMPACTION_PROMPT,
    COMPACTION_UPDATE_PROMPT,
    TURN_PREFIX_PROMPT,
)

KEEP_RECENT_TOKENS = 20000
RESERVE_TOKENS = 16384
_CUT_ROLES = frozenset(("bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"))
_TURN_ROLES = frozenset(("bashExecution", "custom", "branchSummary", "compactionSummary", "user"))

Projected = tuple[dict[str, Any], list[dict[str, Any]]]  # (source entry, its messages)


def projection(path: list[dict[str, Any]]) -> list[Projected]:
    """pi's buildSessionProjection entries: each context entry with its (edited) messages."""
    ctx = context_for_path(path)
    edits = ctx.edits_in_force or {}
    out: list[Projected] = []
    for k, i in enumerate(ctx.selected or []):
        e = path[i]
        if e.get("type") == et.COMPACTION and k > 0:
            out.append((e, []))  # an older compaction inside the kept range contributes nothing
            continue
        edit = edits.get(js_key(e.get("id")))
        out.append((e, project(e, path[edit] if edit is not None else None)))
    return out


def _has(messages: list[dict[str, Any]], roles: frozenset[str]) -> bool:
    return any(isinstance(m.get("role"), str) and m["role"] in roles for m in messages)


def _starts_turn(p: Projected) -> bool:
    return p[0].get("type") != et.COMPACTION and _has(p[1], _TURN_ROLES)


def _visible(p: Projected) -> bool:
    return p[0].get("type") != et.CONTEXT_EDIT and bool(entry_messages(p[0]))


def _omitted(p: Projected) -> bool:
    return _visible(p) and not p[1]


def _recovery_suffix(suffix: list[Projected]) -> bool:
    """A closed suffix holding only omitted attempts (and their edits): the cut moves past it."""
    omitted = {js_key(p[0].get("id")) for p in suffix if _omitted(p)}
    external = any(
        p[0].get("type") == et.CONTEXT_EDIT
        and p[0].get("replacement") is not None
        and js_key(p[0].get("targetId")) not in omitted
        for p in suffix
    )
    attempt = any(
        p[0].get("type") == et.MESSAGE and (p[0].get("message") or {}).get("role") == "assistant" and _omitted(p)
        for p in suffix
    )
    closed = all(p[0].get("type") != et.COMPACTION and (not _visible(p) or _omitted(p)) for p in suffix)
    return not external and attempt and closed


def find_cut_point(entries: list[Projected], start: int, end: int, keep: int) -> tuple[int, int, bool]:
    """pi's findProjectedCutPoint: (first kept index, turn start index or -1, split turn)."""
    cuts = [
        i for i in range(start, end) if entries[i][0].get("type") != et.COMPACTION and _has(entries[i][1], _CUT_ROLES)
    ]
    if not cuts:
        return start, -1, False
    total = 0
    exceeded = False
    cut = cuts[0]
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in entries[i][1])
        if tokens == 0:
            continue
        total += tokens
        if total >= keep:
            exceeded = True
            cut = next((c for c in cuts if c >= i), cuts[-1])
            break
    if exceeded and _recovery_suffix(entries[cut + 1 : end]):
        cut += 1
    while cut > start:
        prev = entries[cut - 1]
        if prev[0].get("type") == et.COMPACTION or prev[1]:
            break
        cut -= 1  # take the bookkeeping entries just before along
    if _starts_turn(entries[cut]):
        return cut, -1, False
    turn = next((i for i in range(cut, start - 1, -1) if _starts_turn(entries[i])), -1)
    return cut, turn, turn != -1


def tokens_before(entries: list[Projected], path: list[dict[str, Any]]) -> float:
    """pi's estimateProjectedContextTokens of the projection at the leaf ending `path`."""
    ids = [e.get("id") for e, ms in entries for _ in ms]
    return projected_context_tokens([m for _, ms in entries for m in ms], ids, path)


@dataclass
class Preparation:
    first_kept_entry_id: str
    to_summarize: list[dict[str, Any]]
    turn_prefix: list[dict[str, Any]]
    split_turn: bool
    tokens_before: float
    previous_summary: str | None
    read_files: list[str]
    modified_files: list[str]


def _summarized(entries: list[Projected]) -> list[dict[str, Any]]:
    """Messages to summarize: compactions give none; system messages are prompt state, not conversation."""
    return [m for e, ms in entries if e.get("type") != et.COMPACTION for m in ms if m.get("role") != "system"]


def prepare_compaction(path: list[dict[str, Any]], keep: int = KEEP_RECENT_TOKENS) -> Preparation | None:
    """pi's prepareCompaction; None when there is nothing to compact (pi's `undefined`)."""
    if path and path[-1].get("type") == et.COMPACTION:
        return None
    entries = projection(path)
    prev = next((i for i, (e, ms) in enumerate(entries) if e.get("type") == et.COMPACTION and ms), -1)
    start = prev + 1 if prev >= 0 else 0
    previous = entries[prev][0].get("summary") if prev >= 0 else None
    before = tokens_before(entries, path)
    cut, turn, split = find_cut_point(entries, start, len(entries), keep)
    first_kept = entries[cut][0].get("id") if cut < len(entries) else None
    if not first_kept:
        return None
    summarize = _summarized(entries[start : turn if split else cut])
    prefix = _summarized(entries[turn:cut]) if split else []
    if not summarize and not prefix:
        return None
    ops = FileOps()
    details = entries[prev][0].get("details") if prev >= 0 else None
    if prev >= 0 and not entries[prev][0].get("fromHook") and isinstance(details, dict):
        for f in details.get("readFiles") if isinstance(details.get("readFiles"), list) else []:
            ops.read[f] = None
        for f in details.get("modifiedFiles") if isinstance(details.get("modifiedFiles"), list) else []:
            ops.edited[f] = None
    for m in summarize + prefix:
        extract_file_ops(m, ops)
    read, modified = file_lists(ops)
    return Preparation(first_kept, summarize, prefix, split, before, previous, read, modified)


def history_prompt(prep: Preparation, custom: str | None = None) -> str:
    base = COMPACTION_UPDATE_PROMPT if prep.previous_summary else COMPACTION_PROMPT
    if custom:
        base = f"{base}\n\nAdditional focus: {custom}"
    llm, _ = convert_to_llm(prep.to_summarize)
    text = f"<conversation>\n{serialize_conversation(llm)}\n</conversation>\n\n"
    if prep.previous_summary:
        text += f"<previous-summary>\n{prep.previous_summary}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(prep: Preparation, custom: str | None = None) -> str:
    llm, _ = convert_to_llm(prep.turn_prefix)
    text = f"# Conversation\n{serialize_conversation(llm)}\n\n# Instructions\n{TURN_PREFIX_PROMPT}"
    return f"{text}\n\nAdditional focus: {custom}" if custom else text


def requests(prep: Preparation, model: Any, thinking: Any, custom: str | None = None) -> dict[str, dict[str, Any]]:
    """The request bodies pi's compact sends, in order: the history (unless a split turn has
    none) then the turn prefix; pi sends them one after the other."""
    out: dict[str, dict[str, Any]] = {}
    split = prep.split_turn and bool(prep.turn_prefix)
    if prep.to_summarize or not split:
        out["history"] = request_body(model, history_prompt(prep, custom), thinking)
    if split:
        out["prefix"] = request_body(model, turn_prefix_prompt(prep, custom), thinking)
    return out


def merge(prep: Preparation, texts: dict[str, str]) -> str:
    """pi's compaction summary from the model's answers, file lists appended. A split turn with
    no history before it keeps the previous summary, if any."""
    summary = texts["history"] if "history" in texts else (prep.previous_summary or "No prior history.")
    if prep.split_turn and prep.turn_prefix:
        summary = f"{summary}\n\n---\n\n**Turn Context (split turn):**\n\n{texts['prefix']}"
    return summary + format_file_operations(prep.read_files, prep.modified_files)


def combine_usage(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """pi's combineUsage of the history and turn-prefix calls (key order as pi writes it)."""
    if a is None or b is None:
        return a or b
    out = {k: a.get(k, 0) + b.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite")}
    for k in ("cacheWrite1h", "reasoning"):
        if k in a or k in b:
            out[k] = a.get(k, 0) + b.get(k, 0)
    out["totalTokens"] = a.get("totalTokens", 0) + b.get("totalTokens", 0)
    ca, cb = a.get("cost") or {}, b.get("cost") or {}
    cost = {k: ca.get(k, 0) + cb.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite", "total")}
    cost["totalFromProvider"] = ca.get("totalFromProvider") is True and cb.get("totalFromProvider") is True
    out["cost"] = cost
    return out
