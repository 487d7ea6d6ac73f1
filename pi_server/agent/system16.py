"""pi 1.6.0's structured system prompt (system-prompt.js buildSystemPromptSections) and the
system message AgentSession records before a run when the sections or the tool set changed
(_preparePromptAndToolLoadout, then pi-agent-core's declareToolChanges)."""

from __future__ import annotations

import os
from typing import Any

from pi_server.agent.context_files import context_files
from pi_server.agent.decls16 import DECLARATIONS, GUIDELINES, SNIPPETS
from pi_server.jsutil import js_stringify
from pi_server.llm.transcript import current_system_message, current_tools


def _package_dir() -> str:
    # where pi points the model for its own docs: pi 1.6.0's global install
    return os.environ.get("PI_PACKAGE_DIR") or "/usr/local/lib/node_modules/@earendil-works/pi-coding-agent"


def _rules(tools: list[str]) -> str:
    """pi's buildRules: one rule per line, trimmed, first occurrence kept."""
    rules: list[str] = []

    def add(rule: str) -> None:
        r = rule.strip()
        if r and r not in rules:
            rules.append(r)

    if "bash" in tools and not {"grep", "find", "ls"} & set(tools):
        add("Use bash for file operations like ls, rg, find")
    for n in tools:
        for g in GUIDELINES.get(n, []):
            add(g)
    add("Be concise in your responses")
    add("Show file paths clearly when working with files")
    return "\n".join(f"- {r}" for r in rules)


def _docs() -> str:
    pkg = _package_dir()
    return f"""Pi documentation (read only when the user asks about the harness itself, its SDK, extensions, themes, skills, or TUI):
- Main documentation: {pkg}/README.md
- Additional docs: {pkg}/docs
- Examples: {pkg}/examples (extensions, custom tools, SDK)
- When reading pi docs or examples, resolve docs/... under Additional docs and examples/... under Examples, not the current working directory
- When asked about: extensions (docs/extensions.md, examples/extensions/), themes (docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), TUI components (docs/tui.md), keybindings (docs/keybindings.md), SDK integrations (docs/sdk.md), custom providers (docs/custom-provider.md), adding models (docs/models.md), packages (docs/packages.md), environment variables (docs/environment-variables.md), MCP servers (docs/mcp.md), codemode scripts and non-LLM models such as classifiers and image models (docs/codemode.md)
- Before implementing harness changes, read the relevant docs and examples in full, following related cross-references."""  # noqa: E501


def build_sections(cwd: str, tools: list[str]) -> dict[str, str]:
    """pi's buildSystemPromptSections for the default prompt, a cwd and a tool selection."""
    visible = [n for n in tools if SNIPPETS.get(n)]
    listed = "\n".join(f"- {n}: {SNIPPETS[n]}" for n in visible) if visible else "(none)"
    raw: dict[str, str] = {
        "preamble": "You are a coding assistant running inside pi, a coding agent harness. "
        "Help users inspect files, run commands, and modify code.",
        "tools": f"{listed}\n\nAdditional tools may be available.",
        "rules": _rules(tools),
        "docs": _docs(),
    }
    files = context_files(cwd)
    if files:
        raw["project_context"] = "\n\n".join(
            ["Project-specific instructions and guidelines:"]
            + [f'<project_instructions path="{p}">\n{c}\n</project_instructions>' for p, c in files]
        )
    raw["cwd"] = cwd.replace("\\", "/")
    return {n: v if n == "preamble" else f"<{n}>\n{v}\n</{n}>" for n, v in raw.items()}


def diff_sections(previous: dict[str, Any], current: dict[str, str]) -> dict[str, Any] | None:
    """pi's diffSystemPromptSections: changed or new sections, removed ones as null."""
    patch: dict[str, Any] = {n: t for n, t in current.items() if previous.get(n) != t}
    patch.update({n: None for n in previous if n not in current})
    return patch or None


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """pi-ai's declarationsEqual: the serialized declarations compared."""
    keys = ("name", "description", "parameters", "constrainedSampling")
    return js_stringify({k: a[k] for k in keys if k in a}) == js_stringify({k: b[k] for k in keys if k in b})


def tool_changes(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """pi-ai's getToolStateChanges: a changed definition is a removal and an addition."""
    before = {t.get("name"): t for t in previous}
    after = {t.get("name"): t for t in current}
    added = [t for t in current if t["name"] not in before or not _same(before[t["name"]], t)]
    removed = [
        {"name": t.get("name")} for t in previous if t.get("name") not in after or not _same(t, after[t.get("name")])
    ]
    return {"toolsAdded": added, "toolsRemoved": removed}


def system_update(context: list[dict[str, Any]], cwd: str, tools: list[str], now_ms: int) -> dict[str, Any] | None:
    """The system message pi records before a run's user message at this context (None: the
    model already has these sections and tools)."""
    prev = current_system_message(context)
    sections = diff_sections((prev or {}).get("sections") or {}, build_sections(cwd, tools))
    changes = tool_changes(current_tools(context), [DECLARATIONS[n] for n in tools])
    if sections is None and not changes["toolsAdded"] and not changes["toolsRemoved"]:
        return None
    msg: dict[str, Any] = {"role": "system", "content": ""}
    if sections is not None:
        msg["sections"] = sections
    msg["timestamp"] = now_ms
    for k in ("toolsAdded", "toolsRemoved"):
        if changes[k]:
            msg[k] = changes[k]
    return msg
