"""`pi-server search`: asks the daemon's full-text index (pi/search) and prints the hits.

The index lives in the daemon (it is built in the background and kept current by its
watcher), so the command is a client of it: it speaks JSON-RPC to the daemon of the given
flags, starting one as an editor's connector would, or, without a daemon (--no-daemon,
PI_SERVER_NO_DAEMON=1), to a `pi-server serve --no-daemon` it runs over pipes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import IO, Any

from pi_server import rendezvous
from pi_server.connector import Config, ConnectError, connect

WAIT_STALL = 10.0  # seconds without progress after which waiting for the index stops
POLL = 0.3
STARTING = 3.0  # seconds an index that knows no file yet is given to list the store


class SearchError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Channel:
    """Content-Length framed JSON-RPC over a pair of byte streams, one request at a time."""

    def __init__(self, rd: IO[bytes], wr: IO[bytes]) -> None:
        self.rd, self.wr = rd, wr
        self.next_id = 0

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        self.wr.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.wr.flush()

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any = None) -> Any:
        self.next_id += 1
        my_id = self.next_id
        self.send({"id": my_id, "method": method, "params": params})
        while True:
            msg = self._read()
            if "method" in msg:
                if "id" in msg:  # a request of the server's: this client offers nothing
                    self.send({"id": msg["id"], "error": {"code": -32601, "message": "not handled by the CLI"}})
                continue
            if msg.get("id") != my_id:
                continue
            if "error" in msg:
                err = msg["error"] or {}
                raise RpcError(int(err.get("code", 0)), str(err.get("message", "error")))
            return msg.get("result")

    def _read(self) -> dict[str, Any]:
        length = None
        while True:
            line = self.rd.readline()
            if not line:
                raise SearchError("the server closed the connection")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise SearchError("the server sent a frame without Content-Length")
        return json.loads(self.rd.read(length))


def _config(args: Any) -> Config:
    return Config(session_dirs=list(args.sessions_dir or []), state_dir=args.state_dir)


def _no_daemon(args: Any) -> bool:
    import socket

    return args.no_daemon or os.environ.get("PI_SERVER_NO_DAEMON") == "1" or not hasattr(socket, "AF_UNIX")


class _Session:
    """An initialized connection to a server: the daemon's socket, or a child's pipes."""

    def __init__(self, args: Any) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: Any = None
        if _no_daemon(args):
            argv = [sys.executable, "-m", "pi_server", "serve", "--no-daemon"]
            for d in args.sessions_dir or []:
                argv += ["--sessions-dir", d]
            if args.state_dir:
                argv += ["--state-dir", args.state_dir]
            # its log would interleave with the hits: a failure shows as the connection closing
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.ch = Channel(self.proc.stdout, self.proc.stdin)
        else:
            try:
                found = connect(_config(args))
            except (rendezvous.Refused, ConnectError) as e:
                raise SearchError(str(e)) from None
            except OSError as e:
                raise SearchError(f"cannot reach the daemon: {e.strerror or e}") from None
            assert found is not None
            import socket

            # the connector's bare `_socket`, as a socket that makes file objects
            self.sock = socket.socket(fileno=found[0].detach())  # type: ignore[attr-defined]
            f = self.sock.makefile("rwb")
            self.ch = Channel(f, f)
        self.ch.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
        self.ch.notify("initialized", {})

    def close(self) -> None:
        try:
            self.ch.request("shutdown")
            self.ch.notify("exit")
        except (OSError, SearchError):
            pass
        if self.sock is not None:
            self.sock.close()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _search(ch: Channel, params: dict[str, Any], wait: bool) -> dict[str, Any]:
    """pi/search, asked again while the index is still being built and getting on."""
    start = last_progress = time.monotonic()
    last_pending, told = None, False
    while True:
        try:
            res = ch.request("pi/search", params)
        except RpcError as e:
            if e.code == -32601:
                raise SearchError("this pi-server has no full-text search (pi/search)") from None
            raise SearchError(str(e)) from None
        pending = res.get("pendingFiles", 0)
        now = time.monotonic()
        # a daemon's index starts with its first search: nothing indexed and nothing pending
        # yet is a store still being listed (or an empty one, which STARTING bounds)
        starting = not pending and not res.get("indexedFiles") and now - start < STARTING
        if not wait or (not pending and not starting):
            return res
        if last_pending is None or pending < last_pending:
            last_pending, last_progress = pending, now
        elif now - last_progress > WAIT_STALL:
            return res  # indexing is stuck (a full disk, say): what is indexed is the answer
        if not told and pending:
            print(f"pi-server: indexing, {pending} files to go; waiting (--no-wait answers at once)", file=sys.stderr)
            told = True
        time.sleep(POLL)


def _char_index(s: str, units: int) -> int:
    """The index in `s` of a UTF-16 offset (what `ranges` count, as JS clients do)."""
    n = 0
    for i, ch in enumerate(s):
        if n >= units:
            return i
        n += 2 if ord(ch) > 0xFFFF else 1
    return len(s)


def _marked(snippet: str, ranges: list[list[int]], color: bool) -> str:
    on, off = ("\x1b[1;31m", "\x1b[0m") if color else ("»", "«")
    out, at = [], 0
    spans = ((_char_index(snippet, int(r[0])), _char_index(snippet, int(r[1]))) for r in ranges)
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, len(snippet))
        if start >= end:
            continue
        out += [snippet[at:start], on, snippet[start:end], off]
        at = end
    out.append(snippet[at:])
    return " ".join("".join(out).split())


def _when(ts: Any) -> str:
    return str(ts or "")[:16].replace("T", " ")


def _print_hits(res: dict[str, Any], color: bool) -> None:
    for h in res.get("hits", []):
        title = " ".join(str(h.get("sessionName") or h.get("firstMessage") or "").split())[:80]
        kind = h.get("role") or h.get("type", "")
        print(f"{_when(h.get('timestamp'))}  {title}")
        print(f"    {h.get('entryId')}  {kind}  {h.get('session')}")
        print(f"    {_marked(str(h.get('snippet', '')), h.get('ranges') or [], color)}")


def cmd_search(args: Any) -> int:
    try:
        return _run(args)
    except SearchError as e:
        print(f"pi-server: {e}", file=sys.stderr)
        return 2


def _run(args: Any) -> int:
    """The hits of `args.query`, newest first, as text or as the pi/search result."""
    if not args.query.strip():
        raise SearchError("the query is empty: give words to search for")
    params: dict[str, Any] = {"query": args.query}
    if args.limit is not None:
        params["limit"] = args.limit
    s = _Session(args)
    try:
        res = _search(s.ch, params, wait=not args.no_wait)
    finally:
        s.close()
    if args.json:
        sys.stdout.write(json.dumps(res, ensure_ascii=False, indent=2) + "\n")
        return 0
    hits, total = res.get("hits", []), res.get("total", 0)
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    _print_hits(res, color)
    pending = res.get("pendingFiles", 0)
    more = f", {pending} files not indexed yet" if pending else ""
    if res.get("incomplete"):
        more += ", incomplete: the search ran out of time"
    stream = sys.stdout if hits else sys.stderr
    count = _count(len(hits), total, bool(res.get("totalAtLeast")))
    print(f"({count}{more})" if hits else f"pi-server: no entry matched {args.query!r}{more}", file=stream)
    return 0


def _count(shown: int, total: int, at_least: bool) -> str:
    """"1 hit", "12 hits", "50 of 302 hits", "50 of 302+ hits" (the server stopped counting
    past the page), as the editors say it."""
    of = f"{total}+" if at_least else str(total)
    noun = "hit" if total == 1 and not at_least else "hits"
    return f"{of} {noun}" if shown == total and not at_least else f"{shown} of {of} {noun}"


def add_parser(sub: Any, count: Any) -> None:
    se = sub.add_parser("search", help="search every entry of every session (the daemon's full-text index)")
    se.add_argument("query", help='words (all must match), "exact phrases", re:PATTERN')
    se.add_argument("--limit", type=count, metavar="N", help="at most N hits (the server's default otherwise)")
    se.add_argument("--json", action="store_true", help="print the pi/search result")
    se.add_argument("--no-wait", action="store_true", help="answer at once while the index is still being built")
    se.add_argument("--sessions-dir", action="append", metavar="D", help="a sessions root (repeatable)")
    se.add_argument("--state-dir", metavar="D", help="the daemon's state dir (where its index is kept)")
    se.add_argument("--no-daemon", action="store_true", help="search in a server of this process, not the daemon")
    se.set_defaults(func=cmd_search)
    se.set_defaults(func=cmd_search)
