"""Method modules are imported on their first request: the table that says which module
serves each method matches what the modules register, and a listing loads none of the
heavy parts (a real interpreter, not this test process, whose modules are all loaded)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

from pi_server.server import methods, rpc

HEAVY = (
    "pi_server.store.index",  # a listing from the listing cache reads no session file
    "pi_server.tree.outline",
    "pi_server.live.session",
    "pi_server.live.navigate",
    "pi_server.context.build",
    "pi_server.llm.formats",
    "pi_server.agent.turn",
    "pi_server.summaries",
    "pi_server.server.methods.agent",
    "watchfiles",
    "pygls",
    "lsprotocol",
)


def test_the_table_names_the_module_of_every_method() -> None:
    for name in ("agent", "edits", "sessions", "stats", "summaries", "writes", "documents", "lifecycle"):
        importlib.import_module(f"pi_server.server.methods.{name}")
    served = {name: fn.__module__.rsplit(".", 1)[1] for name, (fn, _params) in rpc.PI_METHODS.items()}
    assert served == methods.MODULES


def test_the_stdio_loop_and_the_listing_import_nothing_heavy() -> None:
    code = (
        "import json, sys\n"
        "import pi_server.server.lean as lean\n"
        "lean.handler('pi/listSessions')\n"
        "import pi_server.live.registry\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "pi_server.server.methods.sessions" in loaded
    assert [m for m in HEAVY if m in loaded] == []


def test_unknown_methods_load_no_module() -> None:
    assert methods.load("pi/nope") is False
    assert methods.load("initialize") is False
