"""Options resolved once in initialize (bad ones shown and replaced by defaults); the method table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_client import server

from pi_server.live.registry import Registry
from pi_server.server import rpc
from pi_server.server.app import create_server
from pi_server.server.base import ServerOptions
from pi_server.server.host import build_registry
from pi_server.server.options import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES, Options, resolve
from pi_server.store.state import StateDir

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


def test_bad_options_fall_back_to_defaults_and_say_why() -> None:
    flags = ServerOptions(session_dirs=["/flag/dir"], busy_timeout=7.0)
    opts, problems = resolve({"busyTimeout": -3, "summary": {"timeout": "soon"}, "maxLiveEntries": 5}, flags)
    assert opts.busy_timeout == 7.0 and opts.max_live_entries == 5 and opts.summary.timeout == 120.0
    assert opts.session_dirs == ["/flag/dir"]
    assert any("busyTimeout" in p for p in problems) and any("summary" in p for p in problems)
    same, none = resolve(None, flags)
    assert none == [] and same.busy_timeout == 7.0


def test_the_defaults_are_the_options(tmp_path: Path) -> None:
    """One default per setting: the flags', the options' and the registry's are the options' own."""
    defaults = (DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_LIVE_ENTRIES)
    assert (ServerOptions().busy_timeout, ServerOptions().max_live_entries) == defaults
    assert (Options().busy_timeout, Options().max_live_entries) == defaults
    opts, _ = resolve(None, ServerOptions())
    reg = build_registry(Options(session_dirs=[str(tmp_path)], state_dir=str(tmp_path / "state")))
    assert (opts.busy_timeout, opts.max_live_entries) == (reg.busy_timeout, reg.max_live_entries) == defaults
    with pytest.raises(TypeError):  # the registry has none of its own
        Registry(roots=[str(tmp_path)], state=StateDir(str(tmp_path / "state")))  # type: ignore[call-arg]


def test_every_method_is_a_documented_function_listed_in_the_capabilities() -> None:
    create_server(ServerOptions())
    assert len(rpc.PI_METHODS) >= 14
    for name, (fn, _params) in rpc.PI_METHODS.items():
        assert name.startswith("pi/") and fn.__doc__, name
        assert fn.__module__.startswith("pi_server.server.methods."), name


async def test_a_bad_option_is_shown_and_the_server_works(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    async with server(
        "--sessions-dir", str(root), "--state-dir", str(tmp_path / "state"), init_options={"busyTimeout": "never"}
    ) as c:
        listed = await c.call("pi/listSessions", {})
        caps = c.init.capabilities.experimental["piSessions"]["methods"]
        shown = [m.message for m in c.lc.messages]
    assert len(listed["sessions"]) == len(list(root.rglob("*.jsonl")))
    assert set(caps) == set(rpc.PI_METHODS)
    assert any("busyTimeout" in m for m in shown)
