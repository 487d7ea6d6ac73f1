"""Dollars per million tokens of Anthropic's models, as pi 0.73.1 lists them (for usage.cost)."""

from __future__ import annotations

COSTS: dict[str, dict[str, float]] = {
    "claude-3-5-haiku-20241022": {"cacheRead": 0.08, "cacheWrite": 1, "input": 0.8, "output": 4},
    "claude-3-5-haiku-latest": {"cacheRead": 0.08, "cacheWrite": 1, "input": 0.8, "output": 4},
    "claude-3-5-sonnet-20240620": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-3-5-sonnet-20241022": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-3-7-sonnet-20250219": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-3-haiku-20240307": {"cacheRead": 0.03, "cacheWrite": 0.3, "input": 0.25, "output": 1.25},
    "claude-3-opus-20240229": {"cacheRead": 1.5, "cacheWrite": 18.75, "input": 15, "output": 75},
    "claude-3-sonnet-20240229": {"cacheRead": 0.3, "cacheWrite": 0.3, "input": 3, "output": 15},
    "claude-haiku-4-5": {"cacheRead": 0.1, "cacheWrite": 1.25, "input": 1, "output": 5},
    "claude-haiku-4-5-20251001": {"cacheRead": 0.1, "cacheWrite": 1.25, "input": 1, "output": 5},
    "claude-opus-4-0": {"cacheRead": 1.5, "cacheWrite": 18.75, "input": 15, "output": 75},
    "claude-opus-4-1": {"cacheRead": 1.5, "cacheWrite": 18.75, "input": 15, "output": 75},
    "claude-opus-4-1-20250805": {"cacheRead": 1.5, "cacheWrite": 18.75, "input": 15, "output": 75},
    "claude-opus-4-20250514": {"cacheRead": 1.5, "cacheWrite": 18.75, "input": 15, "output": 75},
    "claude-opus-4-5": {"cacheRead": 0.5, "cacheWrite": 6.25, "input": 5, "output": 25},
    "claude-opus-4-5-20251101": {"cacheRead": 0.5, "cacheWrite": 6.25, "input": 5, "output": 25},
    "claude-opus-4-6": {"cacheRead": 0.5, "cacheWrite": 6.25, "input": 5, "output": 25},
    "claude-opus-4-7": {"cacheRead": 0.5, "cacheWrite": 6.25, "input": 5, "output": 25},
    "claude-sonnet-4-0": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-sonnet-4-20250514": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-sonnet-4-5": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-sonnet-4-5-20250929": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
    "claude-sonnet-4-6": {"cacheRead": 0.3, "cacheWrite": 3.75, "input": 3, "output": 15},
}
