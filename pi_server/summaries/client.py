"""Asking Anthropic for a summary: the official SDK, streaming, with pi 1.6.0's request shape.

The key, the SDK client, the error wording, the request body and the price are
the model layer's (`pi_server.llm`); this module adds the summary's messages,
the usage pi records and the summary errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_server.llm.anthropic import request_body as turn_body
from pi_server.llm.client import plain_error, redact, stream_text
from pi_server.llm.cost import calculate_cost, usage_from
from pi_server.llm.models import ModelInfo
from pi_server.summaries.prompts import SUMMARIZATION_SYSTEM_PROMPT


class SummaryError(Exception):
    """The model could not give a summary; the message says why (never the key)."""


def request_body(model: ModelInfo, prompt: str, thinking: Any = None) -> dict[str, Any]:
    """The body pi's completeSummarization sends, built as every other request is: the
    summarization prompt as the system message, one user message, no cache breakpoints
    (cacheRetention "none"), the model's output budget and the session's thinking level
    (pi asks a model without reasoning for none)."""
    llm = [
        {"role": "system", "content": SUMMARIZATION_SYSTEM_PROMPT, "timestamp": 0},
        {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": 0},
    ]
    level = thinking if model.reasoning else None
    body, _ = turn_body(llm, [None, None], model, level, cache_retention="none")
    return body


def usage_of(model: ModelInfo, u: Any) -> dict[str, Any]:
    """pi-ai's usage of an answer, priced for `model`."""
    usage = usage_from(u)
    calculate_cost(model.cost, usage)
    return usage


async def complete(
    body: dict[str, Any],
    key: str,
    *,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """The answer's text (see `complete_with_usage`)."""
    text, _ = await complete_with_usage(body, key, base_url=base_url, timeout=timeout, on_text=on_text)
    return text


async def complete_with_usage(
    body: dict[str, Any],
    key: str,
    *,
    model: ModelInfo | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """Stream the request (the SDK retries twice); returns the answer's text and pi's usage of it
    (priced for `model`). As pi 1.6.0, a cut-off answer or a tool call is a failed summary."""
    try:
        final = await stream_text(body, key, url=base_url, timeout=timeout, max_retries=2, on_text=on_text)
    except Exception as e:
        message = plain_error(e, timeout)
        if message is None:
            raise
        raise SummaryError(redact(message, key)) from None
    if final.stop_reason == "max_tokens":
        raise SummaryError("generation hit the token cap and the summary is incomplete")
    if final.stop_reason == "tool_use" or any(getattr(b, "type", None) == "tool_use" for b in final.content):
        raise SummaryError("the model attempted to call a tool")
    if final.stop_reason not in ("end_turn", "stop_sequence", "pause_turn", None):
        raise SummaryError(f"the model stopped with {final.stop_reason}")
    text = "\n".join(b.text for b in final.content if getattr(b, "type", None) == "text")
    return text, usage_of(model, final.usage) if model is not None else None
