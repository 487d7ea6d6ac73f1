"""Chat Completions `messages`, as pi-ai 1.6.0's openai-completions provider shapes them
for OpenAI's own API (no mid-conversation system messages: the replayed prompt leads)."""

from __future__ import annotations

import json
import re
from typing import Any

from pi_server.jsutil import js_string, js_stringify, js_trim, u16len
from pi_server.llm.anthropic_messages import filled, sanitize
from pi_server.llm.models import ModelInfo
from pi_server.llm.transcript import collapse_system_messages, system_message_text
from pi_server.llm.transform import transform_messages

_REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_text")
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _imul(a: int, b: int) -> int:
    return (a * b) & 0xFFFFFFFF


def _b36(n: int) -> str:
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _B36[r] + out
        if n == 0:
            return out


def short_hash(s: str) -> str:
    """pi-ai's shortHash (over UTF-16 code units)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = s.encode("utf-16-le", "surrogatepass")
    for k in range(0, len(units), 2):
        ch = units[k] | (units[k + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _b36(h2) + _b36(h1)


def _norm_id(model: ModelInfo):
    def norm(i: Any) -> Any:
        if not isinstance(i, str):
            return i
        if "|" in i:
            call, item = i.split("|", 1)
            call, item = re.sub(r"[^a-zA-Z0-9_-]", "_", call), re.sub(r"[^a-zA-Z0-9_-]", "_", item)
            combined = f"{call}_{item}" if item else call
            if u16len(combined) <= 40:
                return combined
            h = short_hash(i)[:8]
            return f"{call[: max(1, 40 - len(h) - 1)]}_{h}"
        if model.provider == "openai":
            return i[:40] if len(i) > 40 else i
        return i

    return norm


def _image_url(b: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{_js(b, 'mimeType')};base64,{_js(b, 'data')}"}}


def _js(b: dict[str, Any], key: str) -> str:
    """A field as a JS template string shows it."""
    return js_string(b[key], "null") if key in b else "undefined"


def _is_detail(d: Any) -> bool:
    """isOpenAIReasoningDetail."""
    if not isinstance(d, dict):
        return False
    if not (d.get("id") is None or isinstance(d["id"], str)):
        return False
    if "format" in d and not isinstance(d["format"], str):
        return False
    if "index" in d and not (isinstance(d["index"], int | float) and not isinstance(d["index"], bool)):
        return False
    t = d.get("type")
    if t == "reasoning.summary":
        return isinstance(d.get("summary"), str)
    if t == "reasoning.encrypted":
        return isinstance(d.get("data"), str)
    if t == "reasoning.text":
        return isinstance(d.get("text"), str) and (d.get("signature") is None or isinstance(d["signature"], str))
    return False


def _parse(sig: Any) -> Any:
    if not sig or not isinstance(sig, str):
        return None
    try:
        return json.loads(sig)
    except ValueError:
        return None


def _reasoning_details(thinking: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list | None:
    for b in thinking:
        p = _parse(b.get("thinkingSignature"))
        if isinstance(p, list) and p and all(_is_detail(d) for d in p):
            return p
    legacy = []
    for tc in calls:
        p = _parse(tc.get("thoughtSignature"))
        if (
            _is_detail(p)
            and p["type"] == "reasoning.encrypted"
            and isinstance(p.get("id"), str)
            and p["id"]
            and p["data"]
        ):
            legacy.append(p)
    return legacy or None


def _assistant(m: dict[str, Any]) -> dict[str, Any] | None:
    blocks = [b for b in m.get("content") or [] if isinstance(b, dict)]
    msg: dict[str, Any] = {"role": "assistant", "content": None}
    text = "".join(sanitize(b.get("text")) for b in blocks if b.get("type") == "text" and filled(b.get("text")))
    thinking = [b for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    details = _reasoning_details(thinking, calls)
    if text:
        msg["content"] = text
    nonempty = [b for b in thinking if filled(b.get("thinking"))]
    if nonempty and details is None:
        sig = nonempty[0].get("thinkingSignature")
        if sig in _REASONING_FIELDS:
            msg[sig] = "\n".join(b.get("thinking") for b in nonempty)
    if calls:
        msg["tool_calls"] = [
            {
                "id": tc.get("id"),
                "type": "function",
                "function": {"name": tc.get("name"), "arguments": js_stringify(tc.get("arguments"))},
            }
            for tc in calls
        ]
    if details is not None:
        msg["reasoning_details"] = details
    return msg if msg["content"] or "tool_calls" in msg else None


def _user(m: dict[str, Any]) -> dict[str, Any] | None:
    c = m.get("content")
    if isinstance(c, str):
        return {"role": "user", "content": sanitize(c)}
    content = [
        {"type": "text", "text": sanitize(b.get("text"))} if b.get("type") == "text" else _image_url(b)
        for b in c or []
        if b.get("type") != "text" or (isinstance(b.get("text"), str) and b["text"])
    ]
    return {"role": "user", "content": content} if content else None


def _tool_results(tm: list, i: int, ids: list[str], model: ModelInfo, params: list, pids: list) -> int:
    """The tool results from i on, one `tool` message each, then their images; returns the next index."""
    images: list[dict[str, Any]] = []
    j = i
    while j < len(tm) and tm[j][0].get("role") == "toolResult":
        r, rsrc = tm[j]
        content = [b for b in r.get("content") or [] if isinstance(b, dict)]
        text = "\n".join(
            b["text"] if isinstance(b.get("text"), str) else "" for b in content if b.get("type") == "text"
        )
        has_images = any(b.get("type") == "image" for b in content)
        out = text if js_trim(text) else "(see attached image)" if has_images else "(no tool output)"
        params.append({"role": "tool", "content": sanitize(out), "tool_call_id": r.get("toolCallId")})
        pids.append(ids[rsrc] if rsrc >= 0 else None)
        if has_images and model.images:
            images += [_image_url(b) for b in content if b.get("type") == "image"]
        j += 1
    if images:
        params.append(
            {"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images]}
        )
        pids.append(ids[tm[i][1]] if tm[i][1] >= 0 else None)
    return j


def convert_messages(llm: list[dict[str, Any]], ids: list[str], model: ModelInfo) -> tuple[list, list]:
    """pi's convertMessages for Chat Completions. Returns (params, entry id per param)."""
    msgs = collapse_system_messages(llm)
    mids: list[Any] = [None] * (len(msgs) - sum(1 for m in llm if m.get("role") != "system"))
    mids += [i for m, i in zip(llm, ids, strict=True) if m.get("role") != "system"]
    params: list[dict[str, Any]] = []
    pids: list[str | None] = []
    tm = transform_messages(msgs, model, _norm_id(model))
    role_of_instructions = "developer" if model.reasoning and model.provider == "openai" else "system"
    i = 0
    while i < len(tm):
        m, src = tm[i]
        role = m.get("role")
        if role == "toolResult":
            i = _tool_results(tm, i, mids, model, params, pids)
            continue
        param = None
        if role == "system":
            text = system_message_text(m)
            param = {"role": role_of_instructions, "content": sanitize(text)} if text else None
        elif role == "user":
            param = _user(m)
        elif role == "assistant":
            param = _assistant(m)
        if param is not None:
            params.append(param)
            pids.append(mids[src] if src >= 0 else None)
        i += 1
    return params, pids
