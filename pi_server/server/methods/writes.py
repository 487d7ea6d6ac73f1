"""Changing sessions: pi/switchBranch, pi/setLabel, pi/setSessionName, pi/fork."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from pi_server.live import ops
from pi_server.live.session import LiveSession
from pi_server.server import notify, params
from pi_server.server.host import Host
from pi_server.server.methods import live as livepi
from pi_server.server.methods.summaries import branch_summary
from pi_server.server.results import ForkResult, SwitchResult, WriteResult
from pi_server.server.rpc import pi_method
from pi_server.store.names import to_wire


@pi_method("pi/switchBranch", params.SwitchBranch)
async def switch_branch(ls: Host, p: params.SwitchBranch) -> SwitchResult:
    """Move the leaf as pi's /tree does; optionally summarize the branch left, label, persist."""
    pi = livepi.holder(ls, p.session)
    if pi is not None:  # pi moves its own leaf, with its own summary
        args = {
            k: getattr(p, k) for k in ("targetId", "summarize", "customInstructions", "replaceInstructions", "label")
        }
        return msgspec.convert(await livepi.ask(ls, pi, "pi/live/switchBranch", args), SwitchResult)
    summary = None
    if p.summarize:
        summary = await branch_summary(ls, p.session, p.targetId, None, p.customInstructions, p.replaceInstructions)
        if not summary.entry_ids:
            summary = None  # pi's navigateTree: nothing left behind, nothing summarized or written

    def run() -> Any:
        live = ls.registry.get(p.session)
        as_json = msgspec.to_builtins(summary) if summary else None
        out, written = ls.registry.switch(live, p.targetId, p.label, p.persist, as_json)
        return live.path, written.appended, out

    path, appended, out = await ls.core(run)
    notify.session_updated(ls, path, appended, out["leafId"])
    return msgspec.convert(out, SwitchResult)


async def write_one(
    ls: Host, session: str, make: Callable[[LiveSession], ops.Op], by_pi: tuple[str, dict[str, Any]] | None = None
) -> WriteResult:
    """One write to a session: `make` builds it on the worker (checking what it must), then it
    is applied or queued, and what the file gained is announced. On a live session `by_pi`
    (a method and its params) is what pi is asked to do instead."""
    pi = livepi.holder(ls, session) if by_pi is not None else None
    if pi is not None and by_pi is not None:
        return msgspec.convert(await livepi.ask(ls, pi, *by_pi), WriteResult)

    def run() -> Any:
        live = ls.registry.get(session)
        written = ls.registry.write(live, [make(live)])
        return live.path, written, live.leaf_id

    path, written, leaf = await ls.core(run)
    notify.session_updated(ls, path, written.appended, leaf)
    return WriteResult(entry_id=written.last_id, queued=written.queued)


@pi_method("pi/setLabel", params.SetLabel)
async def set_label(ls: Host, p: params.SetLabel) -> WriteResult:
    """Set (or, with no label, clear) an entry's label, as pi's appendLabelChange."""

    def make(live: LiveSession) -> ops.Op:
        ls.registry.entry_pos(live, p.targetId)
        return ops.LabelOp(targetId=p.targetId, label=p.label)

    return await write_one(ls, p.session, make, ("pi/live/setLabel", {"targetId": p.targetId, "label": p.label}))


@pi_method("pi/setSessionName", params.SetSessionName)
async def set_session_name(ls: Host, p: params.SetSessionName) -> WriteResult:
    """Name the session, as pi's appendSessionInfo."""
    by_pi = ("pi/live/setSessionName", {"name": p.name})
    return await write_one(ls, p.session, lambda _live: ops.NameOp(name=p.name), by_pi)


@pi_method("pi/fork", params.Fork)
async def fork(ls: Host, p: params.Fork) -> ForkResult:
    """A new session file holding the path to an entry, as pi's createBranchedSession."""

    def run() -> str:
        return ls.registry.fork(ls.registry.get(p.session), p.leafId)

    return ForkResult(session=to_wire(await ls.core(run)))
