"""The command line: `pi-server ls | tree | context | search`, and the server (`serve`, or no command)."""

from __future__ import annotations

import functools
import os
import sys

from pi_server import __version__

TYPE_CHECKING = False  # not typing's: what editors start (the connector) imports none of it
if TYPE_CHECKING:
    import argparse
    import re
    from typing import Any, NoReturn

    from pi_server.store.index import SessionIndex

# The core is imported by the commands that use it, not here: what editors start is the
# connector (connector.py), which imports none of it.


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


def _open(path: str) -> SessionIndex:
    from pi_server.store.index import NotASession, SessionIndex

    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CliError(f"not a session file (a directory): {path}")
    try:
        return SessionIndex.open(path)
    except NotASession:
        raise CliError(f"not a pi session file: {path}") from None
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None


def _entry_id(idx: SessionIndex, entry_id: str, flag: str) -> str:
    """An id given on the command line, known in the file."""
    if not entry_id.strip():
        raise CliError(f"{flag} is empty: give an entry id (pi-server tree --ids shows them)")
    if entry_id not in idx.by_id:
        raise CliError(f"no entry with id {entry_id} in {idx.path} ({flag}; pi-server tree --ids shows them)")
    return entry_id


def _current_leaf(idx: SessionIndex, args: argparse.Namespace) -> tuple[str | None, bool]:
    """(leaf, before the first entry): --before-first or --leaf, else the server's pointer, else
    the last entry.

    The server keeps a switched leaf in its state dir while the file has not grown
    since (as it serves getTree/buildContext without leafId); the CLI shows the same.
    """
    from msgspec import UNSET

    from pi_server.live.leaf import kept_leaf, read_at
    from pi_server.store.state import default_state_dir, saved_leaf

    if args.leaf is not None:
        _entry_id(idx, args.leaf, "--leaf")
    asked = None if getattr(args, "before_first", False) else args.leaf if args.leaf is not None else UNSET
    if asked is not UNSET:
        return read_at(None, False, asked)
    lid, explicit = kept_leaf(idx, saved_leaf(args.state_dir or default_state_dir(), idx.path))
    if explicit:
        where = f"entry {lid}" if lid else "before the first entry"
        print(f"pi-server: at the leaf an editor switched to ({where}); --leaf ID for another", file=sys.stderr)
    return read_at(lid, explicit)


@functools.cache
def _lone_surrogate() -> re.Pattern[str]:
    import re  # here, as argparse and json: what editors start (the connector) needs none of them

    return re.compile("[\ud800-\udfff]")


def _raw_json(o: Any) -> Any:
    """A context's messages come as the file's JSON bytes (msgspec.Raw): shown parsed."""
    import msgspec

    if isinstance(o, msgspec.Raw):
        import json

        return json.loads(bytes(o))
    raise TypeError(f"{type(o).__name__} is not JSON")


