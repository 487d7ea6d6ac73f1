"""Asking Anthropic for a summary: the official SDK, streaming, with pi's request shape.

The key, the SDK client and the error wording are the model layer's
(`pi_server.llm.client`); this module adds the summary request and its errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_server.llm.anthropic import cache_control, sanitize, thinking_options
from pi_server.llm.client import plain_error, redact, stream_text
from pi_server.llm.models import ModelInfo
from pi_server.summaries.prompts import SUMMARIZATION_SYSTEM_PROMPT

MAX_TOKENS = 2048


class SummaryError(Exception):
    """The model could not give a summary; the message says why (never the key)."""


def request_body(model: ModelInfo, prompt: str, max_tokens: int = MAX_TOKENS, thinking: Any = None) -> dict[str, Any]:
    """The body pi's completeSimple sends for a summary (system prompt and user turn cached)."""
    cache = cache_control("short")  # pi would follow PI_CACHE_RETENTION here; ours has always sent short
    opts = thinking_options(model, thinking if model.reasoning else None, max_tokens)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": [{"role": "user", "content": [{"type": "text", "text": sanitize(prompt), "cache_control": cache}]}],
        "max_tokens": opts["max_tokens"],
        "stream": True,
        "system": [{"type": "text", "text": SUMMARIZATION_SYSTEM_PROMPT, "cache_control": dict(cache)}],
    }
    for k in ("thinking", "output_config"):
        if k in opts:
            body[k] = opts[k]
    return body


async def complete(
    body: dict[str, Any],
    key: str,
    *,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """Stream the request (the SDK retries twice); returns the text of the answer."""
    try:
        final = await stream_text(body, key, url=base_url, timeout=timeout, max_retries=2, on_text=on_text)
    except Exception as e:
        message = plain_error(e, timeout)
        if message is None:
            raise
        raise SummaryError(redact(message, key)) from None
    if final.stop_reason not in ("end_turn", "max_tokens", "stop_sequence", None):
        raise SummaryError(f"the model stopped with {final.stop_reason}")
    return "\n".join(b.text for b in final.content if getattr(b, "type", None) == "text")
