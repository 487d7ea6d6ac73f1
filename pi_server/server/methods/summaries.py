"""Summaries: pi/summarizeBranch and pi/compact (and the summary a branch switch asks for)."""

from __future__ import annotations

from typing import Any

import msgspec

from pi_server import summaries
from pi_server.context.settings import settings_at
from pi_server.live import ops
from pi_server.live.appends import SystemInForce, system_in_force
from pi_server.live.errors import EntryNotFound
from pi_server.llm.models import clamp_thinking_level
from pi_server.server import errors, notify, offcore, params
from pi_server.server.host import Host
from pi_server.server.methods import live as livepi
from pi_server.server.results import CompactResult
from pi_server.server.rpc import pi_method
from pi_server.store import entry_types as et
from pi_server.store import slices
from pi_server.store.index import SessionIndex
from pi_server.summaries.client import SummaryError
from pi_server.summaries.compaction import prepare_compaction
from pi_server.tree.paths import path_to


@pi_method("pi/summarizeBranch", params.SummarizeBranch)
async def summarize_branch(ls: Host, p: params.SummarizeBranch) -> summaries.Summary:
    """pi's branch summary of the entries between `fromId` (default: the leaf) and the common ancestor."""
    return await branch_summary(
        ls,
        p.session,
        p.targetId,
        None if p.fromId is params.UNSET else p.fromId,
        p.customInstructions,
        p.replaceInstructions,
        explicit_from=p.fromId is not params.UNSET,
    )


async def branch_summary(
    ls: Host,
    session: str,
    target: str | None,
    from_id: str | None,
    custom: str | None,
    replace: bool,
    explicit_from: bool = False,
) -> summaries.Summary:
    """Summarize the branch from `from_id` (default: the current leaf) back to its common ancestor with `target`."""

    def prepare() -> Any:
        live = ls.registry.get(session)
        start = from_id if explicit_from else live.leaf_id
        for eid in (start, target):
            if eid is not None:
                ls.registry.entry_pos(live, eid)
        settings = settings_at(live.index, start)
        model = summaries.summary_model(settings.model, ls.settings.summary.model)
        req, entries = summaries.prepare(live.index, start, target, model, custom, replace)
        # at the level pi's session runs at: clamped to what the model has
        return req, entries, model, clamp_thinking_level(model, settings.thinking_level or "off")

    req, entries, model, thinking = await ls.core(prepare)
    token = await ls.begin_progress("Summarizing branch", f"{len(req.entry_ids)} entries")
    try:
        return await summaries.summarize(req, entries, model, thinking, timeout=ls.settings.summary.timeout)
    except SummaryError as e:
        raise errors.SummaryFailed(f"summary failed: {e}") from None
    finally:
        ls.end_progress(token)


def _prepare(ls: Host, idx: SessionIndex, leaf: str) -> tuple[Any, Any, str, SystemInForce | None]:
    """pi's prepareCompaction at `leaf`, and the system message in force there, which the
    compaction entry stores (any thread: it only reads `idx`)."""
    path = idx.read_entries(path_to(idx, idx.by_id[leaf]))
    try:
        return _prepare_path(ls, idx, leaf, path)
    finally:
        slices.dismantle(path)  # the branch's entries: a million at a time held the lock


def _prepare_path(
    ls: Host, idx: SessionIndex, leaf: str, path: list[dict[str, Any]]
) -> tuple[Any, Any, str, SystemInForce | None]:
    settings = settings_at(idx, leaf)
    model = summaries.summary_model(settings.model, ls.settings.summary.model)
    session_model = settings.model or {"provider": model.provider, "modelId": model.id}
    _, keep = ls.settings.compaction.for_model(str(session_model.get("provider")), str(session_model.get("modelId")))
    prep = prepare_compaction(path, keep)
    if prep is None and path and path[-1].get("type") == et.COMPACTION:
        raise errors.NothingToCompact("Already compacted")
    thinking = clamp_thinking_level(model, settings.thinking_level or "off")
    return prep, model, thinking, system_in_force(idx, leaf) if prep is not None else None


def _prepare_private(ls: Host, state_root: str, path: str, leaf: str) -> tuple[Any, Any, str, SystemInForce | None]:
    idx = offcore.private_index(state_root, path, tuple(ls.registry.roots))
    if leaf not in idx.by_id:
        raise EntryNotFound(f"no entry {leaf} in {path}")  # the file was rewritten meanwhile
    got = _prepare(ls, idx, leaf)
    for values in (idx.ids, idx.parents, idx.types, idx.roles):
        slices.dismantle(values)
    return got


@pi_method("pi/compact", params.Compact)
async def compact(ls: Host, p: params.Compact) -> CompactResult:
    """pi's compaction at the session's leaf; queued while a turn runs (made by pi on a live session)."""
    pi = livepi.holder(ls, p.session)
    if pi is not None:
        return msgspec.convert(
            await livepi.ask(ls, pi, "pi/live/compact", {"customInstructions": p.customInstructions}), CompactResult
        )

    def prepare() -> Any:
        live = ls.registry.get(p.session)
        leaf = live.leaf_id
        if leaf is None:
            return live, None
        if len(live.index) >= offcore.LONG_ENTRIES:
            return live, leaf
        return live, _prepare(ls, live.index, leaf)

    live, got = await ls.core(prepare)
    if type(got) is str:
        got = await offcore.run(_prepare_private, ls, str(ls.registry.state.root), live.path, got)
    prep, model, thinking, found = got if got is not None else (None, None, None, None)
    if prep is None:
        raise errors.NothingToCompact("Nothing to compact (session too small)")
    token = await ls.begin_progress("Compacting session")
    try:
        summary, _source, usage = await summaries.service.compact(
            prep, model, thinking, p.customInstructions, timeout=ls.settings.summary.timeout
        )
    except SummaryError as e:
        raise errors.SummaryFailed(f"compaction failed: {e}") from None
    finally:
        ls.end_progress(token)
    if len(prep.to_summarize) >= offcore.LONG_ENTRIES:  # freed a slice at a time, not at once on the event loop
        await offcore.run(slices.dismantle, prep.to_summarize)
    op = ops.CompactionOp(
        summary=summary,
        firstKeptEntryId=prep.first_kept_entry_id,
        tokensBefore=prep.tokens_before,
        details={"readFiles": prep.read_files, "modifiedFiles": prep.modified_files},
        usage=usage,
        systemInForce=found,
    )

    def write() -> Any:
        written = ls.registry.write(live, [op])
        return written, live.leaf_id

    written, leaf = await ls.core(write)
    notify.session_updated(ls, live.path, written.appended, leaf)
    return CompactResult(
        entry_id=written.last_id,
        first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        summary=summary,
        queued=written.queued,
    )
