"""The daemon and its connector with real processes: lifecycle, faults, and who may connect."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import RUNTIME_DIR, sample_store

from pi_server import rendezvous
from pi_server.connector import Config


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    st = sample_store(tmp_path)
    yield st
    _cli("daemon", "stop", *_args(st))


def _args(store: dict[str, Any]) -> list[str]:
    return ["--sessions-dir", store["root"], "--state-dir", store["state"]]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_server", *argv], capture_output=True, text=True, timeout=60)


def _status(store: dict[str, Any]) -> dict[str, Any] | None:
    out = _cli("daemon", "status", "--json", *_args(store))
    return json.loads(out.stdout) if out.returncode == 0 else None


def _paths(store: dict[str, Any]) -> tuple[str, str, str]:
    return rendezvous.paths(Config(session_dirs=[store["root"]], state_dir=store["state"]).key())


def frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: Any) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    assert length is not None
    return json.loads(stream.read(length))


class Connector:
    """A `pi-server` process as an editor starts it, spoken to in raw frames."""

    def __init__(self, store: dict[str, Any], *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_server", *_args(store), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, method: str, params: Any = None, notify: bool = False) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(msg))
        self.proc.stdin.flush()
        return self.next_id

    def answer(self, msg_id: int) -> dict[str, Any]:
        while True:
            msg = read_frame(self.proc.stdout)
            assert msg is not None, self.proc.stderr.read().decode() if self.proc.poll() is not None else "eof"
            if msg.get("id") == msg_id and "method" not in msg:
                return msg

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        return self.answer(self.send(method, params))

    def initialize(self) -> dict[str, Any]:
        reply = self.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self.send("initialized", {}, notify=True)
        return reply

    def close(self) -> int:
        """shutdown, exit, end of input: the exit status."""
        try:
            self.call("shutdown")
            self.send("exit", notify=True)
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (BrokenPipeError, AssertionError):
            pass
        return self.proc.wait(timeout=20)


def _wait(pred: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _daemons_of(store: dict[str, Any]) -> list[int]:
    """Running `pi-server daemon run` processes for this store's state dir."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"daemon" in cmd and b"run" in cmd and store["state"].encode() in cmd and _alive(int(p.name)):
            found.append(int(p.name))
    return found


def test_status_socket_modes_and_stop(store) -> None:
    c = Connector(store)
    reply = c.initialize()
    assert reply["result"]["serverInfo"]["name"] == "pi-server"
    assert c.call("pi/listSessions", {})["result"]["sessions"]
    st = _status(store)
    assert st is not None and st["clients"] == 1 and st["version"] and st["rss"] > 0
    sock_path, pid_file, _ = _paths(store)
    assert st["socket"] == sock_path and Path(sock_path).parent == Path(RUNTIME_DIR, "pi-server")
    assert os.stat(Path(sock_path).parent).st_mode & 0o777 == 0o700
    assert os.stat(sock_path).st_mode & 0o777 == 0o600
    assert Path(store["state"], "daemon.log").is_file()  # its log is in the state dir
    assert c.close() == 0
    assert _cli("daemon", "stop", *_args(store)).returncode == 0
    _wait(lambda: not _alive(st["pid"]))
    assert not os.path.exists(sock_path)
    out = _cli("daemon", "status", *_args(store))
    assert out.returncode == 1 and sock_path in out.stderr


def test_idle_exit_and_no_pipes_held(store) -> None:
    c = Connector(store, "--idle-exit", "0.5")
    c.initialize()
    pid = _status(store)["pid"]
    assert c.close() == 0
    # the daemon has none of the connector's streams: they end with the connector
    assert c.proc.stdout.read() == b"" and c.proc.stderr.read() == b""  # at their end, not held open
    _wait(lambda: not _alive(pid))
    assert not os.path.exists(_paths(store)[0])


