"""The server as a whole: a fresh PiServer with every method of `server/methods` installed.

A factory, not a module-global server, so each test (and each TCP connection's
server) gets its own.
"""

from __future__ import annotations

from collections.abc import Callable

from pi_server.server import rpc
from pi_server.server.base import PiServer, ServerOptions, converter_factory
from pi_server.server.methods import (
    agent,
    documents,
    edits,
    lifecycle,
    live,
    search,
    sessions,
    stats,
    summaries,
    writes,
)

# importing a method module registers its methods in the table
_METHOD_MODULES = (lifecycle, sessions, search, writes, edits, summaries, agent, documents, stats, live)

__all__ = ["PiServer", "ServerOptions", "converter_factory", "create_server"]


def create_server(options: ServerOptions, cls: Callable[[ServerOptions], PiServer] = PiServer) -> PiServer:
    server = cls(options)
    rpc.install(server)
    return server
