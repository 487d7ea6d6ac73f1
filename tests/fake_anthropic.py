"""A loopback fake of the Anthropic Messages API: real HTTP, SSE streaming, recorded requests."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def sse_text(text: str, stop: str = "end_turn") -> bytes:
    def ev(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    return "".join(
        [
            ev(
                "message_start",
                {
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "m",
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    }
                },
            ),
            ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            *[
                ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": part}})
                for part in _chunks(text)
            ],
            ev("content_block_stop", {"index": 0}),
            ev("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}),
            ev("message_stop", {}),
        ]
    ).encode()


def _ev(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def sse_blocks(blocks: list[dict[str, Any]], stop: str = "end_turn") -> list[bytes]:
    """A streamed answer made of text / thinking / tool_use blocks, one SSE event per chunk."""
    start = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 20},
    }
    out = [_ev("message_start", {"message": start})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            out.append(_ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            for part in _chunks(b["text"]):
                out.append(_ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": part}}))
        elif b["type"] == "thinking":
            cb = {"type": "thinking", "thinking": "", "signature": ""}
            out.append(_ev("content_block_start", {"index": i, "content_block": cb}))
            delta = {"type": "thinking_delta", "thinking": b["thinking"]}
            out.append(_ev("content_block_delta", {"index": i, "delta": delta}))
            sig = {"type": "signature_delta", "signature": b["signature"]}
            out.append(_ev("content_block_delta", {"index": i, "delta": sig}))
        else:
            cb = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            out.append(_ev("content_block_start", {"index": i, "content_block": cb}))
            raw = json.dumps(b["input"])
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": part}
                out.append(_ev("content_block_delta", {"index": i, "delta": delta}))
        out.append(_ev("content_block_stop", {"index": i}))
    usage = {"output_tokens": 42}
    out.append(_ev("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}))
    out.append(_ev("message_stop", {}))
    return out


def _chunks(text: str) -> list[str]:
    return [text[i : i + 7] for i in range(0, len(text), 7)] or [""]


class FakeAnthropic:
    """Answers each request with the next scripted reply: ("text", str), ("sse", [event bytes]) sent with
    `chunk_delay` between events, or (status, error message)."""

    def __init__(self, replies: list[tuple[Any, Any]] | None = None, delay: float = 0.0) -> None:
        self.replies = list(replies or [])
        self.default: tuple[Any, Any] = ("text", "## Goal\nA canned summary.")
        self.requests: list[dict[str, Any]] = []
        self.delay = delay
        self.chunk_delay = 0.0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # as the real API: HTTP/1.1, streams chunked (HTTP/1.0 close-delimited bodies are
            # read whole by some HTTP clients before the first event is seen)
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(n)
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "raw": raw, "body": json.loads(raw)}
                )
                kind, payload = fake.replies.pop(0) if fake.replies else fake.default
                if fake.delay:
                    import time

                    time.sleep(fake.delay)
                if kind == "sse":
                    import time

                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.send_header("connection", "close")
                    self.end_headers()
                    try:
                        for chunk in payload:
                            self._chunk(chunk)
                            if fake.chunk_delay:
                                time.sleep(fake.chunk_delay)
                        self._chunk(b"")
                    except OSError:
                        pass  # the client went away (an abort)
                elif kind == "text":
                    body = sse_text(payload)
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(body)))
                    self.send_header("connection", "close")
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": payload}}).encode()
                    self.send_response(int(kind))
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.send_header("connection", "close")
                    if int(kind) == 429:
                        self.send_header("retry-after", "0")
                    self.end_headers()
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeAnthropicProcess:
    """The fake (canned replies) in a process of its own: it parses each request (tens of
    megabytes for a large compaction), which in the process of a client timing the server
    would hold the interpreter lock and count in its times."""

    CODE = (
        "import sys; sys.path.insert(0, sys.argv[1]); from fake_anthropic import FakeAnthropic;"
        "f = FakeAnthropic(); f.__enter__(); print(f.url, flush=True); sys.stdin.read();"
        "print(len(f.requests), flush=True); f.__exit__(None, None, None)"
    )

    def __enter__(self) -> FakeAnthropicProcess:
        here = str(Path(__file__).parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.CODE, here], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        return self

    def requests(self) -> int:
        """The requests it answered; it stops."""
        out, _ = self.proc.communicate("", timeout=60)
        return int(out.strip() or 0)

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
