"""What an answer cost: pi-ai 1.6.0's calculateCost, for every Anthropic request (turns,
branch summaries, compaction passes)."""

from __future__ import annotations

from typing import Any

from pi_server.llm.models import Cost


def usage_from(u: Any) -> dict[str, Any]:
    """pi's usage record of an SDK usage object (message_start's or the final message's), priced later."""
    creation = getattr(u, "cache_creation", None)
    usage: dict[str, Any] = {
        "input": getattr(u, "input_tokens", 0) or 0,
        "output": getattr(u, "output_tokens", 0) or 0,
        "cacheRead": getattr(u, "cache_read_input_tokens", 0) or 0,
        "cacheWrite": getattr(u, "cache_creation_input_tokens", 0) or 0,
    }
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    usage["cost"] = {}
    usage["cacheWrite1h"] = getattr(creation, "ephemeral_1h_input_tokens", 0) or 0
    return usage


def calculate_cost(prices: Cost, usage: dict[str, Any]) -> dict[str, Any]:
    """Fill in and return `usage["cost"]` (dollars), at the prices of the request's input tier.
    Anthropic charges one-hour cache writes at twice the input price; the rest of the writes at
    the cache-write price."""
    rate = prices.for_input(usage["input"] + usage["cacheRead"] + usage["cacheWrite"]).per_million
    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage["cacheWrite"] - long_write
    cost = usage.setdefault("cost", {})
    cost["input"] = rate("input") / 1_000_000 * usage["input"]
    cost["output"] = rate("output") / 1_000_000 * usage["output"]
    cost["cacheRead"] = rate("cacheRead") / 1_000_000 * usage["cacheRead"]
    cost["cacheWrite"] = (rate("cacheWrite") * short_write + rate("input") * 2 * long_write) / 1_000_000
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    cost["totalFromProvider"] = False
    return cost
