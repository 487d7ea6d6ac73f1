"""What each of a daemon's connections costs it: the work done once per daemon stays so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pi_server.server.daemon import _admit_local
from pi_server.server.tcp import Hub, ServerOptions, handle_connection


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _initialize(path: str, caps: dict[str, Any]) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(path)
    msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": caps}}
    writer.write(_frame(msg))
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
    reply = json.loads(await reader.readexactly(length))
    writer.close()
    return reply


def test_connections_share_the_converter_and_keep_their_own_protocol(tmp_path: Path) -> None:
    """cattrs generates and compiles a function per lsprotocol class the first time a converter
    meets it: a converter per connection paid ~20 ms of that on every `initialize`."""

    async def run() -> None:
        (tmp_path / "sessions").mkdir()
        hub = Hub(ServerOptions(session_dirs=[str(tmp_path / "sessions")], state_dir=str(tmp_path / "state")))
        seen: list[Any] = []

        async def admit(h: Hub, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> Any:
            conn = await _admit_local(h, r, w)
            seen.append(conn)
            return conn

        path = str(tmp_path / "s.sock")
        server = await asyncio.start_unix_server(lambda r, w: handle_connection(hub, r, w, admit=admit), path)
        async with server:
            first = await _initialize(path, {"window": {"workDoneProgress": True}})
            second = await _initialize(path, {})
        a, b = seen
        assert a.protocol is not b.protocol
        assert a.protocol._converter is b.protocol._converter is hub.root.protocol._converter
        # each still answers its own client, as pygls does
        assert first["result"]["capabilities"] == second["result"]["capabilities"]
        assert "piSessions" in first["result"]["capabilities"]["experimental"]
        assert a.supports_progress() and not b.supports_progress()

    asyncio.run(run())