def _dump(obj: Any) -> None:
    # pi cuts strings in UTF-16 units, leaving lone surrogates; JSON escapes them as JS does
    import json

    text = json.dumps(obj, ensure_ascii=False, indent=2, default=_raw_json)
    sys.stdout.write(_lone_surrogate().sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def _print(line: str) -> None:
    # a terminal shows a lone surrogate as U+FFFD, as node writes it
    sys.stdout.write(_lone_surrogate().sub("\ufffd", line) + "\n")


def _roots(dirs: list[str] | None) -> tuple[list[str], bool]:
    from pi_server.store.discovery import agent_dir_problem, resolve_roots

    for d in dirs or []:
        path = os.path.expanduser(d)
        if not d.strip():
            raise CliError("--sessions-dir is empty: give a folder")
        if not os.path.exists(path):
            raise CliError(f"--sessions-dir {d}: no such directory")
        if not os.path.isdir(path):
            raise CliError(f"--sessions-dir {d}: not a directory (give the folder holding the sessions)")
    problem = None if dirs else agent_dir_problem()
    if problem:
        raise CliError(problem)
    roots, samples = resolve_roots(dirs)
    if samples:
        print(
            "pi-server: no pi sessions on this machine (no PI_CODING_AGENT_DIR, no ~/.pi); "
            "showing pi-server's bundled samples",
            file=sys.stderr,
        )
    return roots, samples


def cmd_ls(args: argparse.Namespace) -> int:
    from pi_server.store.discovery import list_sessions

    roots, _ = _roots(args.sessions_dir)
    sessions = list_sessions(roots, query=args.query, limit=args.limit)
    if args.json:
        _dump({"sessions": sessions})
        return 0
    if not sessions and args.limit != 0:  # --limit 0 asked for none: nothing to explain
        where = ", ".join(roots)
        if args.query:
            print(f"pi-server: no session under {where} matched the query {args.query!r}", file=sys.stderr)
        else:
            print(f"pi-server: no sessions under {where}", file=sys.stderr)
    for s in sessions:
        title = s.get("name") or s["firstMessage"]
        title = " ".join(title.split())
        print(f"{s['modified'][:16].replace('T', ' ')}  {s['messageCount']:>5} msgs  {s['cwd']}")
        print(f"    {title[:100]}")
        print(f"    {s['session']}")
    return 0


def _newest(dirs: list[str] | None) -> str:
    from pi_server.store.discovery import list_sessions

    roots, samples = _roots(dirs)
    sessions = list_sessions(roots, limit=1)
    if not sessions:
        raise CliError("no sessions under " + ", ".join(roots))
    note = "bundled sample session" if samples else "most recent session"
    print(f"pi-server: showing the {note} {sessions[0]['session']}", file=sys.stderr)
    return sessions[0]["session"]


def cmd_tree(args: argparse.Namespace) -> int:
    from pi_server.tree.outline import Outline, get_tree, render_text

    idx = _open(args.file if args.file else _newest(args.sessions_dir))
    leaf, _ = _current_leaf(idx, args)
    folded = [_entry_id(idx, f, "--fold") for f in args.fold or []]
    result = get_tree(Outline(idx), leaf, args.filter, args.search or "", folded, args.offset, args.limit)
    if args.json:
        _dump(result)
        return 0
    from pi_server.tree.width import fit_width, terminal_width

    width = terminal_width()
    for line in render_text(result, ids=args.ids):
        _print(line if width is None else fit_width(line, width))
    shown = len(result["rows"])
    print(f"({shown} of {result['total']} rows, filter {args.filter})")
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    from pi_server.llm.formats import context_result
    from pi_server.llm.strict_schema import StrictRequired

    idx = _open(args.file)
    leaf, before = _current_leaf(idx, args)
    try:
        _dump(context_result(idx, leaf, before_first=before, fmt=args.format))
    except StrictRequired as e:  # pi-ai refuses to build this request
        raise CliError(f"--format {args.format}: {e}") from None
    return 0


def _read_token(path: str | None) -> str:
    if not path:
        raise CliError("--tcp needs --token-file (clients must present that token)")
    try:
        with open(path) as f:
            mode = os.fstat(f.fileno()).st_mode
            token = f.read().strip()
    except OSError as e:
        raise CliError(f"cannot read token file {path}: {e.strerror}") from None
    if not token:
        raise CliError(f"token file {path} is empty")
    if mode & 0o077:
        print(f"pi-server: warning: token file {path} is open to other users; run chmod 600 {path}", file=sys.stderr)
    return token


def _no_daemon(args: argparse.Namespace) -> bool:
    """In-process service: asked for, or no Unix sockets here."""
    import socket

    return args.no_daemon or os.environ.get("PI_SERVER_NO_DAEMON") == "1" or not hasattr(socket, "AF_UNIX")


def _connector_config(args: argparse.Namespace) -> Any:
    from pi_server.connector import Config

    return Config(
        session_dirs=list(args.sessions_dir or []),
        state_dir=args.state_dir,
        busy_timeout=args.busy_timeout,
        max_live_entries=args.max_live_entries,
        log_file=getattr(args, "log_file", None),
        idle_exit=_idle_exit(args),
        verbose=getattr(args, "verbose", False),
    )


def _idle_exit(args: argparse.Namespace) -> float | None:
    if args.idle_exit is not None:
        return args.idle_exit
    env = os.environ.get("PI_SERVER_IDLE_EXIT")
    try:
        return float(env) if env else None
    except ValueError:
        raise CliError(f"PI_SERVER_IDLE_EXIT is not a number of seconds: {env}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    tcp = getattr(args, "tcp", False)
    if not tcp and not _no_daemon(args):
        from pi_server.connector import serve

        return serve(_connector_config(args))
    import logging

    from pi_server.server.host import ServerOptions

    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        filename=getattr(args, "log_file", None),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pygls logs every message body at INFO, and tracebacks for errors we raise on purpose
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    from pi_server import redact
    from pi_server.llm.client import api_key

    redact.install([api_key()])  # the API key never reaches a log line, whoever logs it
    token = _read_token(args.token_file) if tcp else None
    # a flag not given leaves the options' default
    limits = {k: getattr(args, k, None) for k in ("busy_timeout", "max_live_entries")}
    options = ServerOptions(
        session_dirs=getattr(args, "sessions_dir", None) or [],
        state_dir=getattr(args, "state_dir", None),
        token=token,
        **{k: v for k, v in limits.items() if v},
    )
    if token is not None:
        from pi_server.server.tcp import ListenError, serve_tcp

        try:
            serve_tcp(options, "127.0.0.1", args.port)
        except ListenError as e:
            raise CliError(str(e)) from None
        except KeyboardInterrupt:
            pass
    else:  # --no-daemon: this process serves its one client over stdio
        from pi_server.server.app import create_server

        try:
            create_server(options).start_io()
        except KeyboardInterrupt:
            pass
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(0)  # watcher threads must not outlive the connection


def cmd_daemon(args: argparse.Namespace) -> int:
    if args.action == "run":
        return _run_daemon(args)
    from pi_server import rendezvous
    from pi_server.connector import ConnectError, connect

    cfg = _connector_config(args)
    try:
        found = connect(cfg, args.action, start=False)
    except (rendezvous.Refused, ConnectError) as e:
        raise CliError(str(e)) from None
    if found is None:
        sock = rendezvous.paths(cfg.key())[0]
        print(f"pi-server: no daemon runs for this configuration (its socket would be {sock})", file=sys.stderr)
        return 1
    sock, answer = found
    if args.action == "stop":
        sock.settimeout(120)
        rendezvous.read_line(sock)  # the daemon closes once it has saved its indexes and left its socket
        print("pi-server: daemon stopped", file=sys.stderr)
        return 0
    import json

    status = json.loads(answer)
    if args.json:
        _dump(status)
    else:
        for k in ("pid", "version", "socket", "uptime", "clients", "sessionsIndexed", "rss", "stateDir", "log"):
            print(f"{k:16} {status[k]}")
    return 0


def _run_daemon(args: argparse.Namespace) -> int:
    from pi_server.server.daemon import ListenFailed, run

    try:
        code = run(
            session_dirs=args.sessions_dir or [],
            state_dir=args.state_dir,
            busy_timeout=args.busy_timeout or 120.0,
            max_live_entries=args.max_live_entries or 100_000,
            idle_exit=_idle_exit(args),
            log_file=args.log_file,
            verbose=args.verbose,
        )
    except ListenFailed as e:
        raise CliError(str(e)) from None
    os._exit(code)  # watcher threads must not outlive the daemon


def _count(text: str) -> int:
    """A non-negative integer argument."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return n


def build_parser(serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line; `serve_only` leaves out the reading commands (and the core they import)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            # one line starting as every other CLI message (argparse would add the usage first)
            self.exit(2, f"pi-server: {message} (see {self.prog} --help)\n")

    p = _Parser(
        prog="pi-server",
        description="Serve pi's session trees to editors, or show them on the command line.",
        epilog="With no command, pi-server is the LSP server over stdio (what editors start): "
        "pi-server [--sessions-dir D]... [--state-dir D]. Over TCP: pi-server serve --tcp --port N "
        "--token-file F (127.0.0.1 only). See pi-server serve --help.",
    )
    p.add_argument("--version", action="version", version=f"pi-server {__version__}")
    sub = p.add_subparsers(dest="command")
    if not serve_only:
        _add_reading_commands(sub)
    _add_serve(sub)
    _add_daemon(sub)
    return p


def _add_reading_commands(sub: Any) -> None:
    from pi_server.llm.formats import FORMATS
    from pi_server.tree.outline import FILTERS

    ls = sub.add_parser("ls", help="list sessions, newest first")
    ls.add_argument("--sessions-dir", action="append", metavar="D", help="a sessions root (repeatable)")
    ls.add_argument("--query", help="words that must all appear in the name or messages")
    ls.add_argument("--limit", type=_count, metavar="N", help="at most N sessions")
    ls.add_argument("--json", action="store_true", help="print the pi/listSessions result")
    ls.set_defaults(func=cmd_ls)

    tr = sub.add_parser("tree", help="draw a session's tree as pi's /tree does")
    tr.add_argument("file", nargs="?", help="a session file (default: the most recent session)")
    tr.add_argument("--sessions-dir", action="append", metavar="D", help="where to look when FILE is omitted")
    tr.add_argument("--filter", choices=FILTERS, default="default")
    tr.add_argument("--search")
    tr.add_argument("--leaf", metavar="ID", help="default: the leaf the server keeps, else the last entry")
    tr.add_argument("--state-dir", metavar="D", help="the server's state dir (for its leaf pointers)")
    tr.add_argument("--fold", action="append", metavar="ID", help="fold this entry (repeatable)")
    tr.add_argument("--ids", action="store_true", help="show each row's entry id (what --leaf and --fold take)")
    tr.add_argument("--offset", type=_count, default=0, metavar="N")
    tr.add_argument("--limit", type=_count, metavar="N")
    tr.add_argument("--json", action="store_true", help="print the pi/getTree result")
    tr.set_defaults(func=cmd_tree)

    cx = sub.add_parser("context", help="print the pi/buildContext result as JSON")
    cx.add_argument("file")
    g = cx.add_mutually_exclusive_group()
    g.add_argument("--leaf", metavar="ID", help="default: the leaf the server keeps, else the last entry")
    g.add_argument("--before-first", action="store_true", help="the context before the first entry (empty)")
    cx.add_argument("--format", choices=FORMATS, default="agent")
    cx.add_argument("--state-dir", metavar="D", help="the server's state dir (for its leaf pointers)")
    cx.set_defaults(func=cmd_context)

    from pi_server.search_cli import add_parser

    add_parser(sub, _count)


def _add_serve(sub: Any) -> None:
    import argparse

    sv = sub.add_parser("serve", help="serve the protocol (stdio unless --tcp)")
    sv.add_argument("--tcp", action="store_true", help="listen on 127.0.0.1 instead of stdio")
    sv.add_argument("--port", type=_count, default=0, help="default: a free port, printed on stderr")
    sv.add_argument("--token-file", metavar="F", help="the token TCP clients must send")
    sv.add_argument("--sessions-dir", action="append", metavar="D", help="a sessions root (repeatable)")
    sv.add_argument("--state-dir", metavar="D", help="where leaf pointers and pending writes are kept")
    sv.add_argument("--busy-timeout", type=float, metavar="S", help="seconds after which a pi turn counts as over")
    sv.add_argument(
        "--max-live-entries",
        type=_count,
        metavar="N",
        help="entries kept indexed in memory (default 100000); the rest reload from the index cache",
    )
    # language clients name their transport and process id; stdio is what pi-server speaks anyway
    sv.add_argument("--stdio", action="store_true", help="serve over stdio (the default; accepted for LSP clients)")
    sv.add_argument("--clientProcessId", metavar="PID", help=argparse.SUPPRESS)
    sv.add_argument("--log-file", metavar="F", help="log here instead of stderr (a daemon this starts logs here)")
    sv.add_argument("-v", "--verbose", action="store_true")
    sv.add_argument(
        "--no-daemon", action="store_true", help="serve in this process, not through the daemon (PI_SERVER_NO_DAEMON=1)"
    )
    sv.add_argument("--idle-exit", type=float, metavar="S", help="seconds a daemon this starts stays without clients")
    sv.set_defaults(func=cmd_serve)


def _add_daemon(sub: Any) -> None:
    dm = sub.add_parser("daemon", help="the background server editors share: run it, see it, stop it")
    dm.add_argument("action", nargs="?", choices=("run", "status", "stop"), default="run")
    dm.add_argument("--sessions-dir", action="append", metavar="D", help="a sessions root (repeatable)")
    dm.add_argument("--state-dir", metavar="D", help="where indexes, leaf pointers and pending writes are kept")
    dm.add_argument("--busy-timeout", type=float, metavar="S", help="seconds after which a pi turn counts as over")
    dm.add_argument("--max-live-entries", type=_count, metavar="N", help="entries kept indexed in memory")
    dm.add_argument("--idle-exit", type=float, metavar="S", help="exit after this long without clients (default 600)")
    dm.add_argument("--log-file", metavar="F", help="default: daemon.log in the state dir")
    dm.add_argument("--json", action="store_true", help="status as JSON")
    dm.add_argument("-v", "--verbose", action="store_true")
    dm.set_defaults(func=cmd_daemon)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] == "serve" or argv[0].startswith("-"):
        from pi_server import connector

        cfg = connector.parse_flags(argv)
        if cfg is not None:  # what editors start: no argparse, none of the server
            return connector.serve(cfg)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]  # no subcommand: serve over stdio
    args = build_parser(serve_only=argv[0] in ("serve", "daemon")).parse_args(argv)
    try:
        return args.func(args)
    except CliError as e:
        print(f"pi-server: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
