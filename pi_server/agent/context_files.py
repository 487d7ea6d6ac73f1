"""pi's project context files (loadProjectContextFiles): AGENTS.md or CLAUDE.md of the agent
dir, then of each ancestor of the cwd; the system prompt lists them."""

from __future__ import annotations

import os

from pi_server.store.discovery import agent_dir

_CONTEXT_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


def _context_file(d: str) -> tuple[str, str] | None:
    for name in _CONTEXT_NAMES:
        p = os.path.join(d, name)
        if os.path.exists(p):
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    return p, f.read()
            except OSError:
                return None
    return None


def context_files(cwd: str) -> list[tuple[str, str]]:
    """pi's loadProjectContextFiles: the agent dir's file, then each ancestor's (root first)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    g = _context_file(agent_dir())
    if g:
        out.append(g)
        seen.add(g[0])
    ancestors: list[tuple[str, str]] = []
    d = cwd
    while os.path.isabs(d):  # no cwd (a header without one): no project files
        c = _context_file(d)
        if c and c[0] not in seen:
            ancestors.insert(0, c)
            seen.add(c[0])
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out + ancestors
