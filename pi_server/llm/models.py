"""What pi knows of the models whose request shapes we build.

Context window, output limit, reasoning support, thinking-level mapping, prices
and the request features (pi-ai's `compat`) of Anthropic's models as pi-ai 1.6.0
lists them; an unknown model id gets pi's default, claude-sonnet-4-5.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_USAGE_FIELDS = {"input": "input", "output": "output", "cacheRead": "cache_read", "cacheWrite": "cache_write"}

# pi-ai's model.compat flags, as bits
ADAPTIVE = 1  # forceAdaptiveThinking: effort levels instead of thinking budgets
EFFORT = 2  # supportsMidConvoEffort: effort markers between messages, adaptive thinking always
MID_SYSTEM = 4  # supportsMidConvoSystemMessages: later system messages sent in place
MID_TOOLS = 8  # supportsMidConvoToolChanges: tool changes as tool_addition / tool_removal blocks


@dataclass(frozen=True, slots=True)
class Cost:
    """Dollars per million tokens (pi's model.cost)."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    # pi's cost.tiers: (input tokens above which they apply, the prices then), as pi lists them
    tiers: tuple[tuple[int, Cost], ...] = ()

    def per_million(self, usage_key: str) -> float:
        """The price of one of pi's usage fields: input, output, cacheRead, cacheWrite."""
        return float(getattr(self, _USAGE_FIELDS[usage_key]))

    def for_input(self, tokens: int) -> Cost:
        """The prices of a request with `tokens` input tokens (cached ones included): the tier
        with the highest threshold below them, else the base prices."""
        best, above = self, -1
        for threshold, tier in self.tiers:
            if tokens > threshold and threshold > above:
                best, above = tier, threshold
        return best


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    provider: str
    api: str
    max_tokens: int
    context_window: int
    reasoning: bool
    images: bool = True
    # pi's thinkingLevelMap: a level mapped to the provider's effort, None where the level is unsupported
    thinking_level_map: dict[str, str | None] = field(default_factory=dict)
    cost: Cost = Cost()
    flags: int = 0
    strict_tools: bool = False  # compat.supportsStrictTools
    fallbacks: tuple[str, ...] = ()  # compat.allowedFallbackModels

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)


def _a(
    mid: str,
    max_tokens: int,
    window: int,
    cost: Cost,
    flags: int,
    levels: dict[str, str | None] | None = None,
    fallbacks: tuple[str, ...] = (),
) -> ModelInfo:
    return ModelInfo(
        mid,
        "anthropic",
        "anthropic-messages",
        max_tokens,
        window,
        True,
        True,
        levels or {},
        cost,
        flags,
        True,
        fallbacks,
    )


_ALL_LEVELS: dict[str, str | None] = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"}

