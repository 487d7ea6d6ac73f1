"""A connection's unsent output is bounded, and strangers cannot take every descriptor.

Real `pi-server serve --tcp` processes and raw socket clients (tcp_peer.py).
"""

from __future__ import annotations

import json
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tcp_peer import Peer, Server

ENTRY_TEXT = 10_000  # characters per message: each buildContext reply is ~1 MB


def _big_session(root: Path, text: int = ENTRY_TEXT) -> str:
    folder = root / "--home-demo-big--"
    folder.mkdir()
    path = folder / "2026-12-01T00-00-00-000Z_0b1c0000-0000-7000-8000-000000000001.jsonl"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "0b1c0000-0000-7000-8000-000000000001",
            "timestamp": "2026-12-01T00:00:00.000Z",
            "cwd": "/home/demo/big",
        }
    ]
    parent = None
    for i in range(100):
        eid = f"b{i:07x}"
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-12-01T00:00:01.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": f"{i} " + "x" * text}]},
            }
        )
        parent = eid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    yield s
    s.close()


def _flood(peer: Peer, session: str, seconds: float) -> int:
    """Send buildContext requests without reading a reply, until the server stops reading."""
    peer.sock.settimeout(2.0)
    sent = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            peer.request(100 + sent, "pi/buildContext", {"session": session})
            sent += 1
    except (TimeoutError, OSError):
        pass  # the server stopped reading (or closed the connection)
    return sent


def test_a_client_that_stops_reading_does_not_grow_the_server(server: Server) -> None:
    session = _big_session(server.sessions)
    stalled = Peer(server.port, timeout=30)
    assert "result" in (stalled.initialize() or {})
    other = Peer(server.port, timeout=30)
    assert "result" in (other.initialize() or {})
    other.request(2, "pi/buildContext", {"session": session})
    assert "result" in (other.reply(2) or {})
    before = server.rss_kb()
    sent = _flood(stalled, session, 15.0)
    time.sleep(1.0)  # replies to requests already read are still being made
    after = server.rss_kb()
    grown_mb = (after - before) / 1024
    print(f"RSS {before / 1024:.0f} MB -> {after / 1024:.0f} MB after {sent} unread ~1 MB replies")
    assert grown_mb < 200, grown_mb
    # everyone else is still served, promptly
    start = time.monotonic()
    other.request(3, "pi/listSessions", {})
    assert "result" in (other.reply(3) or {})
    assert time.monotonic() - start < 5
    # the stalled client, reading again, gets the replies that were queued, in order
    stalled.sock.settimeout(30)
    first = stalled.reply(100)
    assert first is None or first["result"]["messages"][0]["content"][0]["text"].startswith("0 ")
    stalled.close()
    other.close()
    assert server.alive()


def test_a_client_whose_unread_replies_pass_the_hard_limit_is_closed(server: Server) -> None:
    session = _big_session(server.sessions, text=40_000)  # ~4 MB replies: 64 in flight pass 128 MiB
    stalled = Peer(server.port, timeout=30)
    assert "result" in (stalled.initialize() or {})
    before = server.rss_kb()
    _flood(stalled, session, 15.0)
    deadline = time.monotonic() + 30
    while "client dropped" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "replies left unread" in server.log.read_text()
    after = server.rss_kb()
    print(f"RSS {before / 1024:.0f} MB -> {after / 1024:.0f} MB, the stalled client dropped")
    stalled.sock.settimeout(30)
    while stalled.read() is not None:  # what was sent before the close, then the end
        pass
    other = Peer(server.port, timeout=30)
    assert "result" in (other.initialize() or {})
    other.close()
    assert server.alive()


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_strangers_cannot_starve_authenticated_clients(tmp_path: Path) -> None:
    srv = Server(tmp_path, preexec_fn=_low_fd_limit)
    strangers: list[socket.socket] = []
    try:
        for _ in range(400):
            try:
                strangers.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
            except OSError:
                break
        time.sleep(1.0)  # the server has accepted (or failed to accept) them all
        results: list[dict | None] = []

        def real_client() -> None:
            try:
                p = Peer(srv.port, timeout=3)  # well inside the strangers' 10 s to authenticate
                results.append(p.initialize())
                p.request(2, "pi/listSessions", {})
                results.append(p.reply(2))
                p.close()
            except OSError as e:
                results.append({"error": str(e)})

        t = threading.Thread(target=real_client)
        t.start()
        t.join(15)
        assert len(results) == 2 and all("result" in (r or {}) for r in results), results
        log = srv.log.read_text()
        assert log.count("Too many open files") <= 1, log.count("Too many open files")
        assert srv.alive()
    finally:
        for s in strangers:
            s.close()
        srv.close()
