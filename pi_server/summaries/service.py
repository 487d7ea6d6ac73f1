"""Producing a branch summary: Anthropic when a key is there, else the extractive fallback."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

import pi_server.summaries.compaction as compaction
from pi_server.llm.client import api_key
from pi_server.llm.models import ANTHROPIC, DEFAULT_ANTHROPIC, ModelInfo
from pi_server.store import entry_types as et
from pi_server.summaries.branch import BranchRequest, collect_entries, finish_summary, prepare_branch_summary
from pi_server.summaries.client import complete_with_usage, request_body
from pi_server.summaries.extractive import extractive_summary


class Summary(msgspec.Struct, rename="camel", omit_defaults=True):
    """A branch summary and what it covered (the `pi/summarizeBranch` result)."""

    summary: str
    read_files: list[str]
    modified_files: list[str]
    entry_ids: list[str]
    common_ancestor_id: str | None
    source: str  # "anthropic" | "extractive" | "empty"
    usage: dict[str, Any] | None = None  # the model call's, as pi stores it on the entry


def summary_model(session_model: dict | None, configured: str | None) -> ModelInfo:
    """The session's model when it is an Anthropic one pi knows, else the configured one."""
    if session_model and session_model.get("provider") == "anthropic":
        model_id = session_model.get("modelId")
        if isinstance(model_id, str) and model_id in ANTHROPIC:
            return ANTHROPIC[model_id]
    if configured and configured in ANTHROPIC:
        return ANTHROPIC[configured]
    return ANTHROPIC[DEFAULT_ANTHROPIC]


def prepare(
    idx: Any, from_id: str | None, target: str | None, model: ModelInfo, custom: str | None, replace: bool
) -> tuple[BranchRequest, list[dict[str, Any]]]:
    req = prepare_branch_summary(idx, from_id, target, model.context_window, custom, replace)
    entries, _ = collect_entries(idx, from_id, target)
    return req, entries


async def summarize(
    req: BranchRequest,
    entries: list[dict[str, Any]],
    model: ModelInfo,
    thinking: Any = None,
    *,
    timeout: float = 120.0,
    base_url: str | None = None,
) -> Summary:
    """pi's generateBranchSummary at the session's thinking level. With nothing to summarize pi
    still answers (and navigateTree stores) "No content to summarize", without file lists."""
    if req.prompt is None:
        return Summary("No content to summarize", [], [], req.entry_ids, req.common_ancestor, "empty")
    key = api_key()
    usage = None
    if key:
        body = request_body(model, req.prompt, thinking)
        text, usage = await complete_with_usage(body, key, model=model, timeout=timeout, base_url=base_url)
        source = "anthropic"
    else:
        text = extractive_summary(req, entries)
        source = "extractive"
    return Summary(
        finish_summary(req, text) or "No summary generated",
        req.read_files,
        req.modified_files,
        req.entry_ids,
        req.common_ancestor,
        source,
        usage,
    )


async def compact(
    prep: Any,
    model: ModelInfo,
    thinking: Any,
    custom: str | None,
    *,
    timeout: float = 120.0,
    base_url: str | None = None,
) -> tuple[str, str, dict[str, Any] | None]:
    """The compaction summary (text, source, usage): Anthropic when a key is there, else
    extractive. As pi 1.6.0, the history and the turn prefix are asked for one after the other."""
    key = api_key()
    # serializing or summarizing a long history is seconds of work: off the event loop
    if key:
        texts: dict[str, str] = {}
        usage = None
        bodies = await asyncio.to_thread(compaction.requests, prep, model, thinking, custom)
        for kind, body in bodies.items():
            texts[kind], used = await complete_with_usage(body, key, model=model, timeout=timeout, base_url=base_url)
            usage = compaction.combine_usage(usage, used)
        return compaction.merge(prep, texts), "anthropic", usage
    return await asyncio.to_thread(_extractive_compaction, prep), "extractive", None


def _extractive_compaction(prep: Any) -> str:
    texts = {}
    for kind, messages in (("history", prep.to_summarize), ("prefix", prep.turn_prefix)):
        if messages:
            req = BranchRequest("", prep.read_files, prep.modified_files, [], None, messages)
            texts[kind] = extractive_summary(req, [{"type": et.MESSAGE, "message": m} for m in messages])
    if prep.split_turn and prep.turn_prefix and "prefix" not in texts:
        texts["prefix"] = "(no turn prefix)"
    return compaction.merge(prep, texts)
