"""TCP attacked as a local process would: every connection proves the token itself."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tcp_peer import TOKEN, Peer, Server, frame, tree_digest


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    yield s
    s.close()


def _a_session(peer: Peer) -> str:
    peer.request(2, "pi/listSessions", {})
    reply = peer.reply(2)
    assert reply is not None and "result" in reply
    return reply["result"]["sessions"][0]["session"]


INTRUSIONS = [
    ("pi/listSessions", {}),
    ("pi/getTree", {"session": "S"}),
    ("pi/buildContext", {"session": "S"}),
    ("pi/setLabel", {"session": "S", "targetId": "x", "label": "pwned"}),
    ("pi/setSessionName", {"session": "S", "name": "pwned"}),
    ("pi/fork", {"session": "S", "leafId": "x"}),
    ("pi/prompt", {"session": "S", "text": "hi"}),
    ("textDocument/documentSymbol", {"textDocument": {"uri": "file://S"}}),
]


def test_no_reads_or_writes_without_the_token(server: Server) -> None:
    real = Peer(server.port)
    assert "result" in (real.initialize() or {})
    session = _a_session(real)
    before = tree_digest(server.sessions)
    heard = 0
    for i, (method, params) in enumerate(INTRUSIONS):
        params = {k: (session if v == "S" else v) for k, v in params.items()}
        if method.startswith("textDocument"):
            params = {"textDocument": {"uri": "file://" + session}}
        for opener in (None, "wrong-token", ""):  # no initialize at all, then a wrong one, then an empty one
            intruder = Peer(server.port)
            if opener is not None:
                reply = intruder.initialize(token=opener)
                assert reply is not None and reply["error"]["code"] == -32602 and "token" in reply["error"]["message"]
            intruder.request(10 + i, method, params)
            while (msg := intruder.read()) is not None:
                assert "result" not in msg, (method, msg)
                assert msg.get("error", {}).get("code") in (-32002, None), msg
            heard += intruder.received
            intruder.close()
        # the real client is still served, and only it hears its replies
        real.request(100 + i, "pi/getTree", {"session": session})
        assert "result" in (real.reply(100 + i) or {})
    assert tree_digest(server.sessions) == before  # nothing written, nothing forked
    assert heard < 200 * len(INTRUSIONS) * 3  # errors only: never a session's bytes
    assert server.alive()


def test_an_intruder_never_hears_the_real_clients_replies(server: Server) -> None:
    real = Peer(server.port)
    assert "result" in (real.initialize() or {})
    intruder = Peer(server.port, timeout=1.0)  # connected, silent
    session = _a_session(real)
    for i in range(20):
        real.request(200 + i, "pi/getTree", {"session": session})
        assert "result" in (real.reply(200 + i) or {})
    assert intruder.read() is None  # nothing arrived in a second: the timeout, not data
    assert intruder.received == 0
    intruder.close()


def test_replies_go_to_the_connection_that_asked(server: Server) -> None:
    a, b = Peer(server.port), Peer(server.port)
    assert "result" in (a.initialize() or {}) and "result" in (b.initialize() or {})
    session = _a_session(a)
    for i in range(50):  # the same ids on both connections, different questions
        a.request(1000 + i, "pi/listSessions", {})
        b.request(1000 + i, "pi/getTree", {"session": session})
        ra, rb = a.reply(1000 + i), b.reply(1000 + i)
        assert ra is not None and "sessions" in ra["result"]
        assert rb is not None and "rows" in rb["result"]


def _bad_client(port: int, kind: int) -> None:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if kind == 0:  # a port scan: connect, close
            pass
        elif kind == 1:
            s.sendall(b"\x16\x03\x01\x02\x00garbage that is not a frame\r\n\r\n")
        elif kind == 2:
            s.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        elif kind == 3:
            s.sendall(b"Content-Length: 5\r\n\r\n{oops")
        elif kind == 4:
            s.sendall(b"X" * 100_000)  # one endless header line
        elif kind == 5:
            s.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "exit"}))
        elif kind == 6:
            s.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
        elif kind == 7:
            s.sendall(frame([1, 2, 3]))
        elif kind == 8:
            init = {"capabilities": {}, "initializationOptions": {"token": TOKEN[:-1] + "0"}}
            s.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        else:
            s.sendall(b"Content-Length: -4\r\n\r\n")
        s.settimeout(3)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
    finally:
        s.close()


def test_the_server_outlives_100_bad_clients_and_a_port_scan(server: Server) -> None:
    threads = [threading.Thread(target=_bad_client, args=(server.port, i % 10)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for _ in range(200):  # a port scan
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
    assert server.alive()
    real = Peer(server.port)
    assert "result" in (real.initialize() or {})
    assert _a_session(real)
    # an authenticated client's `exit` ends its connection, not the server
    real.send({"jsonrpc": "2.0", "method": "exit"})
    assert real.read() is None
    time.sleep(0.2)
    assert server.alive()
    again = Peer(server.port)
    assert "result" in (again.initialize() or {})


def test_an_oversized_frame_is_not_buffered(server: Server) -> None:
    time.sleep(0.5)
    before = server.rss_kb()
    sent = 0
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    chunk = b"A" * (1 << 20)
    try:
        s.sendall(b"Content-Length: 100000000000\r\n\r\n")
        for _ in range(300):  # up to 300 MB, until the server hangs up
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    finally:
        s.close()
    grown_mb = (server.rss_kb() - before) / 1024
    assert grown_mb < 16, f"RSS grew {grown_mb:.0f} MB"
    assert sent < 50 << 20, f"the server read {sent >> 20} MB of a refused frame"
    assert server.alive()
    # a frame just over the pre-authentication limit is refused too
    p = Peer(server.port)
    p.sock.sendall(b"Content-Length: %d\r\n\r\n" % ((1 << 20) + 1))
    assert p.read() is None


def test_50_clients_200_requests_each(server: Server) -> None:
    answered = [0] * 50
    failures: list[str] = []

    def client(k: int) -> None:
        try:
            p = Peer(server.port, timeout=60)
            if "result" not in (p.initialize() or {}):
                failures.append(f"{k}: initialize")
                return
            for i in range(200):
                p.request(10 + i, "pi/listSessions", {"limit": 1})
                r = p.reply(10 + i)
                if r is not None and "result" in r:
                    answered[k] += 1
            p.close()
        except OSError as e:
            failures.append(f"{k}: {e}")

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    elapsed = time.monotonic() - start
    assert failures == []
    assert sum(answered) == 50 * 200, (sum(answered), elapsed)
    print(f"50 x 200 requests over TCP in {elapsed:.1f} s")


def test_client_roots_and_state_dir_are_ignored_over_tcp(server: Server, tmp_path: Path) -> None:
    evil_state = tmp_path / "chosen-by-client"
    p = Peer(server.port)
    reply = p.initialize(options={"sessionDirs": ["/"], "stateDir": str(evil_state)})
    assert reply is not None and "result" in reply
    p.request(2, "pi/listSessions", {})
    sessions = (p.reply(2) or {})["result"]["sessions"]
    assert len(sessions) == 3 and all(s["session"].startswith(str(server.sessions)) for s in sessions)
    p.request(3, "pi/getTree", {"session": "/etc/passwd"})
    assert (p.reply(3) or {}).get("error", {}).get("code") is not None
    time.sleep(0.3)
    assert not evil_state.exists()


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        tf = tmp_path / "token"
        tf.write_text(TOKEN)
        tf.chmod(0o600)
        out = subprocess.run(
            [sys.executable, "-m", "pi_server", "serve", "--tcp", "--port", str(port), "--token-file", str(tf)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "in use" in lines[0], out.stderr


def test_a_token_file_others_can_read_is_warned_about(tmp_path: Path) -> None:
    s = Server(tmp_path)
    try:
        assert not any("warning" in line for line in s.stderr)
    finally:
        s.close()
    tf = s.token_file
    tf.chmod(0o644)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_server", "serve", "--tcp", "--token-file", str(tf), "--log-file", str(tmp_path / "l")],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert "warning" in first and "chmod 600" in first, first
        assert "listening on 127.0.0.1:" in proc.stderr.readline()
    finally:
        proc.kill()
        proc.wait(10)


def test_a_silent_or_slow_stranger_is_dropped(server: Server) -> None:
    silent = Peer(server.port, timeout=30)
    slow = Peer(server.port, timeout=30)
    slow.sock.sendall(b"Content-Length: 10")  # a header that never ends
    start = time.monotonic()
    assert silent.read() is None and slow.read() is None
    assert time.monotonic() - start < 20  # the 10 s authentication deadline, not forever
    assert server.alive()
