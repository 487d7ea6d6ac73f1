"""What a connector's start costs: the modules it imports, and its own reading of the first frame."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import sample_store
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_server import connector

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(["", " ", "\r\n\t "]))
def test_loads_reads_what_json_loads_reads(value: Any, space: str) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), json.dumps(value, indent=1)):
        data = (space + text + space).encode("utf-8", "surrogatepass")
        assert connector.loads(data) == json.loads(data)


@pytest.mark.parametrize(
    "data",
    [b"", b" ", b"{", b'{"a": }', b'{"a": 1} x', b"[1, 2", b'"\xff"', b"nul", b"{'a': 1}", b'"a\x01"', b"[" * 5000],
)
def test_loads_refuses_what_json_loads_refuses(data: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)):
        json.loads(data)
    with pytest.raises(ValueError):
        connector.loads(data)


def test_loads_refuses_deep_nesting_with_a_value_error() -> None:
    """json.loads raises RecursionError there; the connector, which reads a client's bytes
    before anything else, must not die of it (a connector runs with the default limit)."""
    code = "from pi_server import connector\ntry: connector.loads(b'[' * 100_000)\nexcept ValueError: print('refused')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr


def test_loads_constants_and_bom() -> None:
    got = connector.loads(b'\xef\xbb\xbf{"x": [NaN, Infinity, -Infinity, 1e400, 10000000000000000000001]}')
    assert isinstance(got, dict)
    nan, inf, minus, big, large = got["x"]
    assert math.isnan(nan) and inf == math.inf and minus == -math.inf and big == math.inf
    assert large == 10000000000000000000001


def _imported(argv: list[str], stdin: bytes) -> set[str]:
    out = subprocess.run([sys.executable, "-X", "importtime", *argv], input=stdin, capture_output=True, timeout=60)
    return {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_connector_imports_next_to_nothing(tmp_path: Path) -> None:
    """Beyond what the interpreter loads to run a module (`-m`), a connector relaying to a running
    daemon imports its three modules and four of the interpreter's C modules: not `json`,
    `socket`, `threading`, `struct`, `re` or `tempfile`, whose imports were most of its start."""
    store = sample_store(tmp_path)
    args = ["--sessions-dir", store["root"], "--state-dir", store["state"]]
    init = _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    rest = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"})
    try:
        first = subprocess.run(
            [sys.executable, "-m", "pi_server", *args], input=init + rest, capture_output=True, timeout=60
        )
        assert b'"capabilities"' in first.stdout, first.stderr  # a daemon runs from here on
        loaded = _imported(["-m", "pi_server", *args], init + rest)
        assert "pi_server.connector" in loaded
        baseline = _imported(["-c", "import runpy"], b"") | _imported(["-c", "pass"], b"")
        ours = {"pi_server", "pi_server.__main__", "pi_server.connector", "pi_server.rendezvous"}
        assert loaded - baseline <= ours | {"_json", "_socket", "_sha256", "errno"}
    finally:
        subprocess.run([sys.executable, "-m", "pi_server", "daemon", "stop", *args], capture_output=True, timeout=60)


def test_a_first_frame_larger_than_a_socket_buffer_follows_the_greeting(tmp_path: Path) -> None:
    """Small first frames go in one write with the greeting; a larger one (here 1 MB of
    initializationOptions) is sent once the daemon has answered, and is served the same."""
    store = sample_store(tmp_path)
    args = ["--sessions-dir", store["root"], "--state-dir", store["state"]]
    for pad in (10, 1_000_000):
        params = {"capabilities": {}, "initializationOptions": {"padding": "x" * pad}}
        init = _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        rest = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"})
        try:
            out = subprocess.run(
                [sys.executable, "-m", "pi_server", *args], input=init + rest, capture_output=True, timeout=60
            )
            assert out.returncode == 0, out.stderr
            assert b'"capabilities"' in out.stdout, out.stdout[-300:]  # the reply to `initialize`
        finally:
            subprocess.run(
                [sys.executable, "-m", "pi_server", "daemon", "stop", *args], capture_output=True, timeout=60
            )
