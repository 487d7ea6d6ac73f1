"""pi's system prompt (core/system-prompt.js buildSystemPrompt) for a cwd and a tool set."""

from __future__ import annotations

import os
from datetime import datetime

from pi_server.agent.tooldefs import TOOL_DEFS
from pi_server.store.discovery import agent_dir

_CONTEXT_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


def _pi_package_dir() -> str:
    # where pi's own docs live; pi points the model at its install
    return os.environ.get("PI_PACKAGE_DIR") or "/usr/lib/node_modules/@mariozechner/pi-coding-agent"


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


def build_system_prompt(cwd: str, tools: list[str], now: datetime | None = None) -> str:
    now = now or datetime.now()
    snippets = {n: TOOL_DEFS[n].get("promptSnippet") for n in tools if TOOL_DEFS[n].get("promptSnippet")}
    tools_list = "\n".join(f"- {n}: {snippets[n]}" for n in tools if n in snippets) or "(none)"
    guidelines: list[str] = []

    def add(g: str) -> None:
        if g not in guidelines:
            guidelines.append(g)

    has = set(tools)
    if "bash" in has and not has & {"grep", "find", "ls"}:
        add("Use bash for file operations like ls, rg, find")
    elif "bash" in has:
        add("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)")
    for n in tools:
        for g in TOOL_DEFS[n].get("promptGuidelines") or []:
            if g.strip():
                add(g.strip())
    add("Be concise in your responses")
    add("Show file paths clearly when working with files")
    pkg = _pi_package_dir()
    prompt = f"""You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
{tools_list}

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
{chr(10).join(f"- {g}" for g in guidelines)}

Pi documentation (read only when the user asks about pi itself, its SDK, extensions, themes, skills, or TUI):
- Main documentation: {pkg}/README.md
- Additional docs: {pkg}/docs
- Examples: {pkg}/examples (extensions, custom tools, SDK)
- When asked about: extensions (docs/extensions.md, examples/extensions/), themes (docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), TUI components (docs/tui.md), keybindings (docs/keybindings.md), SDK integrations (docs/sdk.md), custom providers (docs/custom-provider.md), adding models (docs/models.md), pi packages (docs/packages.md)
- When working on pi topics, read the docs and examples, and follow .md cross-references before implementing
- Always read pi .md files completely and follow links to related docs (e.g., tui.md for TUI API details)"""  # noqa: E501
    files = context_files(cwd)
    if files:
        prompt += "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"
        for path, content in files:
            prompt += f"## {path}\n\n{content}\n\n"
    prompt += f"\nCurrent date: {now.strftime('%Y-%m-%d')}"
    prompt += f"\nCurrent working directory: {cwd.replace(chr(92), '/')}"
    return prompt
