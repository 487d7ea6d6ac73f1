"""pi's convertToLlm: agent messages → the system/user/assistant/toolResult messages a model sees."""

from __future__ import annotations

from typing import Any

from pi_server.jsutil import js_string

COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"


def bash_execution_text(m: dict[str, Any]) -> str:
    text = f"Ran `{js_string(m.get('command'))}`\n"
    output = m.get("output")
    text += f"```\n{js_string(output)}\n```" if output else "(no output)"
    code = m.get("exitCode")
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {js_string(code)}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {js_string(m.get('fullOutputPath'))}]"
    return text


def _with_ts(m: dict[str, Any], content: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "user", "content": content}
    if "timestamp" in m:
        out["timestamp"] = m["timestamp"]
    return out


def convert_to_llm(messages: list[dict[str, Any]], entry_ids: list[str] | None = None) -> tuple[list, list]:
    """Returns (llm messages, the entry id of each)."""
    out: list[dict[str, Any]] = []
    ids: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        r: dict[str, Any] | None
        if role == "bashExecution":
            r = None if m.get("excludeFromContext") else _with_ts(m, [{"type": "text", "text": bash_execution_text(m)}])
        elif role == "custom":
            c = m.get("content")
            r = _with_ts(m, [{"type": "text", "text": c}] if isinstance(c, str) else c)
        elif role == "branchSummary":
            r = _with_ts(m, [{"type": "text", "text": BRANCH_PREFIX + js_string(m.get("summary")) + BRANCH_SUFFIX}])
        elif role == "compactionSummary":
            r = _with_ts(
                m, [{"type": "text", "text": COMPACTION_PREFIX + js_string(m.get("summary")) + COMPACTION_SUFFIX}]
            )
        elif role in ("system", "user", "assistant", "toolResult"):
            r = m  # pi 1.6.0 keeps system messages in place; providers fold or send them
        else:
            r = None
        if r is not None:
            out.append(r)
            if entry_ids is not None:
                ids.append(entry_ids[i])
    return out, ids