ANTHROPIC: dict[str, ModelInfo] = {
    m.id: m
    for m in [
        _a(
            "claude-fable-5",
            128000,
            1000000,
            Cost(10, 50, 1, 12.5),
            ADAPTIVE | MID_SYSTEM | MID_TOOLS,
            {"off": None, "xhigh": "xhigh", "max": "max"},
            ("claude-opus-4-8", "claude-opus-5"),
        ),
        _a(
            "claude-fable-5-1",
            128000,
            1000000,
            Cost(10, 50, 0.25, 12.5),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            {"off": None, "xhigh": "xhigh", "max": "max"},
        ),
        _a(
            "claude-fable-5-2",
            128000,
            1000000,
            Cost(8, 40, 0.2, 10),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            {"off": None, "xhigh": "xhigh", "max": "max"},
            ("claude-opus-5",),
        ),
        _a("claude-haiku-4-5", 64000, 200000, Cost(1, 5, 0.1, 1.25), 0),
        _a("claude-haiku-4-5-20251001", 64000, 200000, Cost(1, 5, 0.1, 1.25), 0),
        _a(
            "claude-haiku-5-5",
            128000,
            1000000,
            Cost(0.1, 0.5, 0.01, 0.125, ((100000, Cost(0.5, 2.5, 0.05, 0.625)),)),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            _ALL_LEVELS | {"minimal": None},
        ),
        _a("claude-opus-4-5", 64000, 200000, Cost(5, 25, 0.5, 6.25), 0),
        _a("claude-opus-4-5-20251101", 64000, 200000, Cost(5, 25, 0.5, 6.25), 0),
        _a("claude-opus-4-6", 128000, 1000000, Cost(5, 25, 0.5, 6.25), ADAPTIVE, {"max": "max"}),
        _a("claude-opus-4-7", 128000, 1000000, Cost(5, 25, 0.5, 6.25), ADAPTIVE, {"xhigh": "xhigh", "max": "max"}),
        _a(
            "claude-opus-4-8",
            128000,
            1000000,
            Cost(5, 25, 0.5, 6.25),
            ADAPTIVE | MID_SYSTEM | MID_TOOLS,
            {"xhigh": "xhigh", "max": "max"},
        ),
        _a(
            "claude-opus-5",
            128000,
            1000000,
            Cost(5, 25, 0.5, 6.25),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            {"xhigh": "xhigh", "max": "max"},
        ),
        _a(
            "claude-opus-5-5",
            128000,
            1000000,
            Cost(4, 20, 0.2, 5),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            {"off": None, "minimal": None} | _ALL_LEVELS,
        ),
        _a("claude-sonnet-4-5", 64000, 200000, Cost(3, 15, 0.3, 3.75), 0),
        _a("claude-sonnet-4-5-20250929", 64000, 200000, Cost(3, 15, 0.3, 3.75), 0),
        _a("claude-sonnet-4-6", 128000, 1000000, Cost(3, 15, 0.3, 3.75), ADAPTIVE, {"max": "max"}),
        _a("claude-sonnet-5", 128000, 1000000, Cost(2, 10, 0.2, 2.5), ADAPTIVE, {"xhigh": "xhigh", "max": "max"}),
        _a(
            "claude-sonnet-5-5",
            128000,
            1000000,
            Cost(2, 10, 0.1, 2.5),
            ADAPTIVE | EFFORT | MID_SYSTEM | MID_TOOLS,
            {"off": None, "minimal": None} | _ALL_LEVELS,
        ),
    ]
}

DEFAULT_ANTHROPIC = "claude-sonnet-4-5"

_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


def supported_levels(model: ModelInfo) -> list[str]:
    """pi-ai's getSupportedThinkingLevels: a level mapped to null is out; xhigh and max only when mapped."""
    if not model.reasoning:
        return ["off"]
    levels = model.thinking_level_map
    return [
        lv
        for lv in _LEVELS
        if not (lv in levels and levels[lv] is None) and (lv not in ("xhigh", "max") or levels.get(lv) is not None)
    ]


def clamp_thinking_level(model: ModelInfo, level: str) -> str:
    """pi-ai's clampThinkingLevel: the level when the model has it, else the next one up it has,
    else the next one down (the level pi's AgentSession runs a session at, and records)."""
    available = supported_levels(model)
    if level in available:
        return level
    if level not in _LEVELS:
        return available[0] if available else "off"
    at = _LEVELS.index(level)
    for candidate in (*_LEVELS[at:], *reversed(_LEVELS[:at])):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


OPENAI_DEFAULT = ModelInfo("gpt-4o", "openai", "openai-completions", 16384, 128000, False, True)


def anthropic_model(model: dict | None) -> ModelInfo:
    """The session's model when pi knows it as an Anthropic model, else pi's default Sonnet."""
    model_id = model.get("modelId") if model and model.get("provider") == "anthropic" else None
    if isinstance(model_id, str) and model_id in ANTHROPIC:
        return ANTHROPIC[model_id]
    return ANTHROPIC[DEFAULT_ANTHROPIC]
