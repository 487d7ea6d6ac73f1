"""A ready Anthropic Messages API request body, shaped as pi's Anthropic provider shapes it.

On top of pi's shape, consecutive turns of the same role are merged into one,
so the body is accepted as it is.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pi_server.jsutil import js_trim
from pi_server.llm.models import ModelInfo
from pi_server.llm.transform import transform_messages

_LONE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_ADAPTIVE = ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")


def sanitize(s: Any) -> Any:
    return _LONE.sub("", s) if isinstance(s, str) else s


def _norm_id(i: Any) -> Any:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", i)[:64] if isinstance(i, str) else i


def _tool_result_content(content: Any) -> Any:
    blocks = content if isinstance(content, list) else []
    if not any(isinstance(b, dict) and b.get("type") == "image" for b in blocks):
        return sanitize("\n".join(_text(b) for b in blocks))
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text":
            out.append({"type": "text", "text": sanitize(b.get("text"))})
        else:
            out.append(_image(b))
    if not any(b["type"] == "text" for b in out):
        out.insert(0, {"type": "text", "text": "(see attached image)"})
    return out


def _text(b: Any) -> str:
    t = b.get("text") if isinstance(b, dict) else None
    return t if isinstance(t, str) else ""


def _image(b: dict[str, Any]) -> dict[str, Any]:
    src: dict[str, Any] = {"type": "base64"}
    if "mimeType" in b:
        src["media_type"] = b["mimeType"]
    if "data" in b:
        src["data"] = b["data"]
    return {"type": "image", "source": src}


def convert_messages(llm: list[dict[str, Any]], ids: list[str], model: ModelInfo) -> tuple[list, list]:
    """pi's convertMessages for the Anthropic API. Returns (params, entry id per param)."""
    params: list[dict[str, Any]] = []
    pids: list[str | None] = []
    tm = transform_messages(llm, model, _norm_id)
    i = 0
    while i < len(tm):
        m, src = tm[i]
        role = m.get("role")
        param = None
        if role == "user":
            param = _user_param(m.get("content"))
        elif role == "assistant":
            param = _assistant_param(m.get("content") or [])
        elif role == "toolResult":
            j = i
            while j < len(tm) and tm[j][0].get("role") == "toolResult":
                j += 1
            param = {"role": "user", "content": [_tool_result(r) for r, _ in tm[i:j]]}
            i = j - 1
        if param is not None:
            params.append(param)
            pids.append(ids[src] if src >= 0 else None)
        i += 1
    _cache_last_user(params)
    return params, pids


def _user_param(c: Any) -> dict[str, Any] | None:
    if isinstance(c, str):
        return {"role": "user", "content": sanitize(c)} if js_trim(c) else None
    blocks = []
    for b in c or []:
        if b.get("type") == "text":
            blocks.append({"type": "text", "text": sanitize(b.get("text"))})
        else:
            blocks.append(_image(b))
    blocks = [b for b in blocks if b["type"] != "text" or js_trim(b["text"] or "")]
    return {"role": "user", "content": blocks} if blocks else None


def _assistant_param(content: list[dict[str, Any]]) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for b in content:
        t = b.get("type")
        if t == "text":
            if not js_trim(b.get("text") or ""):
                continue
            blocks.append({"type": "text", "text": sanitize(b.get("text"))})
        elif t == "thinking":
            if b.get("redacted"):
                blocks.append({"type": "redacted_thinking", "data": b.get("thinkingSignature")})
                continue
            if not js_trim(b.get("thinking") or ""):
                continue
            sig = b.get("thinkingSignature")
            if not sig or not js_trim(sig):
                blocks.append({"type": "text", "text": sanitize(b.get("thinking"))})
            else:
                blocks.append({"type": "thinking", "thinking": sanitize(b.get("thinking")), "signature": sig})
        elif t == "toolCall":
            args = b.get("arguments")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": b.get("id"),
                    "name": b.get("name"),
                    "input": {} if args is None else args,
                }
            )
    return {"role": "assistant", "content": blocks} if blocks else None


