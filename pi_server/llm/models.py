"""What pi knows of the models whose request shapes we build.

Context window, output limit, reasoning support, thinking-level mapping and
prices of Anthropic's models as pi 0.73.1 lists them; an unknown model id gets
the defaults of pi's current Sonnet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_USAGE_FIELDS = {"input": "input", "output": "output", "cacheRead": "cache_read", "cacheWrite": "cache_write"}


@dataclass(frozen=True, slots=True)
class Cost:
    """Dollars per million tokens (pi's model.cost)."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0

    def per_million(self, usage_key: str) -> float:
        """The price of one of pi's usage fields: input, output, cacheRead, cacheWrite."""
        return float(getattr(self, _USAGE_FIELDS[usage_key]))


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    provider: str
    api: str
    max_tokens: int
    context_window: int
    reasoning: bool
    images: bool = True
    thinking_level_map: dict[str, str] = field(default_factory=dict)
    cost: Cost = Cost()


def _a(
    mid: str, reasoning: bool, max_tokens: int, window: int, cost: Cost, tlm: dict[str, str] | None = None
) -> ModelInfo:
    return ModelInfo(mid, "anthropic", "anthropic-messages", max_tokens, window, reasoning, True, tlm or {}, cost)


ANTHROPIC: dict[str, ModelInfo] = {
    m.id: m
    for m in [
        _a("claude-3-5-haiku-20241022", False, 8192, 200000, Cost(0.8, 4, 0.08, 1)),
        _a("claude-3-5-haiku-latest", False, 8192, 200000, Cost(0.8, 4, 0.08, 1)),
        _a("claude-3-5-sonnet-20240620", False, 8192, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-3-5-sonnet-20241022", False, 8192, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-3-7-sonnet-20250219", True, 64000, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-3-haiku-20240307", False, 4096, 200000, Cost(0.25, 1.25, 0.03, 0.3)),
        _a("claude-3-opus-20240229", False, 4096, 200000, Cost(15, 75, 1.5, 18.75)),
        _a("claude-3-sonnet-20240229", False, 4096, 200000, Cost(3, 15, 0.3, 0.3)),
        _a("claude-haiku-4-5", True, 64000, 200000, Cost(1, 5, 0.1, 1.25)),
        _a("claude-haiku-4-5-20251001", True, 64000, 200000, Cost(1, 5, 0.1, 1.25)),
        _a("claude-opus-4-0", True, 32000, 200000, Cost(15, 75, 1.5, 18.75)),
        _a("claude-opus-4-1", True, 32000, 200000, Cost(15, 75, 1.5, 18.75)),
        _a("claude-opus-4-1-20250805", True, 32000, 200000, Cost(15, 75, 1.5, 18.75)),
        _a("claude-opus-4-20250514", True, 32000, 200000, Cost(15, 75, 1.5, 18.75)),
        _a("claude-opus-4-5", True, 64000, 200000, Cost(5, 25, 0.5, 6.25)),
        _a("claude-opus-4-5-20251101", True, 64000, 200000, Cost(5, 25, 0.5, 6.25)),
        _a("claude-opus-4-6", True, 128000, 1000000, Cost(5, 25, 0.5, 6.25), {"xhigh": "max"}),
        _a("claude-opus-4-7", True, 128000, 1000000, Cost(5, 25, 0.5, 6.25), {"xhigh": "xhigh"}),
        _a("claude-sonnet-4-0", True, 64000, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-sonnet-4-20250514", True, 64000, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-sonnet-4-5", True, 64000, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-sonnet-4-5-20250929", True, 64000, 200000, Cost(3, 15, 0.3, 3.75)),
        _a("claude-sonnet-4-6", True, 64000, 1000000, Cost(3, 15, 0.3, 3.75)),
    ]
}

DEFAULT_ANTHROPIC = "claude-sonnet-4-5"

OPENAI_DEFAULT = ModelInfo("gpt-4o", "openai", "openai-completions", 16384, 128000, False, True)


def anthropic_model(model: dict | None) -> ModelInfo:
    """The session's model when pi knows it as an Anthropic model, else pi's default Sonnet."""
    if model and model.get("provider") == "anthropic" and model.get("modelId") in ANTHROPIC:
        return ANTHROPIC[model["modelId"]]
    return ANTHROPIC[DEFAULT_ANTHROPIC]
