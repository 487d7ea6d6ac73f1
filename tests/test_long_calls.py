"""Long calls on one session never hold up another session's requests: two real TCP clients
of one real server, one asking for a slow answer, the other timing small `pi/getTree`s
meanwhile."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from fake_anthropic import FakeAnthropicProcess
from tcp_peer import Peer, Server

TS = "2025-01-01T00:00:00.000Z"
# a small request's bound while a long call runs: generous for a loaded 2-core machine,
# far below the seconds a long call held the worker
SMALL_BOUND = 1.5


def _header() -> str:
    return json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": TS, "cwd": "/x"})


def _user(eid: str, parent: str | None, text: str) -> str:
    msg = {"role": "user", "content": text, "timestamp": 1}
    return json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": msg})


def _hub(path: Path, n: int) -> None:
    """One entry with `n` children."""
    lines = [_header(), _user("root0000", None, "hub")]
    lines += [_user(f"c{i:07d}", "root0000", f"child {i}") for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def _chain(path: Path, n: int) -> None:
    """`n` entries in one chain, user messages and a closing reply (so the session is not busy)."""
    with open(path, "w") as f:
        f.write(_header() + "\n")
        prev = None
        for i in range(n - 1):
            eid = f"{i:08x}"
            f.write(_user(eid, prev, f"message {i}") + "\n")
            prev = eid
        reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop", "timestamp": 1}
        last = {"type": "message", "id": f"{n - 1:08x}", "parentId": prev, "timestamp": TS, "message": reply}
        f.write(json.dumps(last) + "\n")


def _store(tmp: Path, make: Any, n: int) -> tuple[Server, Path, Path]:
    folder = tmp / "tcp-sessions" / "--x--"
    folder.mkdir(parents=True)
    big, small = folder / "big.jsonl", folder / "small.jsonl"
    make(big, n)
    _chain(small, 20)
    return Server(tmp), big, small


def _while_running(srv: Server, big: Path, small: Path, method: str, params: dict[str, Any]) -> tuple[Any, float, list]:
    """(the long call's reply, its time, the small getTrees' times while it ran)."""
    a, b = Peer(srv.port, timeout=60), Peer(srv.port, timeout=60)
    a.initialize()
    b.initialize()
    a.request(2, "pi/getTree", {"session": str(big), "limit": 5})  # indexed before the clock starts
    assert "result" in (a.reply(2) or {})
    b.request(2, "pi/getTree", {"session": str(small), "limit": 5})
    assert "result" in (b.reply(2) or {})
    got: dict[str, Any] = {}

    def long_call() -> None:
        t0 = time.monotonic()
        a.request(3, method, params)
        got["reply"] = a.reply(3)
        got["took"] = time.monotonic() - t0

    thread = threading.Thread(target=long_call)
    thread.start()
    waits, i = [], 10
    while thread.is_alive():
        t0 = time.monotonic()
        b.request(i, "pi/getTree", {"session": str(small), "limit": 5})
        assert "result" in (b.reply(i) or {})
        waits.append(time.monotonic() - t0)
        i += 1
        time.sleep(0.02)
    thread.join()
    a.close()
    b.close()
    return got["reply"], got["took"], waits


def test_outline_of_a_hub_of_50000_children_is_linear_and_never_holds_the_worker(tmp_path: Path) -> None:
    srv, big, small = _store(tmp_path, _hub, 50_000)
    try:
        params = {"textDocument": {"uri": big.as_uri()}}
        reply, took, waits = _while_running(srv, big, small, "textDocument/documentSymbol", params)
    finally:
        srv.close()
    hub = reply["result"]
    assert [s["detail"] for s in hub] == ["message · root0000"]
    assert len(hub[0]["children"]) == 9_999  # the first 10,000 symbols: the hub and its first children
    assert took < 20, took
    assert waits and max(waits) < SMALL_BOUND, waits


def test_context_and_compaction_of_a_large_chain_leave_the_worker_to_others(tmp_path: Path) -> None:
    srv, big, small = _store(tmp_path, _chain, 150_000)
    try:
        reply, took, waits = _while_running(srv, big, small, "pi/buildContext", {"session": str(big)})
        ctx = reply["result"]
        assert len(ctx["messages"]) == 150_000 and ctx["entryIds"][-1] == ctx["leafId"] == f"{149_999:08x}"
        assert waits and max(waits) < SMALL_BOUND, ("context", took, waits)
        reply, took, waits = _while_running(srv, big, small, "pi/compact", {"session": str(big)})
        done = reply["result"]
        assert done["queued"] is False and done["tokensBefore"] > 0 and done["firstKeptEntryId"] in big.read_text()
        assert waits and max(waits) < SMALL_BOUND, ("compact", took, waits)
        # the append reuses the system prompt in force that the preparation found off the worker
        # (finding it again walks the whole branch: 16.6 s on the worker for a 1,000,000-entry chain)
        held = [ln for ln in srv.log.read_text().splitlines() if "core call compact.<locals>.write took" in ln]
        assert not held, held
    finally:
        srv.close()


def test_a_large_session_dropped_from_memory_is_read_again_off_the_worker(tmp_path: Path) -> None:
    """A 300,000-entry chain above the memory budget is dropped whenever the small session is
    read, so each request on it reads it again (its index, its tree, the rows down to a deep
    window): that reading runs off the core worker, and the deep window's rows are laid out in
    steps, so the small session's requests never wait seconds behind it."""
    folder = tmp_path / "tcp-sessions" / "--x--"
    folder.mkdir(parents=True)
    big, small = folder / "big.jsonl", folder / "small.jsonl"
    _chain(big, 300_000)
    _chain(small, 20)
    srv = Server(tmp_path, extra=["--max-live-entries", "1000"])
    try:
        for offset in (0, 150_000, 290_000):
            window = {"session": str(big), "offset": offset, "limit": 50}
            reply, took, waits = _while_running(srv, big, small, "pi/getTree", window)
            rows = reply["result"]["rows"]
            assert reply["result"]["total"] == 300_000 and len(rows) == 50, reply["result"]["total"]
            assert rows[0]["id"] == f"{offset:08x}"  # a chain: one row per entry, from the root
            assert waits and max(waits) < SMALL_BOUND, (offset, took, waits)
        held = [ln for ln in srv.log.read_text().splitlines() if "core call" in ln and " took " in ln]
        assert not held, held
    finally:
        srv.close()


