"""Branch summaries as pi makes them: which entries, which fit, and the request text.

Mirrors pi 1.6.0's collectEntriesForBranchSummary, prepareBranchEntries (context
edits honoured), serializeConversation (thinking left out) and the file-operation
tracking of compaction/utils.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pi_server.context.build import branch_summary_message, compaction_summary_message, project
from pi_server.jsutil import js_key, js_string, js_stringify, u16len, u16slice, u16sort_key
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.tokens import estimate_tokens
from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.summaries.prompts import BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT
from pi_server.tree.paths import common_ancestor

TOOL_RESULT_MAX_CHARS = 2000
RESERVE_TOKENS = 16384


@dataclass
class FileOps:
    read: dict[str, None] = field(default_factory=dict)  # insertion-ordered sets
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)


def collect_entries(idx: SessionIndex, old_leaf: str | None, target: str | None) -> tuple[list[dict], str | None]:
    """Entries from the old leaf back to the common ancestor with the target, oldest first."""
    if not old_leaf:
        return [], None
    target_pos = idx.by_id.get(target) if target is not None else None
    common_pos = common_ancestor(idx, idx.by_id[old_leaf], target_pos)
    common = idx.ids[common_pos] if common_pos is not None else None
    positions = []
    cur: str | None = old_leaf
    seen: set[str] = set()
    while cur and cur != common and cur in idx.by_id and cur not in seen:
        seen.add(cur)
        pos = idx.by_id[cur]
        positions.append(pos)
        cur = idx.parents[pos]
    positions.reverse()
    return idx.read_entries(positions), common


def _message(entry: dict[str, Any], edit: dict[str, Any] | None) -> dict[str, Any] | None:
    """pi's getMessageFromEntry: an edited entry as projected, else its own message."""
    t = entry.get("type")
    if t == et.MESSAGE:
        m = entry.get("message")
        if not isinstance(m, dict) or m.get("role") == "toolResult":
            return None  # the call in the assistant message carries the context
        return (project(entry, edit) or [None])[0] if edit else m
    if t == et.CUSTOM_MESSAGE:
        return (project(entry, edit) or [None])[0]
    if t == et.BRANCH_SUMMARY:
        return branch_summary_message(entry)  # kept even when empty, as pi's summarizer does
    if t == et.COMPACTION:
        return compaction_summary_message(entry)
    return None


def extract_file_ops(message: dict[str, Any], ops: FileOps) -> None:
    """File operations of an assistant's tool calls, or of the nested calls on a tool result."""
    if message.get("role") == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                _add_file_op(call.get("name"), call.get("arguments"), ops)
        return
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        _add_file_op(block["name"], block["arguments"], ops)


def _add_file_op(name: Any, args: Any, ops: FileOps) -> None:
    path = args.get("path") if isinstance(args, dict) else None
    if not isinstance(path, str) or not path:
        return
    target = {"read": ops.read, "write": ops.written, "edit": ops.edited}.get(name) if isinstance(name, str) else None
    if target is not None:
        target[path] = None


def prepare_entries(entries: list[dict[str, Any]], budget: int = 0) -> tuple[list[dict], FileOps, int]:
    """Newest first within the token budget; summaries kept when they nearly fit."""
    ops = FileOps()
    for e in entries:
        details = e.get("details")
        if e.get("type") == et.BRANCH_SUMMARY and not e.get("fromHook") and isinstance(details, dict):
            read, modified = details.get("readFiles"), details.get("modifiedFiles")
            for f in read if isinstance(read, list) else []:
                if isinstance(f, str):  # a path of another type is left out (see protocol.md)
                    ops.read[f] = None
            for f in modified if isinstance(modified, list) else []:
                if isinstance(f, str):
                    ops.edited[f] = None  # modified files count as edited, as pi dedupes them
    # the latest context edit per target among the collected entries
    edits = {js_key(e.get("targetId")): e for e in entries if e.get("type") == et.CONTEXT_EDIT}
    messages: list[dict[str, Any]] = []
    total = 0
    for e in reversed(entries):
        m = _message(e, edits.get(js_key(e.get("id"))))
        if m is None:
            continue
        extract_file_ops(m, ops)
        tokens = estimate_tokens(m)
        if budget > 0 and total + tokens > budget:
            if e.get("type") in (et.COMPACTION, et.BRANCH_SUMMARY) and total < budget * 0.9:
                messages.insert(0, m)
                total += tokens
            break
        messages.insert(0, m)
        total += tokens
    return messages, ops, total


def file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """readFiles (read, never modified) and modifiedFiles, sorted as JS sorts strings."""
    modified = {**ops.edited, **ops.written}
    read_only = sorted((f for f in ops.read if f not in modified), key=u16sort_key)
    return read_only, sorted(modified, key=u16sort_key)


def format_file_operations(read: list[str], modified: list[str]) -> str:
    sections = []
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def _truncate(text: str, limit: int) -> str:
    n = u16len(text)
    if n <= limit:
        return text
    head = u16slice(text, 0, limit)
    if head and "\ud800" <= head[-1] <= "\udbff":
        head = head[:-1]  # pi's sliceHead keeps a character cut in two out whole
    return f"{head}\n\n[... {n - limit} more characters truncated]"


def block_texts(content: Any, separator: str = "") -> str:
    """The text blocks' texts joined (JS's join: a text of another type as `String()` gives it)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    blocks = (c for c in content if isinstance(c, dict) and c.get("type") == "text")
    return separator.join(js_string(c.get("text"), "") for c in blocks)


def serialize_conversation(messages: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            text = block_texts(m.get("content"))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            # thinking is left out (pi 1.6.0): replayed reasoning is not what the model saw
            texts, calls, has_text = [], [], False
            for b in m.get("content") or []:
                t = b.get("type") if isinstance(b, dict) else None
                if t == "text":
                    has_text = True
                    texts.append(b.get("text") if isinstance(b.get("text"), str) else "")
                elif t == "toolCall":
                    args = b.get("arguments") if isinstance(b.get("arguments"), dict) else {}
                    arg_text = ", ".join(f"{k}={js_stringify(v)}" for k, v in args.items())
                    calls.append(f"{b.get('name')}({arg_text})")
            if has_text:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = block_texts(m.get("content"))
            if text:
                parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


@dataclass
class BranchRequest:
    """What a branch summary needs: the prompt, and what is added around the model's answer."""

    prompt: str | None  # None: nothing to summarize
    read_files: list[str]
    modified_files: list[str]
    entry_ids: list[str]
    common_ancestor: str | None
    messages: list[dict[str, Any]]


def prepare_branch_summary(
    idx: SessionIndex,
    old_leaf: str | None,
    target: str | None,
    context_window: int,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> BranchRequest:
    entries, common = collect_entries(idx, old_leaf, target)
    messages, ops, _ = prepare_entries(entries, (context_window or 128000) - RESERVE_TOKENS)
    read, modified = file_lists(ops)
    ids = [e.get("id") for e in entries]
    if not messages:
        return BranchRequest(None, read, modified, ids, common, [])
    llm, _ = convert_to_llm(messages)
    text = serialize_conversation(llm)
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    prompt = f"<conversation>\n{text}\n</conversation>\n\n{instructions}"
    return BranchRequest(prompt, read, modified, ids, common, messages)


def finish_summary(req: BranchRequest, model_text: str) -> str:
    """pi's wrapping of the model's answer: the preamble before, the file lists after."""
    return BRANCH_SUMMARY_PREAMBLE + model_text + format_file_operations(req.read_files, req.modified_files)
