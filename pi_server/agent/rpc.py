"""pi/prompt, pi/abort, pi/setModel, pi/setThinkingLevel: the harness methods, and how a turn talks to the server."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

from pi_server.agent.prompt import build_system_prompt
from pi_server.agent.tooldefs import CLIENT_TOOLS, READ_ONLY, TOOL_ORDER
from pi_server.agent.turn import Hooks, RetrySettings, Snapshot, Turn
from pi_server.context.formats import context_result
from pi_server.live.sessions import LiveSession
from pi_server.llm.models import ANTHROPIC, anthropic_model
from pi_server.server import background, errors, params
from pi_server.server.app import PiServer, parse
from pi_server.summaries.client import api_key

log = logging.getLogger("pi_server")
DEFAULT_THINKING = "medium"  # pi's DEFAULT_THINKING_LEVEL for a new session


def declared_tools(caps: Any) -> list[str]:
    """The tools a client runs for us: `experimental.piTools.tools` in its initialize capabilities."""
    exp = getattr(caps, "experimental", None)
    pt = exp.get("piTools") if isinstance(exp, dict) else None
    names = pt.get("tools") if isinstance(pt, dict) else None
    return [n for n in CLIENT_TOOLS if isinstance(names, list) and n in names]


def _retry(ls: PiServer) -> RetrySettings:
    r = RetrySettings()
    env = os.environ.get("PI_SERVER_RETRY_BASE_MS")
    if env:
        r.base_delay_ms = float(env)
    opts = ls.agent_options
    if opts is not None:
        if opts.retryBaseDelayMs is not None:
            r.base_delay_ms = opts.retryBaseDelayMs
        if opts.maxRetries is not None:
            r.max_retries = opts.maxRetries
    return r


def _settings_entry(op: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if op["op"] == "model":
        return "model_change", {"provider": op["provider"], "modelId": op["modelId"]}
    return "thinking_level_change", {"thinkingLevel": op["level"]}


def register(reg: Any) -> None:
    @reg("pi/prompt")
    async def prompt(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Prompt, raw)
        if p.session is None and p.cwd is None:
            raise errors.InvalidParams("invalid params: session: give a session or a cwd")
        if p.session is None and not (os.path.isabs(p.cwd or "") and os.path.isdir(p.cwd or "")):
            raise errors.InvalidParams("invalid params: cwd: not an existing absolute directory")
        tools = [n for n in TOOL_ORDER if n in READ_ONLY or n in ls.client_tools]

        def start() -> Any:
            reg_ = ls.registry
            if p.session is not None:
                live = reg_.get(p.session)
                if reg_.busy(live):
                    raise errors.Busy(f"a turn is already running in {live.path}")
            else:
                live = reg_.get(reg_.new_session(p.cwd))
                # as pi starts a new session: the model and thinking level first
                reg_.append_own(live, "model_change", {"provider": "anthropic", "modelId": anthropic_model(None).id})
                reg_.append_own(live, "thinking_level_change", {"thinkingLevel": DEFAULT_THINKING})
            reg_.turns.add(live.path)
            leaf = live.leaf_id
            ctx = context_result(live.index, leaf, before_first=live.explicit and leaf is None, fmt="llm")
            # a header without a cwd gives no folder to confine tools to: no tools at all
            cwd = live.index.header.cwd if live.index.header and live.index.header.cwd else ""
            return live, ctx, cwd

        live, ctx, cwd = await ls.core(start)
        if not cwd:
            tools = []
        snap = Snapshot(
            messages=ctx["messages"],
            model=anthropic_model(ctx["model"]),
            thinking=ctx["thinkingLevel"] or "off",
            tools=tools,
            system=build_system_prompt(cwd, tools),
            cwd=cwd,
        )
        turn_id = str(uuid.uuid4())
        turn = Turn(turn_id, snap, api_key(), _hooks(ls, live, turn_id), _retry(ls))
        ls.turns[live.path] = turn
        content: list[dict[str, Any]] = [{"type": "text", "text": p.text}]
        content += [{"type": "image", "data": im.data, "mimeType": im.mimeType} for im in p.images]
        user = {"role": "user", "content": content, "timestamp": _now_ms()}
        ls.tasks[:] = [t for t in ls.tasks if not t.done()]
        ls.tasks.append(asyncio.ensure_future(_run(ls, live, turn, user)))
        return {"turnId": turn_id, "session": live.path}

    @reg("pi/abort")
    async def abort(ls: PiServer, raw: Any) -> Any:
        p = parse(params.Abort, raw)
        path = await ls.core(ls.registry.resolve, p.session)
        turn = ls.turns.get(path)
        if turn is not None:
            turn.aborted.set()
        return {"aborted": turn is not None}

    @reg("pi/setModel")
    async def set_model(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetModel, raw)
        if p.provider != "anthropic" or p.modelId not in ANTHROPIC:
            raise errors.InvalidParams(f"invalid params: modelId: unknown model {p.provider}/{p.modelId}")
        return await _setting(ls, p.session, {"op": "model", "provider": p.provider, "modelId": p.modelId})

    @reg("pi/setThinkingLevel")
    async def set_thinking(ls: PiServer, raw: Any) -> Any:
        p = parse(params.SetThinkingLevel, raw)
        return await _setting(ls, p.session, {"op": "thinking", "level": p.level})


async def _setting(ls: PiServer, session: str, op: dict[str, Any]) -> Any:
    """During our turn: kept for its end. Otherwise: written now, as pi writes a model switch."""

    def run() -> Any:
        live = ls.registry.get(session)
        turn = ls.turns.get(live.path)
        if turn is not None:
            turn.pending_settings.append(op)
            return live, None
        etype, fields = _settings_entry(op)
        return live, ls.registry.append_own(live, etype, fields)

    live, eid = await ls.core(run)
    if eid is not None:
        _announce(ls, live, [eid])
    return {"entryId": eid, "queued": eid is None}


def _announce(ls: PiServer, live: LiveSession, ids: list[str]) -> None:
    ls.notify("pi/sessionUpdated", {"session": live.path, "appended": ids, "leafId": live.leaf_id, "reset": False})


def _now_ms() -> int:
    return int(time.time() * 1000)


def _hooks(ls: PiServer, live: LiveSession, turn_id: str) -> Hooks:
    def emit(event: dict[str, Any]) -> None:
        ls.notify("pi/agentEvent", {"session": live.path, "turnId": turn_id, "event": event})

    async def append(message: dict[str, Any]) -> str:
        eid = await ls.core(ls.registry.append_own, live, "message", {"message": message})
        _announce(ls, live, [eid])
        return eid

    async def turn_end() -> None:
        await background.flush_session(ls, live.path, force=True)

    async def execute_remote(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        req = {"session": live.path, "toolCallId": call_id, "name": name, "arguments": args}
        reply = await ls.protocol.send_request_async("pi/executeTool", req)
        return _plain(reply)

    return Hooks(emit, append, turn_end, execute_remote)


def _plain(obj: Any) -> Any:
    """A client reply as plain JSON values (pygls may hand back attrs objects)."""
    if isinstance(obj, dict | list | str | int | float | bool) or obj is None:
        return obj
    return getattr(obj, "__dict__", obj)


async def _run(ls: PiServer, live: LiveSession, turn: Turn, user: dict[str, Any]) -> None:
    try:
        await turn.run(user)
    except Exception:  # a bug must not leave the session busy forever
        log.exception("agent turn failed")
    finally:

        def finish() -> list[str]:
            ids = []
            for op in turn.pending_settings:
                etype, fields = _settings_entry(op)
                ids.append(ls.registry.append_own(live, etype, fields))
            ls.registry.turns.discard(live.path)
            return ids

        try:
            ids = await ls.core(finish)
            if ids:
                _announce(ls, live, ids)
            await background.flush_session(ls, live.path, force=True)
        finally:
            ls.registry.turns.discard(live.path)
            ls.turns.pop(live.path, None)