# ---------------------------------------------------------------- single stalls of a large session's calls
# Each was one step that held the core worker or the interpreter lock in one piece: 0.4-2 s
# at a million entries on a loaded machine, client B's small requests waiting as long. Bound:
# under those, above what a loaded machine adds to a small request (0.1-0.2 s at a load of 6).
STALL_BOUND = 0.35


class WholePeer(Peer):
    """A Peer that reads a large answer in linear time and leaves it unparsed while B is timed:
    parsing tens of megabytes holds this process's interpreter lock, and B's times would count it."""

    def raw(self) -> bytes | None:
        buf = bytearray(self.buf)
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            buf += chunk
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = bytearray(rest)
        while len(body) < length:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            body += chunk
        self.buf = bytes(body[length:])
        return bytes(body[:length])

    def raw_reply(self, msg_id: int) -> bytes:
        """The response to `msg_id`, unparsed (a large message is it: notifications are small)."""
        while True:
            raw = self.raw()
            assert raw is not None, "connection closed"
            if len(raw) > 1 << 20:
                return raw
            msg = json.loads(raw)
            if msg.get("id") == msg_id and "method" not in msg:
                return raw


def _timed(peer: Peer, msg_id: int, method: str, params: dict[str, Any]) -> float:
    t0 = time.monotonic()
    peer.request(msg_id, method, params)
    assert "result" in (peer.reply(msg_id) or {}), method
    return time.monotonic() - t0


def _probe(
    a: WholePeer, b: Peer, small: Path, msg_id: int, method: str, params: dict[str, Any], listings: bool = True
) -> tuple[Any, list]:
    """(A's reply to the call, B's small requests' times while it ran: a window of the small
    session and (`listings`) the listing, in turn)."""
    got: dict[str, Any] = {}

    def long_call() -> None:
        a.request(msg_id, method, params)
        got["raw"] = a.raw_reply(msg_id)

    thread = threading.Thread(target=long_call)
    thread.start()
    waits, i = [], 10_000 + msg_id * 10_000
    while thread.is_alive():
        asked = ("pi/getTree", {"session": str(small), "limit": 5}) if i % 2 or not listings else ("pi/listSessions", {})
        waits.append(_timed(b, i, *asked))
        i += 1
        time.sleep(0.01)
    thread.join()
    return json.loads(got["raw"]), waits


def _pair(srv: Server) -> tuple[WholePeer, Peer]:
    a, b = WholePeer(srv.port, timeout=300), Peer(srv.port, timeout=60)
    a.initialize()
    b.initialize()
    return a, b


