"""Chat Completions `messages`, shaped as pi's openai-completions provider shapes them."""

from __future__ import annotations

import re
from typing import Any

from pi_server.jsutil import js_stringify, js_trim
from pi_server.llm.anthropic import sanitize
from pi_server.llm.models import ModelInfo
from pi_server.llm.transform import transform_messages


def _norm_id(model: ModelInfo):
    def norm(i: Any) -> Any:
        if not isinstance(i, str):
            return i
        if "|" in i:
            return re.sub(r"[^a-zA-Z0-9_-]", "_", i.split("|")[0])[:40]
        if model.provider == "openai":
            return i[:40]
        return i

    return norm


def _image_url(b: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{b.get('mimeType')};base64,{b.get('data')}"}}


def convert_messages(llm: list[dict[str, Any]], ids: list[str], model: ModelInfo) -> tuple[list, list]:
    params: list[dict[str, Any]] = []
    pids: list[str | None] = []
    tm = transform_messages(llm, model, _norm_id(model))
    i = 0
    while i < len(tm):
        m, src = tm[i]
        eid = ids[src] if src >= 0 else None
        role = m.get("role")
        if role == "user":
            c = m.get("content")
            if isinstance(c, str):
                params.append({"role": "user", "content": sanitize(c)})
                pids.append(eid)
            else:
                content = [
                    {"type": "text", "text": sanitize(b.get("text"))} if b.get("type") == "text" else _image_url(b)
                    for b in c or []
                ]
                if content:
                    params.append({"role": "user", "content": content})
                    pids.append(eid)
        elif role == "assistant":
            blocks = m.get("content") or []
            msg: dict[str, Any] = {"role": "assistant", "content": None}
            text = "".join(
                sanitize(b.get("text")) for b in blocks if b.get("type") == "text" and js_trim(b.get("text") or "")
            )
            thinking = [b for b in blocks if b.get("type") == "thinking" and js_trim(b.get("thinking") or "")]
            if text:
                msg["content"] = text
            if thinking:
                sig = thinking[0].get("thinkingSignature")
                if sig:
                    msg[sig] = "\n".join(b.get("thinking") for b in thinking)
            calls = [b for b in blocks if b.get("type") == "toolCall"]
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": tc.get("id"),
                        "type": "function",
                        "function": {"name": tc.get("name"), "arguments": js_stringify(tc.get("arguments"))},
                    }
                    for tc in calls
                ]
            if not msg["content"] and "tool_calls" not in msg:
                i += 1
                continue
            params.append(msg)
            pids.append(eid)
        elif role == "toolResult":
            images: list[dict[str, Any]] = []
            j = i
            while j < len(tm) and tm[j][0].get("role") == "toolResult":
                r, rsrc = tm[j]
                content = r.get("content") or []
                text = "\n".join(b.get("text") for b in content if b.get("type") == "text")
                params.append(
                    {
                        "role": "tool",
                        "content": sanitize(text or "(see attached image)"),
                        "tool_call_id": r.get("toolCallId"),
                    }
                )
                pids.append(ids[rsrc] if rsrc >= 0 else None)
                if model.images:
                    images += [_image_url(b) for b in content if b.get("type") == "image"]
                j += 1
            i = j - 1
            if images:
                params.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
                    }
                )
                pids.append(eid)
        i += 1
    return params, pids
