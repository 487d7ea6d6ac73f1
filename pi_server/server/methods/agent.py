"""The harness methods: pi/prompt, pi/abort, pi/setModel, pi/setThinkingLevel, and how a turn talks back."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pi_server.agent.defaults import new_session_defaults
from pi_server.agent.system16 import system_update
from pi_server.agent.tooldefs import READ_ONLY, TOOL_ORDER
from pi_server.agent.turn import Hooks, RetrySettings, Snapshot, Turn
from pi_server.live.appends import SessionAppender, first_entries
from pi_server.live.session import LiveSession
from pi_server.llm.client import api_key
from pi_server.llm.formats import context_result
from pi_server.llm.models import ANTHROPIC, anthropic_model, clamp_thinking_level
from pi_server.server import background, errors, notify, params
from pi_server.server.host import Host
from pi_server.server.methods import live as livepi
from pi_server.server.results import AbortResult, PromptResult, WriteResult
from pi_server.server.rpc import pi_method
from pi_server.store.names import to_wire

log = logging.getLogger("pi_server")


@dataclass(frozen=True)
class SettingChange:
    """A model or thinking-level switch asked for during a turn, written when it ends."""

    provider: str | None = None
    model_id: str | None = None
    level: str | None = None

    def append(self, appender: SessionAppender) -> str:
        if self.level is not None:
            return appender.append_thinking_level_change(self.level)
        return appender.append_model_change(self.provider or "", self.model_id or "")


def _retry(ls: Host) -> RetrySettings:
    r = RetrySettings()
    env = os.environ.get("PI_SERVER_RETRY_BASE_MS")
    if env:
        r.base_delay_ms = float(env)
    opts = ls.settings.agent
    if opts.retry_base_delay_ms is not None:
        r.base_delay_ms = opts.retry_base_delay_ms
    if opts.max_retries is not None:
        r.max_retries = opts.max_retries
    return r


@pi_method("pi/prompt", params.Prompt)
async def prompt(ls: Host, p: params.Prompt) -> PromptResult:
    """Run one prompt of pi's agent loop at the session's leaf (or in a new session for `cwd`)."""
    if p.session is None and p.cwd is None:
        raise errors.InvalidParams("invalid params: session: give a session or a cwd")
    if p.session is None and not (os.path.isabs(p.cwd or "") and os.path.isdir(p.cwd or "")):
        raise errors.InvalidParams("invalid params: cwd: not an existing absolute directory")
    if p.session is not None:
        livepi.refuse_live(ls, p.session, "a turn run beside pi would write behind it (prompt pi itself)")
    tools = [n for n in TOOL_ORDER if n in READ_ONLY or n in ls.client_tools]
    turn_id = str(uuid.uuid4())
    now = int(time.time() * 1000)
    content: list[dict[str, Any]] = [{"type": "text", "text": p.text}]
    content += [{"type": "image", "data": im.data, "mimeType": im.mimeType} for im in p.images]
    user = {"role": "user", "content": content, "timestamp": now}

    def start() -> Any:
        reg = ls.registry
        if p.session is None:  # pi writes the file once the conversation starts: with the user message
            system = system_update([], p.cwd or "", tools, now)
            model, level = new_session_defaults()
            first = first_entries("anthropic", model.id, level, [m for m in (system, user) if m])
            live = reg.get(reg.new_session(p.cwd or "", first))
            reg.turns[live.path] = turn_id
            chosen = {"provider": "anthropic", "modelId": model.id}
            return live, {"messages": [], "model": chosen, "thinkingLevel": level}, p.cwd or "", system
        live = reg.get(p.session)
        if reg.busy(live):
            raise errors.Busy(f"a turn is already running in {live.path}")
        reg.turns[live.path] = turn_id  # the Turn replaces this once it exists
        reg.appender(live).record_thinking_level()
        leaf, before = live.read_at()
        ctx = context_result(live.index, leaf, before_first=before, fmt="llm")
        # a header without a cwd gives no folder to confine tools to: no tools at all
        cwd = live.index.header.cwd if live.index.header and live.index.header.cwd else ""
        return live, ctx, cwd, None

    live, ctx, cwd, written = await ls.core(start)
    if not cwd:
        tools = []
    model = anthropic_model(ctx["model"])
    snap = Snapshot(
        messages=ctx["messages"],
        model=model,
        # pi's AgentSession runs at the level clamped to what the model has ("off" on claude-fable-5: minimal)
        thinking=clamp_thinking_level(model, ctx["thinkingLevel"] or "off"),
        tools=tools,
        system=written if p.session is None else system_update(ctx["messages"], cwd, tools, now),
        cwd=cwd,
    )
    turn = Turn(turn_id, snap, api_key(), _hooks(ls, live, turn_id), _retry(ls), written=p.session is None)
    ls.registry.turns[live.path] = turn
    ls.tasks[:] = [t for t in ls.tasks if not t.done()]
    ls.tasks.append(asyncio.ensure_future(_run(ls, live, turn, user)))
    return PromptResult(turn_id=turn_id, session=to_wire(live.path))


@pi_method("pi/abort", params.Abort)
async def abort(ls: Host, p: params.Abort) -> AbortResult:
    """Stop the session's running turn, as pi's abort (the message ends `aborted`)."""
    path = await ls.core(ls.registry.resolve, p.session)
    turn = ls.registry.turns.get(path)
    if isinstance(turn, Turn):
        turn.aborted.set()
    return AbortResult(aborted=isinstance(turn, Turn))


@pi_method("pi/setModel", params.SetModel)
async def set_model(ls: Host, p: params.SetModel) -> WriteResult:
    """Switch the session's model (written as pi's model_change; kept for the end of a running turn)."""
    if p.provider != "anthropic" or p.modelId not in ANTHROPIC:
        raise errors.InvalidParams(f"invalid params: modelId: unknown model {p.provider}/{p.modelId}")
    return await _setting(ls, p.session, SettingChange(provider=p.provider, model_id=p.modelId))


@pi_method("pi/setThinkingLevel", params.SetThinkingLevel)
async def set_thinking(ls: Host, p: params.SetThinkingLevel) -> WriteResult:
    """Switch the thinking level (pi's thinking_level_change; kept for the end of a running turn)."""
    return await _setting(ls, p.session, SettingChange(level=p.level))


async def _setting(ls: Host, session: str, change: SettingChange) -> WriteResult:
    """During our turn: kept for its end. Otherwise: written now, as pi writes a model switch."""
    livepi.refuse_live(ls, session, "a model or thinking level written beside pi would not be pi's (set it in pi)")

    def run() -> Any:
        live = ls.registry.get(session)
        turn = ls.registry.turns.get(live.path)
        if isinstance(turn, Turn):
            turn.pending_settings.append(change)
            return live, None
        return live, change.append(ls.registry.appender(live))

    live, eid = await ls.core(run)
    if eid is not None:
        notify.session_updated(ls, live.path, [eid], live.leaf_id)
    return WriteResult(entry_id=eid, queued=eid is None)


def _hooks(ls: Host, live: LiveSession, turn_id: str) -> Hooks:
    def emit(event: dict[str, Any]) -> None:
        notify.agent_event(ls, live.path, turn_id, event)

    async def append(message: dict[str, Any]) -> str:
        eid = await ls.core(lambda: ls.registry.appender(live).append_message(message))
        notify.session_updated(ls, live.path, [eid], live.leaf_id)
        return eid

    async def turn_end() -> None:
        await background.flush_session(ls, live.path, force=True)

    async def execute_remote(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        req = {"session": to_wire(live.path), "toolCallId": call_id, "name": name, "arguments": args}
        return await ls.request("pi/executeTool", req)

    async def omit(entry_id: str) -> None:
        eid = await ls.core(lambda: ls.registry.appender(live).append_context_edit(entry_id, None))
        notify.session_updated(ls, live.path, [eid], live.leaf_id)

    return Hooks(emit, append, turn_end, execute_remote, omit)


async def _run(ls: Host, live: LiveSession, turn: Turn, user: dict[str, Any]) -> None:
    try:
        await turn.run(user)
    except Exception:  # a bug must not leave the session busy forever
        log.exception("agent turn failed")
    finally:

        def finish() -> list[str]:
            appender = ls.registry.appender(live)
            ids = [change.append(appender) for change in turn.pending_settings]
            ls.registry.turns.pop(live.path, None)
            return ids

        try:
            ids = await ls.core(finish)
            if ids:
                notify.session_updated(ls, live.path, ids, live.leaf_id)
            await background.flush_session(ls, live.path, force=True)
        finally:
            ls.registry.turns.pop(live.path, None)
