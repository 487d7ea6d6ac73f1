"""The one builder of Anthropic Messages API request bodies, as pi-ai 1.6.0's streamSimple
builds them (api/anthropic-messages buildParams), with an API key and no session id:
agent turns, `--format anthropic` contexts, branch summaries and compaction passes.

Messages go out as pi sends them: consecutive turns of one role stay apart.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from pi_server.llm.anthropic_messages import (
    cache_control,
    convert_messages,
    dicts,
    norm_id,
    sanitize,
    with_effort_markers,
)
from pi_server.llm.context_estimate import NAN, clamp_max_tokens, js_min
from pi_server.llm.models import ADAPTIVE, EFFORT, MID_SYSTEM, MID_TOOLS, ModelInfo
from pi_server.llm.strict_schema import anthropic_rejects, is_strict, strict_schema
from pi_server.llm.transcript import collapse_system_messages, current_tools, system_message_text
from pi_server.llm.transform import transform_messages

__all__ = ["cache_control", "request_body", "sanitize"]

_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_INTERLEAVED = "interleaved-thinking-2025-05-14"
_FALLBACK = "server-side-fallback-2026-07-01"
_MID_EFFORT = ("mid-conversation-output-config-2026-07-01", "thinking-binding-controls-2026-08-01")
_INLINE_TOOLS = "inline-tools-2026-09-15"
# declared with native tool changes so the first change keeps the cached prefix
_PLACEHOLDER = {
    "name": "__pi_deferred_placeholder__",
    "description": "Reserved placeholder. Never available. Never call this.",
    "input_schema": {"type": "object", "properties": {}, "required": []},
    "defer_loading": True,
}


def convert_tools(
    tools: list[dict[str, Any]], cache: dict[str, Any] | None = None, strict_ok: bool = True
) -> list[dict[str, Any]]:
    """pi's convertTools with an API key and eager input streaming; with `strict_ok` (the
    model's supportsStrictTools) a tool asking for constrained sampling is sent strict where its schema allows."""
    out = []
    for k, t in enumerate(tools):
        strict = is_strict(t, strict_ok, anthropic_rejects)
        params = strict_schema(t.get("parameters")) if strict else t.get("parameters")
        schema = params if isinstance(params, dict) else {}
        inp: dict[str, Any] = {
            "type": "object",
            "properties": schema["properties"] if schema.get("properties") is not None else {},
            "required": schema["required"] if schema.get("required") is not None else [],
        }
        for key in ("additionalProperties", "$defs", "definitions"):
            if key in schema:
                inp[key] = schema[key]
        d: dict[str, Any] = {"name": t.get("name")}
        if "description" in t:
            d["description"] = t["description"]
        d["eager_input_streaming"] = True
        if strict:
            d["strict"] = True
            inp = {**schema, **inp}
        d["input_schema"] = inp
        if cache is not None and k == len(tools) - 1:
            d["cache_control"] = cache
        out.append(d)
    return out


def _reasoning(level: Any) -> Any:
    """streamSimple's `reasoning` option: the session's level unless it is off."""
    return level if level and level != "off" else None


def _effort(model: ModelInfo, level: Any) -> str:
    """mapThinkingLevelToEffort."""
    mapped = model.thinking_level_map.get(level) if isinstance(level, str) else None
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium"}.get(level, "high") if isinstance(level, str) else "high"


def _budget(level: Any) -> float:
    b = _BUDGETS.get("high" if level in ("xhigh", "max") else level) if isinstance(level, str) else None
    return NAN if b is None else float(b)


def _stream_options(model: ModelInfo, level: Any, msgs: list[dict[str, Any]]) -> dict[str, Any]:
    """streamSimple's options: max_tokens (the model's, clamped to the room the context
    `msgs` leaves), and thinking: off, an effort, or a budget."""
    base = clamp_max_tokens(model, msgs, float(model.max_tokens))
    reasoning = _reasoning(level)
    if reasoning is None:
        return {"max_tokens": base, "thinking": False}
    if model.has(ADAPTIVE):
        return {"max_tokens": base, "thinking": True, "effort": _effort(model, reasoning)}
    budget = _budget(reasoning)
    adjusted = js_min(base + budget, float(model.max_tokens))
    if adjusted <= budget:
        budget = js_min(budget, max(0.0, adjusted - 1024))
    out = clamp_max_tokens(model, msgs, adjusted)
    room = NAN if math.isnan(out) else max(0.0, out - 1024)
    return {"max_tokens": out, "thinking": True, "budget": js_min(budget, room)}


