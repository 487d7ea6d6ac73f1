"""Context edits from the editor: pi/editContext and pi/getContextEdits."""

from __future__ import annotations

from typing import Any

from pi_server.context.build import build_context
from pi_server.live import ops
from pi_server.live.appends import checked_edit
from pi_server.live.session import LiveSession
from pi_server.server import params
from pi_server.server.host import Host
from pi_server.server.methods import live as livepi
from pi_server.server.methods.writes import write_one
from pi_server.server.results import WriteResult
from pi_server.server.rpc import pi_method


@pi_method("pi/editContext", params.EditContext)
async def edit_context(ls: Host, p: params.EditContext) -> WriteResult:
    """Append pi's context_edit: omit (`replacement: null`) or replace an entry's content in the
    contexts after it. The file stays append-only; above the edit the original shows again."""
    livepi.refuse_live(ls, p.session, "pi's extension API cannot append a context edit outside a turn")

    def make(live: LiveSession) -> ops.Op:
        replacement = checked_edit(live, p.targetId, p.replacement)  # refused now, not at flush time
        return ops.EditOp(targetId=p.targetId, replacement=replacement)

    return await write_one(ls, p.session, make)


@pi_method("pi/getContextEdits", params.GetContextEdits)
async def get_context_edits(ls: Host, p: params.GetContextEdits) -> Any:
    """The context edits in force on the path to a leaf (default: the session's): the latest per
    target among the entries the context is built from, each with its target's original entry."""

    def run() -> Any:
        live = ls.registry.get(p.session)
        leaf, before = live.read_at(p.leafId)
        idx = live.index
        ctx = build_context(idx, leaf, before_first=before)
        selected = set(ctx.selected or ())
        found = sorted((edit, target) for target, edit in (ctx.edits_in_force or {}).items())
        edits = idx.read_entries([edit for edit, _ in found])
        out = []
        for (_, target), e in zip(found, edits, strict=True):
            tpos = idx.by_id.get(target) if isinstance(target, str) else None
            out.append(
                {
                    "id": e.get("id"),
                    "targetId": e.get("targetId"),
                    "replacement": e.get("replacement"),
                    "timestamp": e.get("timestamp"),
                    "applied": tpos is not None and tpos in selected,
                }
            )
        return {"leafId": leaf, "edits": out}

    return await ls.core(run)
