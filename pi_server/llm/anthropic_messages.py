"""Anthropic Messages API `messages`, as pi-ai 1.6.0's convertMessages shapes them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from pi_server.jsutil import js_key, js_trim
from pi_server.llm.transcript import render_system_update
from pi_server.llm.transform import placeholder_images

_LONE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_ERROR_IMAGE = "(image attached after the tool results)"
_CACHEABLE = ("text", "image", "tool_result", "tool_addition", "tool_removal")

ToolConverter = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def filled(v: Any) -> bool:
    """A string with more than white space (pi calls trim() on it; anything else counts as empty)."""
    return isinstance(v, str) and bool(js_trim(v))


def dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def sanitize(s: Any) -> Any:
    """`s` without lone surrogates (pi's sanitizeSurrogates)."""
    if not isinstance(s, str) or s.isascii():  # no surrogate at all (known without a scan)
        return s
    if len(s) <= _SLICE:
        return _LONE.sub("", s) if _SURROGATE.search(s) else s
    # a compaction's prompt can be tens of megabytes: a slice at a time, never splitting a
    # pair, and only a slice holding a surrogate is cleaned. The cleaning pattern looks
    # around every character (27 ms per million, the interpreter lock held); finding one is
    # ten times quicker, and every slice held the lock as long: each of the other threads'
    # turns waited for it (0.5-1 s for another client's small request)
    out, start, found = [], 0, False
    while start < len(s):
        end = min(start + _SLICE, len(s))
        while end < len(s) and "\ud800" <= s[end - 1] <= "\udbff":
            end += 1
        if _SURROGATE.search(s, start, end):
            out.append(_LONE.sub("", s[start:end]))
            found = True
        else:
            out.append(s[start:end])
        start = end
    return "".join(out) if found else s


_SLICE = 1 << 18
_SURROGATE = re.compile("[\ud800-\udfff]")


def norm_id(i: Any) -> Any:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", i)[:64] if isinstance(i, str) else i


def cache_control(retention: str | None = None) -> dict[str, Any]:
    """pi's cache_control for a retention ("short" or "long"; by default PI_CACHE_RETENTION's)."""
    if retention is None:
        retention = "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _text(b: Any) -> str:
    t = b.get("text") if isinstance(b, dict) else None
    return t if isinstance(t, str) else ""


def image(b: dict[str, Any]) -> dict[str, Any]:
    src: dict[str, Any] = {"type": "base64"}
    if "mimeType" in b:
        src["media_type"] = b["mimeType"]
    if "data" in b:
        src["data"] = b["data"]
    return {"type": "image", "source": src}


def _content_blocks(content: Any) -> Any:
    blocks = content if isinstance(content, list) else []
    if not any(isinstance(b, dict) and b.get("type") == "image" for b in blocks):
        return sanitize("\n".join(_text(b) for b in blocks))
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text":
            out.append({"type": "text", "text": sanitize(b.get("text"))})
        else:
            out.append(image(b))
    if not any(b["type"] == "text" for b in out):
        out.insert(0, {"type": "text", "text": "(see attached image)"})
    return out


def _error_images(r: dict[str, Any]) -> tuple[list, list] | None:
    """splitErrorToolResultImages: an error result's images leave it, a placeholder stays."""
    content = r.get("content") if isinstance(r.get("content"), list) else []
    images = [b for b in content if isinstance(b, dict) and b.get("type") == "image"]
    if not r.get("isError") or not images:
        return None
    kept = placeholder_images(content, _ERROR_IMAGE)
    caption = f"Images from the error result of tool call {r.get('toolCallId')} ({r.get('toolName')}):"
    return kept, [{"type": "text", "text": caption}, *(image(b) for b in images)]


def _tool_result(r: dict[str, Any], content: Any) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": r.get("toolCallId"),
        "content": _content_blocks(content),
    }
    if "isError" in r:
        block["is_error"] = r["isError"]
    return block


def _user_param(c: Any) -> dict[str, Any] | None:
    if isinstance(c, str):
        return {"role": "user", "content": sanitize(c)} if js_trim(c) else None
    blocks = []
    for b in c or []:
        if b.get("type") == "text":
            blocks.append({"type": "text", "text": sanitize(b.get("text"))})
        else:
            blocks.append(image(b))
    blocks = [b for b in blocks if b["type"] != "text" or filled(b["text"])]
    return {"role": "user", "content": blocks} if blocks else None


def _thinking(b: dict[str, Any]) -> dict[str, Any] | None:
    if b.get("redacted"):
        return {"type": "redacted_thinking", "data": b.get("thinkingSignature")}
    sig = b.get("thinkingSignature")
    signed = filled(sig)
    if not filled(b.get("thinking")) and not signed:
        return None
    if not signed:
        # an unsigned thinking block (an aborted stream) goes as text
        return {"type": "text", "text": sanitize(b.get("thinking"))}
    return {"type": "thinking", "thinking": sanitize(b.get("thinking")), "signature": sig}


