"""pi-ai 1.6.0's transformMessages: make a history replayable on a given model.

Thinking from other models is dropped, tool call ids are normalized, errored
and aborted assistant turns are dropped, tool calls left without results get
pi's synthetic "No result provided" error results, and a system message
between a tool call and its results waits until the results are in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_server.jsutil import js_key, js_trim
from pi_server.llm.models import ModelInfo

NON_VISION_USER = "(image omitted: model does not support images)"
NON_VISION_TOOL = "(tool image omitted: model does not support images)"


def placeholder_images(content: list, placeholder: str) -> list:
    """Each run of images in `content` replaced by one `placeholder` text block."""
    out = []
    prev = False
    for b in content:
        if isinstance(b, dict) and b.get("type") == "image":
            if not prev:
                out.append({"type": "text", "text": placeholder})
            prev = True
            continue
        out.append(b)
        prev = isinstance(b, dict) and b.get("text") == placeholder
    return out


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [b for b in v if isinstance(b, dict)] if isinstance(v, list) else []


def _well_formed(m: Any) -> dict[str, Any]:
    """Content in the shape the converters expect; pi itself would throw on anything else."""
    if not isinstance(m, dict):
        return {}
    c = m.get("content")
    if c is None:
        return {**m, "content": []}
    role = m.get("role")
    if role == "user" and not isinstance(c, str):
        if not isinstance(c, list) or not all(isinstance(b, dict) for b in c):
            return {**m, "content": _dicts(c)}
    elif role in ("assistant", "toolResult"):
        if not isinstance(c, list) or not all(isinstance(b, dict) for b in c):
            return {**m, "content": _dicts(c)}
    return m


def transform_messages(
    messages: list[dict[str, Any]],
    model: ModelInfo,
    normalize_id: Callable[[str], str] | None,
) -> list[tuple[dict[str, Any], int]]:
    """Returns (message, index of the source message or -1 for synthetic ones)."""
    id_map: dict[Any, str] = {}  # tool call ids renamed so far, for the results that follow
    staged = [_stage(_well_formed(m), model, normalize_id, id_map) for m in messages]
    return _with_missing_results(staged)


def _stage(
    m: dict[str, Any], model: ModelInfo, normalize_id: Callable[[str], str] | None, id_map: dict[Any, str]
) -> dict[str, Any]:
    """One message made fit for `model`: images, tool call ids, other models' thinking."""
    role = m.get("role")
    if not model.images:
        if role == "user" and isinstance(m.get("content"), list):
            m = {**m, "content": placeholder_images(m["content"], NON_VISION_USER)}
        elif role == "toolResult" and isinstance(m.get("content"), list):
            m = {**m, "content": placeholder_images(m["content"], NON_VISION_TOOL)}
    if role == "toolResult":
        new = id_map.get(js_key(m.get("toolCallId")))
        if new and new != m.get("toolCallId"):
            m = {**m, "toolCallId": new}
        return m
    if role == "assistant":
        same = m.get("provider") == model.provider and m.get("api") == model.api and m.get("model") == model.id
        return {**m, "content": _assistant_content(m.get("content") or [], same, normalize_id, id_map)}
    return m


def _assistant_content(
    blocks: list[Any], same: bool, normalize_id: Callable[[str], str] | None, id_map: dict[Any, str]
) -> list[Any]:
    content = []
    for b in blocks:
        t = b.get("type") if isinstance(b, dict) else None
        if t == "thinking":
            # thinking is only valid for the model that produced it
            if not same:
                continue
            th = b.get("thinking")
            if b.get("redacted") or b.get("thinkingSignature") or (th and js_trim(th) != ""):
                content.append(b)
        elif t == "text":
            content.append(b if same else {"type": "text", "text": b.get("text")})
        elif t == "toolCall":
            tc = b
            if not same and "thoughtSignature" in tc and tc.get("thoughtSignature"):
                tc = {k: v for k, v in tc.items() if k != "thoughtSignature"}
            if not same and normalize_id is not None:
                nid = normalize_id(tc.get("id"))
                if nid != tc.get("id"):
                    id_map[js_key(tc.get("id"))] = nid
                    tc = {**tc, "id": nid}
            content.append(tc)
        else:
            content.append(b)
    return content


def _missing_result(tc: dict[str, Any]) -> tuple[dict[str, Any], int]:
    return (
        {
            "role": "toolResult",
            "toolCallId": tc.get("id"),
            "toolName": tc.get("name"),
            "content": [{"type": "text", "text": "No result provided"}],
            "isError": True,
        },
        -1,
    )


def _with_missing_results(staged: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Errored/aborted assistant turns dropped; pi's synthetic error result for each call left unanswered."""
    out: list[tuple[dict[str, Any], int]] = []
    pending: list[dict[str, Any]] = []
    seen: set[Any] = set()
    held: list[tuple[dict[str, Any], int]] = []  # system messages met while tool calls were open

    def flush() -> None:
        nonlocal pending, seen
        out.extend(_missing_result(tc) for tc in pending if js_key(tc.get("id")) not in seen)
        pending = []
        seen = set()
        out.extend(held)
        held.clear()

    for i, m in enumerate(staged):
        role = m.get("role")
        if role == "assistant":
            flush()
            if m.get("stopReason") in ("error", "aborted"):
                continue
            calls = [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
            if calls:
                pending = calls
                seen = set()
            out.append((m, i))
        elif role == "toolResult":
            seen.add(js_key(m.get("toolCallId")))
            out.append((m, i))
        elif role == "user":
            flush()
            out.append((m, i))
        elif role == "system" and pending:
            held.append((m, i))
        else:
            out.append((m, i))
    flush()
    return out
