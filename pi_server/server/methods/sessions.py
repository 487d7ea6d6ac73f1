"""Reading sessions: pi/listSessions, pi/getTree, pi/getEntry, pi/buildContext."""

from __future__ import annotations

from typing import Any

from pi_server.server import bulk, errors, offcore, params
from pi_server.server.host import Host
from pi_server.server.methods import live as livepi
from pi_server.server.params import UNSET
from pi_server.server.rpc import pi_method
from pi_server.store.names import from_wire

# the tree and context modules are imported by the methods that use them: a listing needs neither


@pi_method("pi/listSessions", params.ListSessions)
async def list_sessions(ls: Host, p: params.ListSessions) -> Any:
    """Every session under the roots, newest first (pi's SessionInfo, with the leaf the server keeps)."""
    listed = await bulk.list_sessions(ls, p.cwd, p.query, p.limit)
    held = ls.live_pis
    if held.sessions:  # the sessions a live pi holds: marked, at pi's leaf
        listed = [_with_live(info, held.live(from_wire(info["session"]))) for info in listed]
    return {"sessions": listed}


def _with_live(info: dict[str, Any], live: dict[str, Any] | None) -> dict[str, Any]:
    return info if live is None else {**info, "leafId": live["leafId"], "live": live}


@pi_method("pi/getTree", params.GetTree)
async def get_tree_rows(ls: Host, p: params.GetTree) -> Any:
    """pi's /tree rows for a filter and search, windowed by offset/limit."""
    from pi_server.live.registry import STEP_S
    from pi_server.tree.outline import get_tree, get_tree_steps

    pi = livepi.holder(ls, p.session)
    held = dict(pi.state) if pi is not None else None

    def run() -> Any:
        live = ls.registry.get(p.session)
        asked = p.leafId
        if held is not None and asked is UNSET and (held["leafId"] is None or held["leafId"] in live.index.by_id):
            asked = held["leafId"]  # pi's leaf, before the watcher's catch-up moves ours there too
        leaf, _ = live.read_at(asked)
        if len(live.index) >= offcore.LONG_ENTRIES:  # rows laid out in steps: see get_tree_steps
            return live, leaf
        return get_tree(live.outline, leaf, p.filter, p.search or "", p.folded, p.offset, p.limit, p.sharedGutters)

    got = await ls.core(run)
    if type(got) is not tuple:
        return got if held is None else {**got, "live": held}

    live, leaf = got

    def steps() -> Any:
        args = (p.filter, p.search or "", p.folded, p.offset, p.limit, p.sharedGutters)
        return (yield from get_tree_steps(live.outline, leaf, *args, step_s=STEP_S))

    tree = await ls.core_steps(steps)
    return tree if held is None else {**tree, "live": held}


@pi_method("pi/getEntry", params.GetEntry)
async def get_entry(ls: Host, p: params.GetEntry) -> Any:
    """One entry as pi holds it after loading."""

    def run() -> Any:
        live = ls.registry.get(p.session)
        return {"entry": live.index.read_entry(ls.registry.entry_pos(live, p.id))}

    return await ls.core(run)


@pi_method("pi/buildContext", params.BuildContext)
async def build_context(ls: Host, p: params.BuildContext) -> Any:
    """The context pi would send at a leaf (default: the session's leaf), in one of four formats."""
    from pi_server.llm.formats import context_result
    from pi_server.llm.strict_schema import StrictRequired

    def run() -> Any:
        live = ls.registry.get(p.session)
        leaf, before = live.read_at(p.leafId)
        if len(live.index) >= offcore.LONG_ENTRIES:
            return (live.path, leaf if leaf is not None or before else live.index.last_id, before)
        try:
            return context_result(live.index, leaf, before_first=before, fmt=p.format)
        except StrictRequired as e:  # pi-ai refuses to build this request
            raise errors.InvalidParams(f"format {p.format}: {e}") from None

    got = await ls.core(run)
    if type(got) is not tuple:
        return got
    try:
        return await offcore.run(offcore.context, str(ls.registry.state.root), tuple(ls.registry.roots), *got, p.format)
    except StrictRequired as e:
        raise errors.InvalidParams(f"format {p.format}: {e}") from None
