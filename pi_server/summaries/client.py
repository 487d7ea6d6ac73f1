"""Asking Anthropic for a summary: the official SDK, streaming, with pi's request shape.

The API key comes from ANTHROPIC_API_KEY, else from pi's own auth.json in the
agent dir when it holds an Anthropic API key. It is never logged or returned.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from pi_server.llm.anthropic import sanitize, thinking_options
from pi_server.llm.models import ModelInfo
from pi_server.summaries.prompts import SUMMARIZATION_SYSTEM_PROMPT

MAX_TOKENS = 2048


class SummaryError(Exception):
    """The model could not give a summary; the message says why (never the key)."""


def api_key() -> str | None:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    agent = os.environ.get("PI_CODING_AGENT_DIR") or os.path.join(os.path.expanduser("~"), ".pi", "agent")
    try:
        with open(os.path.join(agent, "auth.json")) as f:
            auth = json.load(f)
    except (OSError, ValueError):
        return None
    entry = auth.get("anthropic") if isinstance(auth, dict) else None
    if isinstance(entry, dict) and entry.get("type") == "api_key" and isinstance(entry.get("key"), str):
        return entry["key"]
    return None


def request_body(model: ModelInfo, prompt: str, max_tokens: int = MAX_TOKENS, thinking: Any = None) -> dict[str, Any]:
    """The body pi's completeSimple sends for a summary (system prompt and user turn cached)."""
    cache = {"type": "ephemeral"}
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


def _clean(message: str, key: str) -> str:
    return message.replace(key, "[key]") if key else message


async def complete(
    body: dict[str, Any],
    key: str,
    *,
    base_url: str | None = None,
    timeout: float = 120.0,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """Stream the request; returns the text of the answer."""
    import anthropic

    client = anthropic.AsyncAnthropic(
        api_key=key,
        base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=timeout,
        max_retries=2,
    )
    params = {k: v for k, v in body.items() if k != "stream"}
    try:
        async with client.messages.stream(**params) as stream:
            async for text in stream.text_stream:
                if on_text is not None:
                    on_text(text)
            final = await stream.get_final_message()
    except anthropic.APIStatusError as e:
        raise SummaryError(_clean(f"Anthropic API error {e.status_code}: {_detail(e)}", key)) from None
    except anthropic.APITimeoutError:
        raise SummaryError(f"Anthropic API timed out after {timeout:g} s") from None
    except anthropic.APIConnectionError as e:
        raise SummaryError(_clean(f"cannot reach the Anthropic API: {e}", key)) from None
    finally:
        await client.close()
    if final.stop_reason not in ("end_turn", "max_tokens", "stop_sequence", None):
        raise SummaryError(f"the model stopped with {final.stop_reason}")
    return "\n".join(b.text for b in final.content if getattr(b, "type", None) == "text")


def _detail(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
    return getattr(e, "message", "") or "request failed"
