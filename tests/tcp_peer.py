"""A real `pi-server serve --tcp` process and raw socket clients for it."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
TOKEN = "tok-" + "9" * 40


class Server:
    def __init__(
        self,
        tmp: Path,
        token: str = TOKEN,
        port: int = 0,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
        preexec_fn: Any = None,
    ) -> None:
        self.tmp = tmp
        self.sessions = tmp / "tcp-sessions"
        if not self.sessions.exists():
            shutil.copytree(SAMPLES, self.sessions)
        self.token_file = tmp / "token"
        self.token_file.write_text(token + "\n")
        self.token_file.chmod(0o600)
        self.state = tmp / "state"
        self.log = tmp / "server.log"
        cmd = [sys.executable, "-m", "pi_server", "serve", "--tcp", "--port", str(port)]
        cmd += ["--token-file", str(self.token_file), "--sessions-dir", str(self.sessions)]
        cmd += ["--state-dir", str(self.state), "--log-file", str(self.log), *(extra or [])]
        self.proc = subprocess.Popen(
            cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, preexec_fn=preexec_fn
        )
        self.stderr: list[str] = []
        self.port = self._wait_port()

    def _wait_port(self) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.stderr.append(line)
            m = re.fullmatch(r"pi-server: listening on 127\.0\.0\.1:(\d+)\n", line)
            if m:
                return int(m.group(1))
        raise AssertionError(f"server did not announce its port: {self.stderr}")

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Peer:
    """One raw TCP connection that speaks framed JSON-RPC."""

    def __init__(self, port: int, timeout: float = 20.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.received = 0  # bytes, to prove an intruder heard nothing

    def send(self, obj: Any) -> None:
        self.sock.sendall(frame(obj))

    def request(self, msg_id: int, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def _fill(self) -> bool:
        try:
            chunk = self.sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return False
        self.received += len(chunk)
        self.buf += chunk
        return bool(chunk)

    def read(self) -> dict | None:
        """The next message, or None when the server closed the connection."""
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
        while len(rest) < length:
            if not self._fill():
                return None
            head, _, rest = self.buf.partition(b"\r\n\r\n")
        self.buf = rest[length:]
        return json.loads(rest[:length])

    def reply(self, msg_id: int) -> dict | None:
        """The response to `msg_id`, skipping notifications and server requests."""
        while True:
            msg = self.read()
            if msg is None or (msg.get("id") == msg_id and "method" not in msg):
                return msg

    def initialize(self, token: str | None = TOKEN, options: dict | None = None) -> dict | None:
        opts = dict(options or {})
        if token is not None:
            opts["token"] = token
        self.request(1, "initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": opts})
        reply = self.reply(1)
        if reply is not None and "result" in reply:
            self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return reply

    def close(self) -> None:
        self.sock.close()


def tree_digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
