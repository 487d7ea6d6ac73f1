"""Which tools a harness turn offers: the read-only ones the server runs, the ones an editor
client runs (declared in its capabilities), and their order (declarations: decls16.py)."""

from __future__ import annotations

# pi 1.6.0 declares tools in the order it is given them: pi's defaults (read, bash, edit, write),
# then the read-only ones as pi's own recorded read-only run lists them (ls, grep, find)
TOOL_ORDER = ["read", "bash", "edit", "write", "ls", "grep", "find"]
READ_ONLY = ("read", "grep", "find", "ls")
CLIENT_TOOLS = ("edit", "write", "bash")