def _assistant_param(content: list[dict[str, Any]]) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for b in content:
        t = b.get("type")
        if t == "text":
            if filled(b.get("text")):
                blocks.append({"type": "text", "text": sanitize(b.get("text"))})
        elif t == "thinking":
            if (th := _thinking(b)) is not None:
                blocks.append(th)
        elif t == "toolCall":
            args = b.get("arguments")
            tool = {"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": {} if args is None else args}
            blocks.append(tool)
    return {"role": "assistant", "content": blocks} if blocks else None


def _system_param(m: dict[str, Any], tools: ToolConverter | None) -> dict[str, Any] | None:
    """A later system message in place: its rendered update, then native tool changes."""
    blocks: list[dict[str, Any]] = []
    text = render_system_update(m)
    if text:
        blocks.append({"type": "text", "text": sanitize(text)})
    if tools is not None:
        added = dicts(m.get("toolsAdded"))
        redefined = {js_key(t.get("name")) for t in added}
        for t in dicts(m.get("toolsRemoved")):
            if js_key(t.get("name")) not in redefined:
                blocks.append({"type": "tool_removal", "tool": {"type": "tool_reference", "name": t.get("name")}})
        for d in tools(added):
            blocks.append({"type": "tool_addition", "tool": {"type": "tool_definition", "definition": d}})
    return {"role": "system", "content": blocks} if blocks else None


def convert_messages(
    tm: list[tuple[dict[str, Any], int]],
    ids: list[str],
    cache: dict[str, Any] | None,
    effort_provider: str | None = None,
    tools: ToolConverter | None = None,
) -> tuple[list, list, dict[int, str]]:
    """pi's convertMessages on transformed messages. Returns (params, entry id per param,
    the effort each managed assistant reply was given, by param index)."""
    params: list[dict[str, Any]] = []
    pids: list[str | None] = []
    levels: dict[int, str] = {}
    # later system messages wait for the next assistant reply sent (or the end), so one
    # never lands between a tool_use and its tool_result
    pending: list[tuple[dict[str, Any], str | None]] = []

    def add(param: dict[str, Any], src: int) -> None:
        params.append(param)
        pids.append(ids[src] if src >= 0 else None)

    def flush() -> None:
        for p, eid in pending:
            params.append(p)
            pids.append(eid)
        pending.clear()

    i = 0
    while i < len(tm):
        m, src = tm[i]
        role = m.get("role")
        if role == "system":
            if (p := _system_param(m, tools)) is not None:
                pending.append((p, ids[src] if src >= 0 else None))
        elif role == "user":
            if (p := _user_param(m.get("content"))) is not None:
                add(p, src)
        elif role == "assistant":
            if (p := _assistant_param(m.get("content") or [])) is not None:
                flush()
                if (
                    effort_provider is not None
                    and m.get("api") == "anthropic-messages"
                    and m.get("provider") == effort_provider
                    and m.get("providerThinkingLevel") in _EFFORTS
                ):
                    levels[len(params)] = m["providerThinkingLevel"]
                add(p, src)
        elif role == "toolResult":
            j = i
            results, extra = [], []
            while j < len(tm) and tm[j][0].get("role") == "toolResult":
                r = tm[j][0]
                split = _error_images(r)
                results.append(_tool_result(r, split[0] if split else r.get("content")))
                extra += split[1] if split else []
                j += 1
            add({"role": "user", "content": results + extra}, src)
            i = j - 1
        i += 1
    flush()
    if cache is not None:
        _cache_last(params, cache)
    return params, pids, levels


def _cache_last(params: list[dict[str, Any]], cache: dict[str, Any]) -> None:
    """pi marks the last user or system message (its last block) as the cache breakpoint."""
    if not params or params[-1]["role"] not in ("user", "system"):
        return
    last = params[-1]
    if isinstance(last["content"], list):
        if last["content"] and last["content"][-1].get("type") in _CACHEABLE:
            last["content"][-1]["cache_control"] = cache
    elif isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache}]


def with_effort_markers(params: list, pids: list, levels: dict[int, str], active: str) -> tuple[list, list]:
    """insertThinkingLevelMessages: each managed reply preceded by its effort, the active one last."""
    out: list[dict[str, Any]] = []
    oids: list[str | None] = []
    for k, (p, eid) in enumerate(zip(params, pids, strict=True)):
        if k in levels:
            out.append({"role": "system", "content": [], "output_config": {"effort": levels[k]}})
            oids.append(None)
        out.append(p)
        oids.append(eid)
    out.append({"role": "system", "content": [], "output_config": {"effort": active}})
    oids.append(None)
    return out, oids
