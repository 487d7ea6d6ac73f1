"""The `pi/buildContext` result in each wire format."""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server.context.build import SessionContext, build_context
from pi_server.llm.anthropic import request_body
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.models import OPENAI_DEFAULT, anthropic_model
from pi_server.llm.openai import convert_messages as openai_messages
from pi_server.llm.tokens import estimate_raw, estimate_tokens, estimate_total
from pi_server.llm.transcript import system_at
from pi_server.store import slices
from pi_server.store.decode import jdumps, no_gc
from pi_server.store.index import SessionIndex

FORMATS = ("agent", "llm", "anthropic", "openai")


def _tokens(idx: SessionIndex, ctx: SessionContext) -> int:
    """estimateTokens summed; each message's estimate computed once per index.

    A message is keyed by its entry, the context edit applied to it and its place
    among the entry's messages (a compaction gives two); by its entry's position
    alone when it is its entry's first message, unedited (the same in every context).
    """
    if ctx.positions is None:
        return estimate_total(ctx.messages)
    cache = idx.tokens
    keys: list[Any]
    if not ctx.edits_in_force and _distinct(ctx.positions):
        keys = ctx.positions  # the common case: one message per entry, none edited
    else:
        edits = ctx.edit_positions or [-1] * len(ctx.positions)
        keys = []
        prev, k = -1, 0
        for pos, edit in zip(ctx.positions, edits, strict=True):
            k = k + 1 if pos == prev else 0
            prev = pos
            keys.append(pos if edit < 0 and k == 0 else (pos, edit, k))
    # a million keys a slice at a time: one C call over all of them holds the interpreter lock
    got = slices.mapped(cache.get, keys)
    if any(None in got[part] for part in slices.spans(len(got))):
        for i, t in enumerate(got):
            if t is None:
                m = ctx.messages[i]
                got[i] = cache[keys[i]] = estimate_raw(m) if type(m) is msgspec.Raw else estimate_tokens(m)
    return sum(sum(got[part]) for part in slices.spans(len(got)))


def _distinct(positions: list[int]) -> bool:
    """No position twice: a set built a slice at a time (one set of a million, the same hold)."""
    seen: set[int] = set()
    for part in slices.spans(len(positions)):
        seen.update(positions[part])
    return len(seen) == len(positions)


def _wire_ready(out: dict[str, Any]) -> dict[str, Any]:
    """Every value encodable by msgspec as it is: one holding a lone surrogate (which msgspec
    refuses) is given as JSON bytes escaping it, as JS writes it."""
    for k, v in out.items():
        if k != "messages" and v is not None and type(v) is not int:
            # a long list (a million entry ids) a slice at a time: one encoder call over it
            # holds the interpreter lock for as long, every other thread waiting
            pieces = [v[part] for part in slices.spans(len(v))] if type(v) is list else [v]
            try:
                for piece in pieces:
                    _encode(piece)
            except UnicodeEncodeError:
                out[k] = msgspec.Raw(jdumps(v))
    return out



_encode = msgspec.json.Encoder().encode


def context_result(
    idx: SessionIndex, leaf_id: str | None, *, before_first: bool = False, fmt: str = "agent"
) -> dict[str, Any]:
    # tens of thousands of small objects, none in a cycle: collections would only rescan
    # the index and the entry cache (superlinear in effect on large files)
    with no_gc():
        return _context_result(idx, leaf_id, before_first, fmt)


def _context_result(idx: SessionIndex, leaf_id: str | None, before_first: bool, fmt: str) -> dict[str, Any]:
    # the "agent" answer carries plain messages as the file's bytes, straight to the wire
    ctx = build_context(idx, leaf_id, before_first=before_first, opaque=fmt == "agent")
    resolved_leaf = None if before_first else (leaf_id if leaf_id is not None else idx.last_id)
    out: dict[str, Any] = {
        "leafId": resolved_leaf,
        "model": ctx.model,
        "thinkingLevel": ctx.thinking_level,
        "tokens": _tokens(idx, ctx),
        # only system messages matter to it: picked once here instead of scanned twice there
        "system": system_at([m for m in ctx.messages if type(m) is dict and m.get("role") == "system"]),
    }
    if fmt == "agent":
        raw = msgspec.Raw
        out["messages"] = [m if type(m) is raw else raw(jdumps(m)) for m in ctx.messages]
        out["entryIds"] = ctx.entry_ids
        return _wire_ready(out)
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