def _tool_result(r: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": r.get("toolCallId"),
        "content": _tool_result_content(r.get("content")),
    }
    if "isError" in r:
        block["is_error"] = r["isError"]
    return block


def _cache_last_user(params: list[dict[str, Any]]) -> None:
    """pi marks the last user message (its last block) as the cache breakpoint."""
    cache = cache_control()
    if params and params[-1]["role"] == "user":
        last = params[-1]
        if isinstance(last["content"], list):
            if last["content"] and last["content"][-1].get("type") in ("text", "image", "tool_result"):
                last["content"][-1]["cache_control"] = cache
        elif isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache}]


def cache_control(retention: str | None = None) -> dict[str, Any]:
    """pi's cache_control for a retention ("short" or "long"; by default PI_CACHE_RETENTION's)."""
    if retention is None:
        retention = "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def merge_turns(params: list[dict[str, Any]], pids: list) -> tuple[list, list]:
    """Merge consecutive same-role messages (content as block lists)."""
    out: list[dict[str, Any]] = []
    oids: list = []
    owned: set[int] = set()  # merged messages whose content list is ours: extended in place (linear)
    for m, eid in zip(params, pids, strict=True):
        if out and out[-1]["role"] == m["role"]:
            prev = out[-1]
            if len(out) - 1 not in owned:
                prev["content"] = _blocks(prev["content"])
                owned.add(len(out) - 1)
            prev["content"].extend(_blocks(m["content"]))
            continue
        out.append({"role": m["role"], "content": m["content"]})
        oids.append(eid)
    return out, oids


def _blocks(c: Any) -> list:
    return [{"type": "text", "text": c}] if isinstance(c, str) else list(c)


def thinking_options(model: ModelInfo, level: Any, max_tokens: int | None = None) -> dict[str, Any]:
    """max_tokens, thinking and output_config as pi's streamSimpleAnthropic sets them
    (`max_tokens`: what the caller asked for; pi's default is the model's, capped at 32,000)."""
    base = max_tokens if max_tokens else (min(model.max_tokens, 32000) if model.max_tokens > 0 else 0)
    out: dict[str, Any] = {"max_tokens": base or model.max_tokens // 3}
    reasoning = level if isinstance(level, str) and level and level != "off" else None
    if reasoning is None:
        if model.reasoning:
            out["thinking"] = {"type": "disabled"}
        return out
    if any(s in model.id for s in _ADAPTIVE):
        if model.reasoning:
            out["thinking"] = {"type": "adaptive", "display": "summarized"}
            mapped = model.thinking_level_map.get(reasoning)
            effort = mapped or {"minimal": "low", "low": "low", "medium": "medium"}.get(reasoning, "high")
            out["output_config"] = {"effort": effort}
        return out
    budget = _BUDGETS.get("high" if reasoning == "xhigh" else reasoning)
    if budget is None:
        # pi adds an undefined budget: a NaN max_tokens, which JSON sends as null
        out["max_tokens"] = None
        budget = 0
    else:
        max_tokens = min(base + budget, model.max_tokens)
        if max_tokens <= budget:
            budget = max(0, max_tokens - 1024)
        out["max_tokens"] = max_tokens or model.max_tokens // 3
    if model.reasoning:
        out["thinking"] = {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"}
    return out


def request_body(
    llm: list[dict[str, Any]], ids: list[str], model: ModelInfo, thinking_level: Any, *, merge: bool = True
) -> tuple[dict[str, Any], list]:
    params, pids = convert_messages(llm, ids, model)
    if merge:
        params, pids = merge_turns(params, pids)
    opts = thinking_options(model, thinking_level)
    body: dict[str, Any] = {"model": model.id, "messages": params, "max_tokens": opts["max_tokens"], "stream": True}
    if "thinking" in opts:
        body["thinking"] = opts["thinking"]
    if "output_config" in opts:
        body["output_config"] = opts["output_config"]
    return body, pids