def test_ten_connectors_at_once_start_one_daemon(store) -> None:
    cs = [Connector(store) for _ in range(10)]
    replies: list[Any] = [None] * 10

    def init(i: int) -> None:
        replies[i] = cs[i].initialize()

    threads = [threading.Thread(target=init, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(r is not None and "result" in r for r in replies)
    assert len(_daemons_of(store)) == 1
    assert _status(store)["clients"] == 10
    assert all(c.close() == 0 for c in cs)


def test_kill_9_during_a_request(store) -> None:
    a, b = Connector(store), Connector(store)
    a.initialize()
    b.initialize()
    pid = _status(store)["pid"]
    tree = a.call("pi/getTree", {"session": store["big"]})["result"]
    target = tree["rows"][0]["id"]
    label = a.call("pi/setLabel", {"session": store["big"], "targetId": target, "label": "kept"})
    assert "result" in label, label  # acknowledged
    a.send("pi/listSessions", {"query": "anything"})
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    codes = [a.proc.wait(timeout=5), b.proc.wait(timeout=5)]
    assert time.monotonic() - t0 < 1.0 + 0.5  # within 1 s (a little slack for a loaded machine)
    assert codes[0] != 0 and codes[1] != 0
    assert b"daemon went away" in a.proc.stderr.read()
    # the socket it left is stale: the next connector replaces it with a new daemon
    assert os.path.exists(_paths(store)[0])
    c = Connector(store)
    c.initialize()
    assert _status(store)["pid"] not in (pid, None)
    lines = [json.loads(x) for x in Path(store["big"]).read_text().splitlines()]
    assert lines[-1]["type"] == "label" and lines[-1]["label"] == "kept"  # the acknowledged write is there
    assert c.close() == 0


@pytest.mark.parametrize("kind", ["file", "symlink", "socket"])
def test_foreign_things_at_the_socket_path_are_refused(store, tmp_path: Path, kind: str) -> None:
    sock_path = _paths(store)[0]
    rendezvous.ensure_socket_dir()
    other = None
    if kind == "file":
        Path(sock_path).write_text("mine")
    elif kind == "symlink":
        os.symlink(tmp_path / "elsewhere", sock_path)
    else:  # another program listening, which does not speak our greeting
        other = socket.socket(socket.AF_UNIX)
        other.bind(sock_path)
        other.listen(4)
        threading.Thread(target=lambda: other.accept()[0].sendall(b"HELLO\n"), daemon=True).start()
    try:
        c = Connector(store)
        c.send("initialize", {"processId": None, "capabilities": {}})
        assert c.proc.wait(timeout=20) == 2
        err = c.proc.stderr.read().decode()
        assert sock_path in err and ("refused" in err or "not pi-server's socket" in err), err
        assert os.path.lexists(sock_path)  # nothing deleted
        if kind == "file":
            assert Path(sock_path).read_text() == "mine"
        assert not _daemons_of(store)
    finally:
        if other is not None:
            other.close()
        os.unlink(sock_path)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_connect(store) -> None:
    c = Connector(store)
    c.initialize()
    sock_path = _paths(store)[0]
    code = (
        "import os, socket, sys; os.setgid(65534); os.setuid(65534); s = socket.socket(socket.AF_UNIX);"
        f"s.connect({sock_path!r})\n"
        "try: s.sendall(b'PI-SERVER/1 status x\\n'); r = s.recv(100)\n"
        "except OSError: r = b''\n"
        "sys.stdout.write(repr(r))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert "PermissionError" in out.stderr and out.stdout == ""  # the 0700 folder keeps it out
    # even with the folders and socket opened up by mistake, the daemon checks the peer's uid
    for p, mode in ((RUNTIME_DIR, 0o711), (Path(sock_path).parent, 0o711), (sock_path, 0o666)):
        os.chmod(p, mode)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        assert out.stdout == "b''", (out.stdout, out.stderr)  # closed without a byte written
    finally:
        for p, mode in ((RUNTIME_DIR, 0o700), (Path(sock_path).parent, 0o700), (sock_path, 0o600)):
            os.chmod(p, mode)
    assert "peer uid 65534 is not ours" in Path(store["state"], "daemon.log").read_text()
    assert c.call("pi/listSessions", {})["result"]["sessions"]  # still serving us
    assert c.close() == 0


def test_configurations_never_mix(store, tmp_path: Path) -> None:
    other = {**store, "state": str(tmp_path / "state2")}
    a, b = Connector(store), Connector(other)
    a.initialize()
    b.initialize()
    sa, sb = _status(store), _status(other)
    assert sa["pid"] != sb["pid"] and sa["socket"] != sb["socket"]
    assert sa["stateDir"] == store["state"] and sb["stateDir"] == other["state"]
    # a greeting naming another configuration's key is not served
    s = socket.socket(socket.AF_UNIX)
    s.connect(sa["socket"])
    s.sendall(b"PI-SERVER/1 lsp " + sb["key"].encode() + b"\n")
    assert rendezvous.read_line(s) == b"PI-SERVER/1 other-configuration"
    s.close()
    assert a.close() == 0 and b.close() == 0
    _cli("daemon", "stop", *_args(other))


def _tree_then_stop(store: dict[str, Any]) -> int:
    """A client opens the largest sample's tree (no background indexing: no `initialized`), then
    the daemon is stopped; the old daemon's pid."""
    c = Connector(store)
    c.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert "result" in c.call("pi/getTree", {"session": store["big"], "limit": 5})
    pid = _status(store)["pid"]
    assert c.close() == 0
    assert _cli("daemon", "stop", *_args(store)).returncode == 0
    _wait(lambda: not _alive(pid))
    return pid


def test_a_restarted_daemon_reads_back_the_sessions_it_had_in_memory(store) -> None:
    _tree_then_stop(store)
    daemon = subprocess.Popen(  # as a connector starts it; no client yet
        [sys.executable, "-m", "pi_server", "daemon", "run", *_args(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait(lambda: (_status(store) or {}).get("sessionsIndexed") == 1)  # read from its saved index, unasked
    c = Connector(store)
    c.initialize()
    assert c.call("pi/getTree", {"session": store["big"], "limit": 5})["result"]["rows"]
    assert _status(store)["pid"] == daemon.pid
    assert c.close() == 0
    assert _cli("daemon", "stop", *_args(store)).returncode == 0
    assert daemon.wait(timeout=20) == 0


def test_sessions_outside_the_roots_are_not_read_back(store, tmp_path: Path) -> None:
    _tree_then_stop(store)
    elsewhere = tmp_path / "elsewhere" / "--x--"
    elsewhere.mkdir(parents=True)
    other = {**store, "root": str(elsewhere.parent)}  # the same state dir, other roots
    c = Connector(other)
    c.initialize()
    time.sleep(1.0)  # the read-back runs first thing: it has had its chance
    st = _status(other)
    assert st["sessionsIndexed"] == 0
    assert "Traceback" not in Path(st["log"]).read_text()
    assert c.close() == 0
    _cli("daemon", "stop", *_args(other))


def test_a_state_dir_that_cannot_be_written(store, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    bad = {**store, "state": str(blocker / "state")}
    c = Connector(bad)
    c.initialize()
    assert c.call("pi/listSessions", {})["result"]["sessions"]
    st = _status(bad)
    log = Path(st["log"]).read_text()
    assert log.count("serving without the index cache") == 1 and str(blocker / "state") in log
    assert c.close() == 0
    _cli("daemon", "stop", *_args(bad))


def test_no_daemon_serves_in_process(store) -> None:
    for extra, env in (("--no-daemon",), {}), ((), {"PI_SERVER_NO_DAEMON": "1"}):
        proc = subprocess.Popen(
            [sys.executable, "-m", "pi_server", *_args(store), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        c = Connector.__new__(Connector)
        c.proc, c.next_id = proc, 0
        assert c.initialize()["result"]["serverInfo"]["name"] == "pi-server"
        assert _status(store) is None and not os.path.exists(_paths(store)[0])
        assert c.close() == 0


def _imported(argv: list[str], stdin: bytes) -> set[str]:
    """The modules a real process imports (`-X importtime` lists each on stderr)."""
    out = subprocess.run([sys.executable, "-X", "importtime", *argv], input=stdin, capture_output=True, timeout=60)
    names = set()
    for line in out.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_the_connector_imports_only_the_standard_library(store) -> None:
    c = Connector(store)
    c.initialize()  # a daemon runs: the connector below only connects and relays
    init = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    rest = frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + frame({"jsonrpc": "2.0", "method": "exit"})
    loaded = _imported(["-m", "pi_server", *_args(store)], init + rest)
    baseline = _imported(["-c", "pass"], b"")  # the interpreter's own start (site, the editable install)
    ours = {"pi_server", "pi_server.__main__", "pi_server.cli", "pi_server.connector", "pi_server.rendezvous"}
    assert "pi_server.connector" in loaded
    foreign = {m for m in loaded - baseline - ours if m.split(".")[0] not in sys.stdlib_module_names}
    assert foreign == set()
    assert c.close() == 0


def _in_own_mounts(script: str) -> bool:
    """Whether this machine lets a test mount a small file system of its own (root, or a user
    namespace that maps us to root)."""
    for pre in (["unshare", "-m"], ["unshare", "-rm"]):
        try:
            ok = subprocess.run([*pre, "sh", "-c", script.replace("$S", "/mnt")], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ok.returncode == 0:
            return True
    return False


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_a_read_only_or_full_state_dir(store, tmp_path: Path, kind: str) -> None:
    """The state dir on a file system of its own (a private mount namespace): mounted read-only,
    or filled to the last byte before the daemon starts. The daemon serves, says once in its log
    that it serves without the index cache, and leaves the state dir as it found it."""
    mount = {
        "read-only": "mount -t tmpfs -o ro,size=1m tmpfs $S",
        "full": "mount -t tmpfs -o size=64k tmpfs $S && (head -c 1m /dev/zero > $S/filler; true)",
    }[kind]
    if os.geteuid() != 0 or not _in_own_mounts(mount + " && true"):
        pytest.skip("no private mount namespace here (needs root)")
    state = tmp_path / "state-mount"
    state.mkdir()
    cfg = {**store, "state": str(state)}
    daemon = subprocess.Popen(
        ["unshare", "-m", "sh", "-c", mount.replace("$S", str(state)) + ' && exec "$@"', "sh"]
        + [sys.executable, "-m", "pi_server", "daemon", "run", *_args(cfg)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait(lambda: _status(cfg) is not None or daemon.poll() is not None)
        assert daemon.poll() is None, daemon.stderr.read().decode() if daemon.stderr else ""
        c = Connector(cfg)
        c.initialize()
        sessions = c.call("pi/listSessions", {})["result"]["sessions"]
        assert len(sessions) == len(list(Path(store["root"]).rglob("*.jsonl")))
        assert c.call("pi/getTree", {"session": store["big"], "limit": 5})["result"]["rows"]
        st = _status(cfg)
        assert st is not None and st["pid"] == daemon.pid
        log = Path(st["log"]).read_text()
        assert log.count("serving without the index cache") == 1, log
        assert str(state) in log and "Traceback" not in log
        assert c.close() == 0
    finally:
        _cli("daemon", "stop", *_args(cfg))
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait(timeout=20)
    assert list(state.iterdir()) == []  # the mount went with its namespace; nothing written beneath it
