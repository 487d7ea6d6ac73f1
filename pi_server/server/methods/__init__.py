"""One module per group of methods; importing a module registers its methods in `server.rpc`.

`MODULES` says which module serves each `pi/*` method, so the stdio loop imports a
module when a request for one of its methods first arrives (a listing needs none of
the modules of the agent, the summaries or the writes). A test checks it against
what the modules register.
"""

from __future__ import annotations

import importlib

MODULES: dict[str, str] = {
    "pi/listSessions": "sessions",
    "pi/getTree": "sessions",
    "pi/getEntry": "sessions",
    "pi/buildContext": "sessions",
    "pi/editContext": "edits",
    "pi/getContextEdits": "edits",
    "pi/summarizeBranch": "summaries",
    "pi/compact": "summaries",
    "pi/getSessionStats": "stats",
    "pi/switchBranch": "writes",
    "pi/setLabel": "writes",
    "pi/setSessionName": "writes",
    "pi/fork": "writes",
    "pi/prompt": "agent",
    "pi/abort": "agent",
    "pi/setModel": "agent",
    "pi/setThinkingLevel": "agent",
}


def load(method: str) -> bool:
    """Import the module serving `method` (registering its methods); False if none does."""
    name = MODULES.get(method)
    if name is None:
        return False
    importlib.import_module(f"{__name__}.{name}")
    return True
