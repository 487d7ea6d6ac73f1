"""The pi/* methods: parse params, call the core on the worker thread, shape the reply."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp

from pi_server import summaries
from pi_server.agent import rpc as agent_rpc
from pi_server.agent.rpc import declared_tools
from pi_server.context.formats import context_result
from pi_server.server import background, errors, params
from pi_server.server.app import PiServer, parse
from pi_server.summaries.client import SummaryError
from pi_server.summaries.compaction import prepare_compaction
from pi_server.tree.outline import get_tree
from pi_server.tree.paths import path_to

log = logging.getLogger("pi_server")


def announce(ls: PiServer, session: str, appended: list[str], leaf_id: str | None) -> None:
    """Our own appends reach other clients as the watcher's would."""
    if appended:
        ls.notify("pi/sessionUpdated", {"session": session, "appended": appended, "leafId": leaf_id, "reset": False})


def register(server: PiServer) -> None:
    def reg(method: str):
        def wrap(fn):
            async def handler(ls: PiServer, raw: Any) -> Any:
                if not ls.authorized:
                    raise errors.InvalidParams("not initialized with a valid token")
                if ls.registry is None:
                    raise errors.Internal("server not initialized")
                return await fn(ls, raw)

            server.feature(method)(handler)
            return fn

        return wrap

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: PiServer, p: lsp.InitializeParams) -> None:
        raw = p.initialization_options if isinstance(p.initialization_options, dict) else {}
        init = parse(params.InitOptions, raw)
        if ls.options.token is not None:
            if not ls.token_ok(init.token):
                log.warning("client refused: wrong token")
                asyncio.get_running_loop().call_later(0.05, ls.refuse)
                raise errors.InvalidParams("invalid token")
            ls.authorized = True
        ls.registry = ls.open_registry(init)
        ls.summary_options = init.summary
        ls.agent_options = init.agent
        ls.client_tools = declared_tools(p.capabilities)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: PiServer, _p: Any) -> None:
        if ls.registry is None or not ls.authorized:
            return
        ls.start_background()

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: PiServer, _p: Any) -> None:
        ls.stop.set()
        for t in ls.tasks:
            t.cancel()
        if ls.registry is not None:
            await ls.core(ls.registry.save_all)

    @reg("pi/listSessions")
    async def list_sessions(ls: PiServer, raw: Any) -> Any:
        p = parse(params.ListSessions, raw)
        return {"sessions": await ls.core(ls.registry.list, p.cwd, p.query, p.limit)}

    @reg("pi/getTree")
    async def get_tree_(ls: PiServer, raw: Any) -> Any:
        p = parse(params.GetTree, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            leaf = p.leafId if "leafId" in p.model_fields_set else live.leaf_id
            if leaf is not None:
                ls.registry.entry_pos(live, leaf)
            return get_tree(live.outline, leaf, p.filter, p.search or "", p.folded, p.offset, p.limit)

        return await ls.core(run)

    @reg("pi/getEntry")
    async def get_entry(ls: PiServer, raw: Any) -> Any:
        p = parse(params.GetEntry, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            return {"entry": live.index.read_entry(ls.registry.entry_pos(live, p.id))}

        return await ls.core(run)

    @reg("pi/buildContext")
    async def build_context(ls: PiServer, raw: Any) -> Any:
        p = parse(params.BuildContext, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            if "leafId" in p.model_fields_set:
                leaf, before = p.leafId, p.leafId is None
            else:
                leaf, before = live.leaf_id, live.explicit and live.leaf_id is None
            if leaf is not None:
                ls.registry.entry_pos(live, leaf)
            return context_result(live.index, leaf, before_first=before, fmt=p.format)

        return await ls.core(run)

    @reg("pi/switchBranch")
    async def switch_branch(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SwitchBranch, raw)
        if "targetId" not in p.model_fields_set:
            raise errors.InvalidParams("invalid params: targetId: Field required")
        summary = None
        if p.summarize:
            summary = await branch_summary(ls, p.session, p.targetId, None, p.customInstructions, p.replaceInstructions)

        def run() -> Any:
            live = ls.registry.get(p.session)
            before = len(live.index)
            out = ls.registry.switch(live, p.targetId, p.label, p.persist, summary.to_json() if summary else None)
            return live.path, live.index.ids[before:], out

        path, appended, out = await ls.core(run)
        announce(ls, path, appended, out["leafId"])
        return out

    @reg("pi/summarizeBranch")
    async def summarize_branch(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SummarizeBranch, raw)
        if "targetId" not in p.model_fields_set:
            raise errors.InvalidParams("invalid params: targetId: Field required")
        summary = await branch_summary(
            ls,
            p.session,
            p.targetId,
            p.fromId,
            p.customInstructions,
            p.replaceInstructions,
            explicit_from="fromId" in p.model_fields_set,
        )
        return summary.to_json()

    @reg("pi/compact")
    async def compact(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Compact, raw)

        def prepare() -> Any:
            live = ls.registry.get(p.session)
            leaf = live.leaf_id
            if leaf is None:
                return live, None, None, None
            path = live.index.read_entries(path_to(live.index, live.index.by_id[leaf]))
            configured = ls.summary_options.model if ls.summary_options else None
            model = summaries.summary_model(model_at(live.index, leaf), configured)
            thinking = context_result(live.index, leaf)["thinkingLevel"]
            return live, prepare_compaction(path), model, thinking

        live, prep, model, thinking = await ls.core(prepare)
        if prep is None:
            raise errors.SummaryFailed("nothing to compact: the leaf is already a compaction, or the session is empty")
        timeout = float(ls.summary_options.timeout) if ls.summary_options and ls.summary_options.timeout else 120.0
        token = await background.begin_progress(ls, "Compacting session")
        try:
            summary, _source = await summaries.service.compact(
                prep, model, thinking, p.customInstructions, timeout=timeout
            )
        except SummaryError as e:
            raise errors.SummaryFailed(f"compaction failed: {e}") from None
        finally:
            background.end_progress(ls, token)
        op = {
            "op": "compaction",
            "summary": summary,
            "firstKeptEntryId": prep.first_kept_entry_id,
            "tokensBefore": prep.tokens_before,
            "details": {"readFiles": prep.read_files, "modifiedFiles": prep.modified_files},
        }

        def write() -> Any:
            ids, queued = ls.registry.write(live, op)
            return ids, queued, live.leaf_id

        ids, queued, leaf = await ls.core(write)
        announce(ls, live.path, ids, leaf)
        return {
            "entryId": ids[-1] if ids else None,
            "firstKeptEntryId": prep.first_kept_entry_id,
            "tokensBefore": prep.tokens_before,
            "summary": summary,
            "queued": queued,
        }

    async def simple_write(ls: PiServer, session: str, op: dict[str, Any], check: str | None = None) -> Any:
        def run() -> Any:
            live = ls.registry.get(session)
            if check is not None:
                ls.registry.entry_pos(live, check)
            ids, queued = ls.registry.write(live, op)
            return live.path, ids, live.leaf_id, {"entryId": ids[-1] if ids else None, "queued": queued}

        path, ids, leaf, out = await ls.core(run)
        announce(ls, path, ids, leaf)
        return out

    @reg("pi/setLabel")
    async def set_label(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetLabel, raw)
        op = {"op": "label", "targetId": p.targetId, "label": p.label}
        return await simple_write(ls, p.session, op, check=p.targetId)

    @reg("pi/setSessionName")
    async def set_session_name(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetSessionName, raw)
        return await simple_write(ls, p.session, {"op": "name", "name": p.name})

    agent_rpc.register(reg)

    @reg("pi/fork")
    async def fork(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Fork, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            return {"session": ls.registry.fork(live, p.leafId)}

        return await ls.core(run)


async def branch_summary(
    ls: PiServer,
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
        configured = ls.summary_options.model if ls.summary_options else None
        model = summaries.summary_model(model_at(live.index, start), configured)
        req, entries = summaries.prepare(live.index, start, target, model, custom, replace)
        return req, entries, model

    req, entries, model = await ls.core(prepare)
    timeout = float(ls.summary_options.timeout) if ls.summary_options and ls.summary_options.timeout else 120.0
    token = await background.begin_progress(ls, "Summarizing branch", f"{len(req.entry_ids)} entries")
    try:
        return await summaries.summarize(req, entries, model, timeout=timeout)
    except SummaryError as e:
        raise errors.SummaryFailed(f"summary failed: {e}") from None
    finally:
        background.end_progress(ls, token)


def model_at(idx: Any, leaf_id: str | None) -> dict | None:
    """The model in effect at a leaf (pi's settings replay), from the ancestry arrays."""
    if leaf_id is None or leaf_id not in idx.by_id:
        return None
    if idx.irregular:
        from pi_server.context.build import build_context as build

        return build(idx, leaf_id).model
    pos = idx.anc_model[idx.by_id[leaf_id]]
    if pos < 0:
        return None
    e = idx.read_entry(pos)
    if e.get("type") == "model_change":
        return {"provider": e.get("provider"), "modelId": e.get("modelId")}
    m = e.get("message") or {}
    return {"provider": m.get("provider"), "modelId": m.get("model")}
