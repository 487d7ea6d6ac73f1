"""initialize, initialized, shutdown."""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Any

from lsprotocol import types as lsp

from pi_server.agent.tooldefs import CLIENT_TOOLS
from pi_server.live.registry import Registry
from pi_server.server import background, errors
from pi_server.server.base import PiServer
from pi_server.server.options import resolve
from pi_server.server.rpc import lsp_feature
from pi_server.store.discovery import resolve_roots
from pi_server.store.state import StateDir

log = logging.getLogger("pi_server")


@lsp_feature(lsp.INITIALIZE)
def initialize(ls: PiServer, p: lsp.InitializeParams) -> None:
    """Check the token (TCP), resolve the options, open the registry."""
    opts, problems = resolve(p.initialization_options, ls.options)
    if ls.options.token is not None:
        if opts.token is None or not hmac.compare_digest(opts.token.encode(), ls.options.token.encode()):
            log.warning("client refused: wrong token")
            asyncio.get_running_loop().call_later(0.05, ls.refuse)
            raise errors.InvalidParams("invalid token")
        ls.authorized = True
    for problem in problems:
        log.warning("%s", problem)
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"pi-server: {problem}"))
    ls.settings = opts
    roots, _samples = resolve_roots(opts.session_dirs)
    ls.registry = Registry(
        roots=roots,
        state=StateDir(opts.state_dir),
        busy_timeout=opts.busy_timeout,
        max_live_entries=opts.max_live_entries,
    )
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
    ls.tasks.append(asyncio.ensure_future(background.initial_index(ls)))
    if ls.options.watch:
        ls.tasks.append(asyncio.ensure_future(background.watch_roots(ls)))
        ls.tasks.append(asyncio.ensure_future(background.pending_timer(ls)))


@lsp_feature(lsp.SHUTDOWN)
async def shutdown(ls: PiServer, _p: Any) -> None:
    """Stop the background work and save every changed index."""
    ls.stop.set()
    for t in ls.tasks:
        t.cancel()
    if ls.registry is not None:
        await ls.core(ls.registry.save_all)
