"""The `pi/buildContext` result in each wire format."""

from __future__ import annotations

from typing import Any

from pi_server.context.build import build_context
from pi_server.llm.anthropic import request_body
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.models import OPENAI_DEFAULT, anthropic_model
from pi_server.llm.openai import convert_messages as openai_messages
from pi_server.llm.tokens import estimate_total
from pi_server.store.index import SessionIndex

FORMATS = ("agent", "llm", "anthropic", "openai")


def context_result(
    idx: SessionIndex, leaf_id: str | None, *, before_first: bool = False, fmt: str = "agent"
) -> dict[str, Any]:
    ctx = build_context(idx, leaf_id, before_first=before_first)
    resolved_leaf = None if before_first else (leaf_id if leaf_id is not None else idx.last_id)
    out: dict[str, Any] = {
        "leafId": resolved_leaf,
        "model": ctx.model,
        "thinkingLevel": ctx.thinking_level,
        "tokens": estimate_total(ctx.messages),
    }
    if fmt == "agent":
        out["messages"], out["entryIds"] = ctx.messages, ctx.entry_ids
        return out
    llm, ids = convert_to_llm(ctx.messages, ctx.entry_ids)
    if fmt == "llm":
        out["messages"], out["entryIds"] = llm, ids
    elif fmt == "anthropic":
        model = anthropic_model(ctx.model)
        body, pids = request_body(llm, ids, model, ctx.thinking_level)
        out["request"] = body
        out["messages"], out["entryIds"] = body["messages"], pids
    elif fmt == "openai":
        msgs, pids = openai_messages(llm, ids, OPENAI_DEFAULT)
        out["messages"], out["entryIds"] = msgs, pids
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return out
