"""Random trees and corrupted files never raise out of the core and never loop."""

from __future__ import annotations

import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_server.llm.formats import FORMATS, context_result
from pi_server.store.index import NotASession, SessionIndex
from pi_server.tree.outline import FILTERS, Outline, get_tree
from pi_server.tree.paths import build_tree, common_ancestor, path_to, tree_diagnostics

HEADER = {"type": "session", "version": 3, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/x"}
TYPES = [
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "mystery",
]
ROLES = ["user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage", None, 7]

ids = st.sampled_from([f"e{i}" for i in range(12)])
text = st.text(st.characters(codec="utf-8"), max_size=30)


@st.composite
def entry(draw: st.DrawFn) -> dict:
    t = draw(st.sampled_from(TYPES))
    e: dict = {
        "type": t,
        "id": draw(ids),
        "parentId": draw(st.one_of(st.none(), ids, st.just("missing"))),
        "timestamp": draw(st.sampled_from(["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:00.500Z", "bad", None])),
    }
    if t == "message":
        role = draw(st.sampled_from(ROLES))
        content = draw(
            st.one_of(
                text,
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "type": st.sampled_from(["text", "image", "thinking", "toolCall", "x"]),
                            "text": text,
                            "id": ids,
                            "name": st.sampled_from(["read", "bash", "zz"]),
                            "arguments": st.dictionaries(text, text, max_size=2),
                        }
                    ),
                    max_size=3,
                ),
                st.none(),
                st.integers(),
            )
        )
        e["message"] = {
            "role": role,
            "content": content,
            "stopReason": draw(st.sampled_from(["stop", "toolUse", "error", "aborted", None])),
            "toolCallId": draw(ids),
            "command": draw(text),
            "output": draw(text),
        }
    elif t == "label":
        e["targetId"] = draw(ids)
        e["label"] = draw(st.one_of(st.none(), text))
    elif t == "compaction":
        e["summary"] = draw(text)
        e["firstKeptEntryId"] = draw(ids)
        e["tokensBefore"] = draw(st.one_of(st.integers(0, 10**6), st.none()))
    elif t == "branch_summary":
        e["summary"] = draw(text)
        e["fromId"] = draw(ids)
    elif t == "custom_message":
        e["content"] = draw(st.one_of(text, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}))))
        e["customType"] = draw(text)
    elif t == "session_info":
        e["name"] = draw(text)
    return e


def corrupt(draw: st.DrawFn, line: bytes) -> bytes:
    how = draw(st.sampled_from(["keep"] * 6 + ["truncate", "garbage", "utf8", "huge", "blank"]))
    if how == "truncate":
        return line[: draw(st.integers(0, max(0, len(line) - 1)))]
    if how == "garbage":
        return draw(st.binary(max_size=20)).replace(b"\n", b"")
    if how == "utf8":
        return line[:5] + b"\xff\xc3" + line[5:]
    if how == "huge":
        return json.dumps(
            {"type": "message", "id": "huge", "parentId": None, "message": {"role": "user", "content": "x" * 300_000}}
        ).encode()
    if how == "blank":
        return b"   "
    return line


@st.composite
def session_bytes(draw: st.DrawFn) -> bytes:
    entries = draw(st.lists(entry(), max_size=25))
    lines = [json.dumps(HEADER).encode()] + [corrupt(draw, json.dumps(e, ensure_ascii=False).encode()) for e in entries]
    data = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b'\n{"type":"mess']))
    return data


def _exercise(data: bytes) -> None:
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        try:
            idx = SessionIndex.open(path)
        except NotASession:
            return
        tree = build_tree(idx)
        tree_diagnostics(idx, tree)
        outline = Outline(idx)
        leaves = [None, *idx.ids[:6]]
        for leaf in leaves:
            for filt in FILTERS:
                get_tree(outline, leaf, filt, "user x", [idx.ids[0]] if idx.ids else [], 0, 50)
            for fmt in FORMATS:
                context_result(idx, leaf, fmt=fmt)
            if leaf is not None:
                p = idx.by_id[leaf]
                assert len(path_to(idx, p)) <= len(idx)
                common_ancestor(idx, p, len(idx) - 1)
    finally:
        os.unlink(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(session_bytes())
def test_corrupted_sessions_never_raise(data: bytes) -> None:
    _exercise(data)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _exercise(json.dumps(HEADER).encode() + b"\n" + data)


def test_cycle_and_self_parent_end_the_walk() -> None:
    rows = [
        HEADER,
        {"type": "message", "id": "a", "parentId": "b", "message": {"role": "user", "content": "a"}},
        {"type": "message", "id": "b", "parentId": "a", "message": {"role": "user", "content": "b"}},
        {"type": "message", "id": "c", "parentId": "c", "message": {"role": "user", "content": "c"}},
    ]
    _exercise("\n".join(json.dumps(r) for r in rows).encode() + b"\n")
