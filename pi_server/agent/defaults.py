"""A new session's model and thinking level, from pi's global settings as pi picks them."""

from __future__ import annotations

import json
import os
from typing import Any

from pi_server.llm.models import ModelInfo, anthropic_model
from pi_server.store.discovery import agent_dir

DEFAULT_THINKING = "medium"  # pi's DEFAULT_THINKING_LEVEL
_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


def _global_settings() -> dict[str, Any]:
    # project settings (<cwd>/.pi/settings.json) count in pi only once the user trusts the
    # project, which pi-server cannot ask: the global file alone
    try:
        with open(os.path.join(agent_dir(), "settings.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def new_session_defaults() -> tuple[ModelInfo, str]:
    """`defaultProvider`/`defaultModel` when pi-server knows that Anthropic model (else pi's
    default Sonnet), and `defaultThinkingLevel` (else medium)."""
    s = _global_settings()
    model = anthropic_model({"provider": s.get("defaultProvider"), "modelId": s.get("defaultModel")})
    level = s.get("defaultThinkingLevel")
    return model, level if level in _LEVELS else DEFAULT_THINKING
