"""Compaction as pi prepares it: the cut point, what is summarized, the prompts.

Mirrors pi's findCutPoint (keepRecentTokens, never cutting at a tool result,
split turns), prepareCompaction (previous summary, file operations) and the
prompts of generateSummary / generateTurnPrefixSummary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pi_server.context.build import context_for_path, entry_message
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.tokens import estimate_tokens_073 as estimate_tokens  # rules of pi 0.73.1
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


def _role(e: dict[str, Any]) -> Any:
    m = e.get("message")
    return m.get("role") if isinstance(m, dict) else None


def find_cut_point(entries: list[dict[str, Any]], start: int, end: int, keep: int) -> tuple[int, int, bool]:
    """(first kept index, turn start index or -1, split turn)."""
    cuts = [
        i
        for i in range(start, end)
        if (entries[i].get("type") == "message" and _role(entries[i]) in _CUT_ROLES)
        or entries[i].get("type") in ("branch_summary", "custom_message")
    ]
    if not cuts:
        return start, -1, False
    total = 0
    cut = cuts[0]
    for i in range(end - 1, start - 1, -1):
        e = entries[i]
        if e.get("type") != "message":
            continue
        total += estimate_tokens(e.get("message") if isinstance(e.get("message"), dict) else {})
        if total >= keep:
            cut = next((c for c in cuts if c >= i), cut)
            break
    while cut > start:
        prev = entries[cut - 1]
        if prev.get("type") in ("compaction", "message"):
            break
        cut -= 1  # take the settings entries just before along
    is_user = entries[cut].get("type") == "message" and _role(entries[cut]) == "user"
    turn = -1 if is_user else _turn_start(entries, cut, start)
    return cut, turn, (not is_user and turn != -1)


def _turn_start(entries: list[dict[str, Any]], index: int, start: int) -> int:
    for i in range(index, start - 1, -1):
        e = entries[i]
        if e.get("type") in ("branch_summary", "custom_message"):
            return i
        if e.get("type") == "message" and _role(e) in ("user", "bashExecution"):
            return i
    return -1


def _message(e: dict[str, Any]) -> dict[str, Any] | None:
    # compactions are not summarized again: their summary is the previous summary
    return entry_message(e, empty_summaries=True)


def _usage_tokens(messages: list[dict[str, Any]]) -> int:
    """pi's estimateContextTokens: the last valid usage, plus estimates after it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        usage = m.get("usage") if m.get("role") == "assistant" else None
        if usage and m.get("stopReason") not in ("aborted", "error") and isinstance(usage, dict):
            base = usage.get("totalTokens") or sum(
                usage.get(k) or 0 for k in ("input", "output", "cacheRead", "cacheWrite")
            )
            return base + sum(estimate_tokens(x) for x in messages[i + 1 :])
    return sum(estimate_tokens(x) for x in messages)


@dataclass
class Preparation:
    first_kept_entry_id: str
    to_summarize: list[dict[str, Any]]
    turn_prefix: list[dict[str, Any]]
    split_turn: bool
    tokens_before: int
    previous_summary: str | None
    read_files: list[str]
    modified_files: list[str]


def prepare_compaction(path: list[dict[str, Any]], keep: int = KEEP_RECENT_TOKENS) -> Preparation | None:
    """None when there is nothing to compact (the leaf is a compaction) or entries lack ids."""
    if path and path[-1].get("type") == "compaction":
        return None
    prev = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), -1)
    previous = None
    start = 0
    ops = FileOps()
    if prev >= 0:
        pc = path[prev]
        previous = pc.get("summary")
        kept = next((i for i, e in enumerate(path) if e.get("id") == pc.get("firstKeptEntryId")), -1)
        start = kept if kept >= 0 else prev + 1
        details = pc.get("details")
        if not pc.get("fromHook") and isinstance(details, dict):
            for f in details.get("readFiles") if isinstance(details.get("readFiles"), list) else []:
                ops.read[f] = None
            for f in details.get("modifiedFiles") if isinstance(details.get("modifiedFiles"), list) else []:
                ops.edited[f] = None
    tokens_before = _usage_tokens(context_for_path(path).messages)
    cut, turn, split = find_cut_point(path, start, len(path), keep)
    first_kept = path[cut].get("id") if cut < len(path) else None
    if not first_kept:
        return None
    history_end = turn if split else cut
    summarize = [m for e in path[start:history_end] if (m := _message(e)) is not None]
    prefix = [m for e in path[turn:cut] if (m := _message(e)) is not None] if split else []
    for m in summarize + prefix:
        extract_file_ops(m, ops)
    read, modified = file_lists(ops)
    return Preparation(first_kept, summarize, prefix, split, tokens_before, previous, read, modified)


def history_prompt(prep: Preparation, custom: str | None = None) -> str:
    base = COMPACTION_UPDATE_PROMPT if prep.previous_summary else COMPACTION_PROMPT
    if custom:
        base = f"{base}\n\nAdditional focus: {custom}"
    llm, _ = convert_to_llm(prep.to_summarize)
    text = f"<conversation>\n{serialize_conversation(llm)}\n</conversation>\n\n"
    if prep.previous_summary:
        text += f"<previous-summary>\n{prep.previous_summary}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(prep: Preparation) -> str:
    llm, _ = convert_to_llm(prep.turn_prefix)
    return f"<conversation>\n{serialize_conversation(llm)}\n</conversation>\n\n{TURN_PREFIX_PROMPT}"


def max_tokens(kind: str, reserve: int = RESERVE_TOKENS) -> int:
    return math.floor((0.8 if kind == "history" else 0.5) * reserve)


def requests(prep: Preparation, model: Any, thinking: Any, custom: str | None = None) -> dict[str, dict[str, Any]]:
    """The request bodies pi's compact sends: the history (unless a split turn has none) and the turn prefix."""
    out: dict[str, dict[str, Any]] = {}
    split = prep.split_turn and bool(prep.turn_prefix)
    if prep.to_summarize or not split:
        out["history"] = request_body(model, history_prompt(prep, custom), max_tokens("history"), thinking)
    if split:
        out["prefix"] = request_body(model, turn_prefix_prompt(prep), max_tokens("prefix"), thinking)
    return out


def merge(prep: Preparation, texts: dict[str, str]) -> str:
    """pi's compaction summary from the model's answers, file lists appended."""
    summary = texts.get("history", "No prior history.")
    if prep.split_turn and prep.turn_prefix:
        summary = f"{summary}\n\n---\n\n**Turn Context (split turn):**\n\n{texts['prefix']}"
    return summary + format_file_operations(prep.read_files, prep.modified_files)
