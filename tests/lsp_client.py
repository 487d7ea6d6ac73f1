"""A real LSP client over stdio (pytest-lsp) driving a real pi-server process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from pi_server.server.app import converter_factory


class Client:
    def __init__(self, lc: LanguageClient, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
        self.lc = lc
        self.args, self.env = args, env
        self.init: lsp.InitializeResult | None = None
        self.notes: list[tuple[str, Any]] = []
        for method in ("pi/sessionUpdated", "pi/sessionsChanged", "pi/savePoint", "pi/agentEvent"):
            lc.feature(method)(self._recorder(method))

    def _recorder(self, method: str):
        def record(params: Any) -> None:
            self.notes.append((method, params))

        return record

    def serving_pid(self) -> int:
        """The process that serves this client: the daemon its connector relays to (found by
        `pi-server daemon status` for the same flags), or the server itself with --no-daemon."""
        if "--no-daemon" in self.args or (self.env or {}).get("PI_SERVER_NO_DAEMON") == "1":
            return self.lc._server.pid  # type: ignore[union-attr]
        flags = [a for a in self.args if a not in ("--stdio",)]
        out = subprocess.run(
            [sys.executable, "-m", "pi_server", "daemon", "status", "--json", *_daemon_flags(flags)],
            capture_output=True,
            text=True,
            env={**os.environ, **(self.env or {})},
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["pid"]

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        return await asyncio.wait_for(self.lc.protocol.send_request_async(method, params), 30)

    async def wait_for(self, method: str, pred=lambda p: True, timeout: float = 10.0) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for m, p in self.notes:
                if m == method and pred(p):
                    return p
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no {method} within {timeout}s; got {[m for m, _ in self.notes]}")
            await asyncio.sleep(0.01)


def _daemon_flags(args: list[str]) -> list[str]:
    """The flags of a server's command line that pick its daemon."""
    keep = ("--sessions-dir", "--state-dir", "--busy-timeout", "--max-live-entries")
    out = []
    for i, a in enumerate(args):
        if a in keep and i + 1 < len(args):
            out += [a, args[i + 1]]
    return out


@asynccontextmanager
async def server(
    *args: str,
    init_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    preexec_fn: Any = None,
    experimental: dict[str, Any] | None = None,
    on_request: dict[str, Any] | None = None,
) -> AsyncIterator[Client]:
    lc = LanguageClient(converter_factory=converter_factory)
    register_lsp_features(lc)
    client = Client(lc, args, env)
    for method, fn in (on_request or {}).items():
        lc.feature(method)(fn)
    caps = client_capabilities("visual-studio-code")
    if experimental is not None:
        caps.experimental = experimental
    await lc.start_io(
        sys.executable, "-m", "pi_server", *args, env={**os.environ, **(env or {})}, preexec_fn=preexec_fn
    )
    try:
        client.init = await asyncio.wait_for(
            lc.initialize_session(
                lsp.InitializeParams(
                    capabilities=caps,
                    initialization_options=init_options or {},
                )
            ),
            30,
        )
        yield client
    finally:
        try:
            await asyncio.wait_for(lc.shutdown_session(), 10)
        except Exception:
            await lc.stop()