def _json_int(x: float) -> int | None:
    """A JS number as JSON sends it: NaN as null."""
    return None if math.isnan(x) else int(x)


def _thinking_fields(model: ModelInfo, opts: dict[str, Any], effort_messages: bool, disabled: bool) -> dict[str, Any]:
    if disabled:
        return {"thinking": {"type": "disabled"}}
    if effort_messages:
        # the top-level effort is part of the cached prompt; the markers set each reply's
        thinking = {
            "type": "adaptive",
            "display": "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        return {"thinking": thinking, "output_config": {"effort": "low"}}
    if not (model.reasoning and opts["thinking"]):
        return {}
    if model.has(ADAPTIVE):
        out: dict[str, Any] = {"thinking": {"type": "adaptive", "display": "summarized"}}
        if opts.get("effort"):
            out["output_config"] = {"effort": opts["effort"]}
        return out
    budget = opts["budget"]
    budget_tokens = 1024 if not budget or math.isnan(budget) else int(budget)
    return {"thinking": {"type": "enabled", "budget_tokens": budget_tokens, "display": "summarized"}}


def _betas(model: ModelInfo, thinking: bool, native_tools: bool) -> list[str]:
    out = []
    if model.reasoning and thinking and not model.has(ADAPTIVE):
        out.append(_INTERLEAVED)
    if model.fallbacks:
        out.append(_FALLBACK)
    if model.has(EFFORT):
        out += _MID_EFFORT
    if native_tools:
        out.append(_INLINE_TOOLS)
    return out


def request_body(
    llm: list[dict[str, Any]], ids: list, model: ModelInfo, thinking_level: Any, *, cache_retention: str | None = None
) -> tuple[dict[str, Any], list]:
    """The body for the LLM messages `llm` (entry ids `ids`); returns it and the entry id per body
    message. `cache_retention` is pi's option ("none": no cache breakpoints; by default PI_CACHE_RETENTION's)."""
    opts = _stream_options(model, thinking_level, llm)
    cache = None if cache_retention == "none" else cache_control(cache_retention)
    if model.has(MID_SYSTEM):
        msgs, mids = llm, list(ids)
    else:
        msgs = collapse_system_messages(llm)
        mids = [None] * (len(msgs) - sum(1 for m in llm if m.get("role") != "system"))
        mids += [i for m, i in zip(llm, ids, strict=True) if m.get("role") != "system"]
    initial = msgs[0] if msgs and msgs[0].get("role") == "system" else None
    tm = transform_messages(msgs, model, norm_id)
    if initial is not None:
        tm = tm[1:]
    initial_tools = dicts((initial or {}).get("toolsAdded"))
    native_tools = model.has(MID_SYSTEM) and model.has(MID_TOOLS) and bool(initial_tools)
    disabled = model.reasoning and not opts["thinking"] and model.thinking_level_map.get("off", 0) is not None
    effort_messages = model.has(EFFORT) and not disabled
    params, pids, levels = convert_messages(
        tm,
        mids,
        cache,
        model.provider if effort_messages else None,
        partial(convert_tools, strict_ok=model.strict_tools) if native_tools else None,
    )
    if effort_messages:
        params, pids = with_effort_markers(params, pids, levels, opts.get("effort") or "high")
    body: dict[str, Any] = {"model": model.id, "messages": params, "max_tokens": _json_int(opts["max_tokens"])}
    body["stream"] = True
    if betas := _betas(model, opts["thinking"], native_tools):
        body["betas"] = betas
    text = system_message_text(initial) if initial is not None else ""
    if text:
        body["system"] = [{"type": "text", "text": sanitize(text), **({"cache_control": cache} if cache else {})}]
    if native_tools:
        body["tools"] = [*convert_tools(initial_tools, cache, model.strict_tools), _PLACEHOLDER]
    elif tools := current_tools(msgs):
        body["tools"] = convert_tools(tools, cache, model.strict_tools)
    body.update(_thinking_fields(model, opts, effort_messages, disabled))
    if model.fallbacks:
        body["fallbacks"] = [{"model": f} for f in model.fallbacks]
    return body, pids
