"""The stdio server serves `pi/*` without pygls, and loads pygls for the LSP features only
when a client asks for one (a real server process, a raw JSON-RPC client)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
LOADED = "loading pygls for the LSP features"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": None, "capabilities": {"window": {"workDoneProgress": True}}},
}


class Raw:
    """A server process spoken to frame by frame."""

    def __init__(self, tmp: Path) -> None:
        self.log = tmp / f"server-{len(list(tmp.glob('server-*.log')))}.log"
        args = ["--sessions-dir", str(SAMPLES), "--state-dir", str(tmp / "state"), "--log-file", str(self.log)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_server", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.seen: list[dict[str, Any]] = []
        self.log.touch()

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = self.proc.stdout.read(1)
            assert c, "the server closed its output"
            header += c
        length = int(re.search(rb"Content-Length: (\d+)", header).group(1))
        msg = json.loads(self.proc.stdout.read(length))
        if msg.get("method") == "window/workDoneProgress/create":
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        self.seen.append(msg)
        return msg

    def call(self, msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        while True:
            msg = self.read()
            if msg.get("id") == msg_id and "method" not in msg:
                return msg

    def close(self) -> int:
        self.call(99, "shutdown")
        self.send({"jsonrpc": "2.0", "method": "exit"})
        return self.proc.wait(timeout=60)

    def pygls_loaded(self) -> bool:
        return LOADED in self.log.read_text()


def start(tmp: Path) -> Raw:
    srv = Raw(tmp)
    reply = srv.call(1, "initialize", INIT["params"])
    assert "pi/getTree" in reply["result"]["capabilities"]["experimental"]["piSessions"]["methods"]
    srv.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return srv


def test_pi_methods_are_served_without_pygls_and_documents_load_it(tmp_path: Path) -> None:
    first = start(tmp_path)  # a client set-up never seen: pygls builds the initialize reply
    assert first.pygls_loaded()
    assert first.close() == 0

    srv = start(tmp_path)  # the same set-up again: answered from the record, pygls not loaded
    try:
        sessions = srv.call(2, "pi/listSessions")["result"]["sessions"]
        session = next(s["session"] for s in sessions if s["entryCount"] > 5)
        tree = srv.call(3, "pi/getTree", {"session": session, "limit": 5})["result"]
        assert len(tree["rows"]) == 5
        bad = srv.call(4, "pi/getTree", {"session": "/not/under/the/roots.jsonl"})
        assert bad["error"]["code"] == -32003 and bad["error"]["data"] == {"kind": "OutsideRoots"}
        invalid = srv.call(5, "pi/getTree", {"session": 7})
        assert invalid["error"]["code"] == -32602
        assert not srv.pygls_loaded()
        assert srv.call(6, "pi/nope")["error"]["code"] == -32601  # unknown: pygls's answer
        assert srv.pygls_loaded()
    finally:
        assert srv.close() == 0


def test_an_lsp_request_loads_pygls_over_the_same_core(tmp_path: Path) -> None:
    start(tmp_path).close()
    srv = start(tmp_path)
    try:
        sessions = srv.call(2, "pi/listSessions")["result"]["sessions"]
        session = next(s["session"] for s in sessions if s["entryCount"] > 5)
        leaf = srv.call(3, "pi/getTree", {"session": session})["result"]["leafId"]
        assert not srv.pygls_loaded()
        uri = Path(session).as_uri()
        symbols = srv.call(4, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
        assert symbols and all("range" in s for s in symbols)
        assert srv.pygls_loaded()
        # one core: the leaf pygls's server sees is the one the lean loop serves
        after = srv.call(5, "pi/getTree", {"session": session})["result"]
        assert after["leafId"] == leaf
    finally:
        assert srv.close() == 0
