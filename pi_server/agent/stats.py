"""pi 1.6.0's AgentSession.getSessionStats and getContextUsage, over entries already read.

The counts and usage totals walk entries in file order (pi's getEntries); the
context use is the projection at one leaf: the last valid assistant usage plus
estimates of what follows it, unless a later context edit or compaction made
that usage stale.
"""

from __future__ import annotations

from typing import Any

from pi_server.context.build import context_for_path
from pi_server.llm.tokens import projected_context_tokens, usable_usage
from pi_server.store import entry_types as et

_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")


def _num(v: Any) -> float:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _add(totals: dict[str, float], usage: Any) -> None:
    """pi's addUsageToTotals."""
    if not isinstance(usage, dict):
        return
    for k in _USAGE_KEYS:
        totals[k] += _num(usage.get(k))
    cost = usage.get("cost")
    totals["cost"] += _num(cost.get("total")) if isinstance(cost, dict) else 0


def usage_totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Message counts, tool calls and usage totals of entries, as pi's getSessionStats counts them."""
    totals: dict[str, float] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0}
    user = assistant = results = messages = calls = 0
    for e in entries:
        t = e.get("type")
        if t == et.USAGE or (t in (et.BRANCH_SUMMARY, et.COMPACTION) and e.get("usage")):
            _add(totals, e.get("usage"))
        if t != et.MESSAGE:
            continue
        messages += 1
        m = e.get("message") if isinstance(e.get("message"), dict) else {}
        role = m.get("role")
        if role == "user":
            user += 1
        elif role == "toolResult":
            results += 1
            if m.get("usage"):
                _add(totals, m["usage"])
        elif role == "assistant":
            assistant += 1
            content = m.get("content")
            if isinstance(content, list):
                calls += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "toolCall")
            _add(totals, m.get("usage"))
    tokens = {k: totals[k] for k in _USAGE_KEYS}
    tokens["total"] = sum(tokens.values())
    return {
        "userMessages": user,
        "assistantMessages": assistant,
        "toolCalls": calls,
        "toolResults": results,
        "totalMessages": messages,
        "tokens": tokens,
        "cost": totals["cost"],
    }


def context_usage(path: list[dict[str, Any]], context_window: int) -> dict[str, Any] | None:
    """pi's getContextUsage at the leaf that ends `path` (root first)."""
    if context_window <= 0:
        return None
    ctx = context_for_path(path)
    comp = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == et.COMPACTION), -1)
    if comp >= 0:
        answered = {ctx.entry_ids[i] for i, m in enumerate(ctx.messages) if usable_usage(m)}
        if not any(e.get("id") in answered for e in path[comp + 1 :]):
            return {"tokens": None, "contextWindow": context_window, "percent": None}
    tokens = projected_context_tokens(ctx.messages, ctx.entry_ids, path)
    return {"tokens": tokens, "contextWindow": context_window, "percent": tokens / context_window * 100}


def session_stats(
    session_file: str,
    session_id: str | None,
    entries: list[dict[str, Any]],
    path: list[dict[str, Any]],
    context_window: int,
) -> dict[str, Any]:
    """pi's getSessionStats for the whole file (with the context use at the leaf ending `path`),
    plus `branch`: the same numbers for the entries of `path` alone."""
    usage = context_usage(path, context_window)

    def stats(of: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionFile": session_file, "sessionId": session_id, **usage_totals(of)}
        if usage is not None:  # pi's undefined: the key is left out of the JSON
            out["contextUsage"] = usage
        return out

    return {**stats(entries), "branch": stats(path)}
