"""A summary without a model: the same sections, filled from the branch itself.

Used when no Anthropic key is configured, so summaries work on any machine.
"""

from __future__ import annotations

from typing import Any

from pi_server.store import entry_types as et
from pi_server.summaries.branch import BranchRequest, block_texts


def _text(content: Any) -> str:
    return block_texts(content, "\n")


def _line(text: str, limit: int = 200) -> str:
    first = " ".join(text.strip().split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def extractive_summary(req: BranchRequest, entries: list[dict[str, Any]]) -> str:
    goal = ""
    done: list[str] = []
    last_error = ""
    last_assistant = ""
    for e in entries:
        m = e.get("message") if e.get("type") == et.MESSAGE else None
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user" and not goal:
            goal = _line(_text(m.get("content")), 400)
        elif role == "assistant":
            text = _text(m.get("content"))
            if text.strip():
                last_assistant = _line(text)
                done.append(last_assistant)
            if m.get("stopReason") in ("error", "aborted") or m.get("errorMessage"):
                last_error = _line(str(m.get("errorMessage") or m.get("stopReason")))
        elif role == "toolResult" and m.get("isError"):
            last_error = _line(_text(m.get("content")))
    last = next((e for e in reversed(entries) if e.get("type") == et.MESSAGE), None)
    finished = bool(
        last
        and (last.get("message") or {}).get("role") == "assistant"
        and (last.get("message") or {}).get("stopReason") == "stop"
    )
    lines = [
        "## Goal",
        goal or "(not stated in this branch)",
        "",
        "## Constraints & Preferences",
        "- (none)",
        "",
        "## Progress",
        "### Done",
    ]
    lines += [f"- [x] {d}" for d in done[-8:]] or ["- (nothing completed)"]
    lines += ["", "### In Progress"]
    lines += [f"- [ ] {last_assistant}"] if last_assistant and not finished else ["- (none)"]
    lines += [
        "",
        "### Blocked",
        f"- {last_error}" if last_error else "- (none)",
        "",
        "## Key Decisions",
        "- (not extracted without a model)",
        "",
        "## Next Steps",
    ]
    if req.modified_files:
        lines.append(f"1. Review the changes to {', '.join(req.modified_files[:5])}")
    else:
        lines.append("1. Continue from where this branch left off")
    return "\n".join(lines)
