"""The pi/* methods: parse params, call the core on the worker thread, shape the reply."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp

from pi_server.context.formats import context_result
from pi_server.server import background, errors, params
from pi_server.server.app import NO_SUMMARIES, PiServer, parse, setup_registry
from pi_server.tree.outline import get_tree

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
            if init.token != ls.options.token:
                log.warning("client refused: wrong token")
                asyncio.get_running_loop().call_later(0.05, ls.refuse)
                raise errors.InvalidParams("invalid token")
            ls.authorized = True
        ls.registry = setup_registry(ls, init)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: PiServer, _p: Any) -> None:
        if ls.registry is None or not ls.authorized:
            return
        ls.tasks.append(asyncio.ensure_future(background.initial_index(ls)))
        if ls.options.watch:
            ls.tasks.append(asyncio.ensure_future(background.watch_roots(ls)))
            ls.tasks.append(asyncio.ensure_future(background.pending_timer(ls)))

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
        if p.summarize:
            raise errors.SummaryFailed(NO_SUMMARIES)

        def run() -> Any:
            live = ls.registry.get(p.session)
            before = len(live.index)
            out = ls.registry.switch(live, p.targetId, p.label, p.persist)
            return live.path, live.index.ids[before:], out

        path, appended, out = await ls.core(run)
        announce(ls, path, appended, out["leafId"])
        return out

    @reg("pi/summarizeBranch")
    async def summarize_branch(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SummarizeBranch, raw)
        await ls.core(lambda: ls.registry.get(p.session))
        raise errors.SummaryFailed(NO_SUMMARIES)

    @reg("pi/compact")
    async def compact(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Compact, raw)
        await ls.core(lambda: ls.registry.get(p.session))
        raise errors.SummaryFailed(NO_SUMMARIES)

    @reg("pi/setLabel")
    async def set_label(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetLabel, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            ls.registry.entry_pos(live, p.targetId)
            ids, queued = ls.registry.write(live, {"op": "label", "targetId": p.targetId, "label": p.label})
            return live.path, ids, live.leaf_id, {"entryId": ids[-1] if ids else None, "queued": queued}

        path, ids, leaf, out = await ls.core(run)
        announce(ls, path, ids, leaf)
        return out

    @reg("pi/setSessionName")
    async def set_session_name(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetSessionName, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            ids, queued = ls.registry.write(live, {"op": "name", "name": p.name})
            return live.path, ids, live.leaf_id, {"entryId": ids[-1] if ids else None, "queued": queued}

        path, ids, leaf, out = await ls.core(run)
        announce(ls, path, ids, leaf)
        return out

    @reg("pi/fork")
    async def fork(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Fork, raw)

        def run() -> Any:
            live = ls.registry.get(p.session)
            return {"session": ls.registry.fork(live, p.leafId)}

        return await ls.core(run)
