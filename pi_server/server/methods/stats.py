"""pi/getSessionStats: pi 1.6.0's session stats for the file, and the same for one branch."""

from __future__ import annotations

from typing import Any

from pi_server.agent.stats import session_stats
from pi_server.context.settings import replay
from pi_server.llm.models import anthropic_model
from pi_server.server.host import Host
from pi_server.server.params import UNSET, Params, UnsetType
from pi_server.server.rpc import pi_method
from pi_server.store.names import to_wire
from pi_server.tree.paths import path_to


class GetSessionStats(Params):
    session: str
    leafId: str | None | UnsetType = UNSET


@pi_method("pi/getSessionStats", GetSessionStats)
async def get_session_stats(ls: Host, p: GetSessionStats) -> Any:
    """Counts, tokens and cost of every entry (pi's get_session_stats), the context use at the
    leaf (default: the session's), and `branch`: the same numbers for root → leaf only."""

    def run() -> Any:
        live = ls.registry.get(p.session)
        idx = live.index
        leaf, _ = live.read_at(p.leafId)
        entries = idx.read_entries(list(range(len(idx))))
        path = [] if leaf is None else [entries[i] for i in path_to(idx, live.entry_pos(leaf))]
        window = anthropic_model(replay(path).model).context_window
        sid = idx.header.id if idx.header else None
        return session_stats(to_wire(live.path), sid, entries, path, window)

    return await ls.core(run)
