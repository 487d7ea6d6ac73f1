"""Searching every entry of every session: pi/search."""

from __future__ import annotations

from typing import Any

from pi_server.server import fulltext, params
from pi_server.server.host import Host
from pi_server.server.rpc import pi_method


@pi_method("pi/search", params.Search)
async def search(ls: Host, p: params.Search) -> Any:
    """Entries matching a query in pi's session picker language, newest first."""
    return await fulltext.search(ls, p)
