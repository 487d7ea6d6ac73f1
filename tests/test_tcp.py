"""TCP: 127.0.0.1 only, and a client without the right token is refused before any data."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(sock: socket.socket) -> dict | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return json.loads(rest[:length])


def _serve(tmp_path: Path, token: str) -> tuple[subprocess.Popen, int]:
    tf = tmp_path / "token"
    tf.write_text(token + "\n")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pi_server",
            "serve",
            "--tcp",
            "--port",
            str(port),
            "--token-file",
            str(tf),
            "--sessions-dir",
            str(SAMPLES),
            "--state-dir",
            str(tmp_path / "st"),
        ],
        stderr=subprocess.DEVNULL,
    )
    for _ in range(400):  # poll for LISTEN without connecting: the server serves one client
        if _listening(port):
            break
        time.sleep(0.05)
    return proc, port


def _listening(port: int) -> list[str]:
    """Local addresses listening on `port`, from /proc/net/tcp{,6}."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.rsplit(":", 1)
            if int(p, 16) == port and state == "0A":
                found.append(addr)
    return found


def _initialize(port: int, token: str | None) -> tuple[socket.socket, dict | None]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    opts = {} if token is None else {"token": token}
    sock.sendall(
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"capabilities": {}, "initializationOptions": opts},
            }
        )
    )
    return sock, _read(sock)


def test_wrong_token_is_refused(tmp_path: Path) -> None:
    proc, port = _serve(tmp_path, "s3cret")
    try:
        sock, reply = _initialize(port, "wrong")
        assert reply is not None and reply["error"]["code"] == -32602 and "token" in reply["error"]["message"]
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 2, "method": "pi/listSessions", "params": {}}))
        after = _read(sock)
        assert after is None or ("error" in after and "result" not in after)  # no session data, ever
        assert _read(sock) is None  # then the connection is dropped
        assert proc.poll() is None  # issue 15: a refused client no longer stops the server
    finally:
        proc.kill()


def test_missing_token_is_refused(tmp_path: Path) -> None:
    proc, port = _serve(tmp_path, "s3cret")
    try:
        _sock, reply = _initialize(port, None)
        assert reply is not None and "error" in reply
    finally:
        proc.kill()


def test_right_token_serves(tmp_path: Path) -> None:
    proc, port = _serve(tmp_path, "s3cret")
    try:
        sock, reply = _initialize(port, "s3cret")
        assert reply is not None and "result" in reply
        sock.sendall(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 2, "method": "pi/listSessions", "params": {}}))
        while True:
            msg = _read(sock)
            assert msg is not None
            if msg.get("id") == 2:
                break
        assert len(msg["result"]["sessions"]) == 3
        assert _listening(port) == ["0100007F"]  # 127.0.0.1, nothing else
    finally:
        proc.kill()