def test_a_large_session_never_holds_small_requests_for_long(tmp_path: Path) -> None:
    """A million-entry chain: its first index, a deep window after it was dropped from memory
    (B's small session read past the memory budget), and its context. Its
    index cache is written off the core worker when it is dropped; its map from id to position
    is built off the worker and a slice at a time; the context's JSON is encoded a slice at a time."""
    srv, big, small = _store(tmp_path, _chain, 1_000_000)
    try:
        a, b = _pair(srv)
        _timed(b, 2, "pi/listSessions", {})  # the first listing indexes every file: it waits for that
        _timed(b, 3, "pi/getTree", {"session": str(small), "limit": 5})
        calls = [
            ("index", "pi/getTree", {"session": str(big), "limit": 5}),
            ("window", "pi/getTree", {"session": str(big), "offset": 600_000, "limit": 50}),
            ("context", "pi/buildContext", {"session": str(big)}),
        ]
        slow = {}
        for n, (name, method, params) in enumerate(calls):
            reply, waits = _probe(a, b, small, 3 + n, method, params)
            assert "result" in reply, reply
            slow[name] = sorted(waits)[-3:]
            got = reply["result"]
            if name == "window":
                assert got["rows"][0]["id"] == f"{600_000:08x}"
            if name == "context":
                assert len(got["messages"]) == len(got["entryIds"]) == 1_000_000
                assert got["messages"][654_321]["content"] == "message 654321"
        assert all(waits[-1] < STALL_BOUND for waits in slow.values()), slow
    finally:
        srv.close()


def test_a_large_compaction_prompt_is_cleaned_in_slices(tmp_path: Path) -> None:
    """Compacting a 300,000-entry chain of non-ASCII text sends a prompt of tens of megabytes:
    taking lone surrogates out of it (pi's sanitizeSurrogates) and measuring it run a slice at
    a time, and its request body is encoded off the event loop in slices, not by the client
    library on the loop (0.4-1.5 s that every other client waited)."""
    folder = tmp_path / "tcp-sessions" / "--x--"
    folder.mkdir(parents=True)
    big, mid, small = folder / "big.jsonl", folder / "mid.jsonl", folder / "small.jsonl"
    for path, n in ((big, 300_000), (mid, 3_000)):
        with open(path, "w") as f:
            f.write(_header() + "\n")
            prev = None
            for i in range(n):
                f.write(_user(f"{i:08x}", prev, f"message {i} " + "déjà vu " * 12) + "\n")
                prev = f"{i:08x}"
    _chain(small, 20)
    with FakeAnthropicProcess() as fake:  # its parsing of the request would count in B's times here
        srv = Server(tmp_path, env={"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake"})
        try:
            a, b = _pair(srv)
            _timed(a, 2, "pi/compact", {"session": str(mid)})  # the client library loaded before the clock starts
            _timed(a, 3, "pi/getTree", {"session": str(big), "limit": 5})
            reply, waits = _probe(a, b, small, 4, "pi/compact", {"session": str(big)})
            assert reply["result"]["tokensBefore"] > 0, reply
            assert waits and max(waits) < STALL_BOUND, sorted(waits)[-5:]  # 0.4-1.6 s before
        finally:
            srv.close()


def test_a_listing_describes_a_changed_large_session_off_the_worker(tmp_path: Path) -> None:
    """A 300,000-entry session dropped from memory, then appended to (as a compaction does):
    the next listing describes it off the core worker; the listing waits for that, B's small
    requests do not (the worker read the whole index again inside a listing step before)."""
    srv, big, small = _store(tmp_path, _chain, 300_000)
    try:
        a, b = _pair(srv)
        _timed(a, 2, "pi/listSessions", {})
        _timed(a, 3, "pi/getTree", {"session": str(big), "limit": 5})
        _timed(b, 4, "pi/getTree", {"session": str(small), "limit": 5})  # drops the large one
        time.sleep(1)  # its cache written
        with open(big, "a") as f:
            f.write(_user("appended", f"{299_999:08x}", "one more") + "\n")
        reply, waits = _probe(a, b, small, 5, "pi/listSessions", {}, listings=False)
        counts = {s["session"]: s["entryCount"] for s in reply["result"]["sessions"]}
        assert counts[str(big)] == 300_001, counts
        assert waits and max(waits) < STALL_BOUND, sorted(waits)[-5:]
    finally:
        srv.close()
