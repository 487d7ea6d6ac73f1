"""initialize, initialized, shutdown."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp

from pi_server.server import errors
from pi_server.server.base import PiServer
from pi_server.server.rpc import lsp_feature

log = logging.getLogger("pi_server")


@lsp_feature(lsp.INITIALIZE)
def initialize(ls: PiServer, p: lsp.InitializeParams) -> None:
    """Check the token (TCP), resolve the options, open the registry."""
    if ls.options.token is not None:
        opts = p.initialization_options
        if not ls.token_ok(opts.get("token") if isinstance(opts, dict) else None):
            log.warning("client refused: wrong token")
            asyncio.get_running_loop().call_later(0.05, ls.refuse)
            raise errors.InvalidParams("invalid token")
        ls.authorized = True
    for problem in ls.setup(p.initialization_options, getattr(p.capabilities, "experimental", None)):
        log.warning("%s", problem)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"pi-server: {problem}"))


@lsp_feature(lsp.INITIALIZED)
async def initialized(ls: PiServer, _p: Any) -> None:
    """Start indexing, watching and the queue timer once the client is ready."""
    if ls.registry is None or not ls.authorized:
        return
    ls.start_background()


@lsp_feature(lsp.SHUTDOWN)
async def shutdown(ls: PiServer, _p: Any) -> None:
    """Stop the background work and save every changed index."""
    await ls.shutdown_core()
