"""initialize, initialized, shutdown."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp

from pi_server.agent.tooldefs import CLIENT_TOOLS
from pi_server.server import errors
from pi_server.server.base import PiServer
from pi_server.server.options import resolve
from pi_server.server.rpc import lsp_feature

log = logging.getLogger("pi_server")


@lsp_feature(lsp.INITIALIZE)
def initialize(ls: PiServer, p: lsp.InitializeParams) -> None:
    """Check the token (TCP), resolve the options, open the registry."""
    opts, problems = resolve(p.initialization_options, ls.options)
    if ls.options.token is not None:
        if not ls.token_ok(opts.token):
            log.warning("client refused: wrong token")
            asyncio.get_running_loop().call_later(0.05, ls.refuse)
            raise errors.InvalidParams("invalid token")
        ls.authorized = True
    for problem in problems:
        log.warning("%s", problem)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"pi-server: {problem}"))
    ls.settings = opts
    ls.registry = ls.open_registry(opts)
    ls.client_tools = declared_tools(p.capabilities)


def declared_tools(caps: Any) -> list[str]:
    """The tools a client runs for us: `experimental.piTools.tools` in its initialize capabilities."""
    exp = getattr(caps, "experimental", None)
    pt = exp.get("piTools") if isinstance(exp, dict) else None
    names = pt.get("tools") if isinstance(pt, dict) else None
    return [n for n in CLIENT_TOOLS if isinstance(names, list) and n in names]


@lsp_feature(lsp.INITIALIZED)
async def initialized(ls: PiServer, _p: Any) -> None:
    """Start indexing, watching and the queue timer once the client is ready."""
    if ls.registry is None or not ls.authorized:
        return
    ls.start_background()


@lsp_feature(lsp.SHUTDOWN)
async def shutdown(ls: PiServer, _p: Any) -> None:
    """Stop the background work and save every changed index."""
    ls.stop.set()
    for t in ls.tasks:
        t.cancel()
    if ls.registry is not None:
        await ls.core(ls.registry.save_all)
