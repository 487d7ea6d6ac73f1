"""pi-server against pi 1.6.0 (node 22): contexts, convertToLlm, token sums, /tree rows,
getTree, SessionInfo and listing order on the sessions pi 1.6.0 generated, the files it
wrote (tests/fixtures/pi16), the 0.73-era generated sessions and the v1 fixtures.
And the provider bodies pi-ai 1.6.0 builds (Anthropic Messages, Chat Completions).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pi16_compare as cmp
import pytest
from conftest import ROOT, load_json, run_oracle

from pi_server.llm.anthropic import request_body
from pi_server.llm.convert import convert_to_llm
from pi_server.llm.models import ANTHROPIC, OPENAI_DEFAULT
from pi_server.llm.openai import convert_messages as openai_messages
from pi_server.llm.tokens import estimate_total
from pi_server.store.discovery import session_info
from pi_server.store.index import SessionIndex
from pi_server.tree.outline import Outline, get_tree


def _report(n: int, bad: list[cmp.Mismatch]) -> str:
    head = "\n".join(f"  {where}: {what}" for where, what in bad[:15])
    return f"{len(bad)} mismatches in {n} comparisons:\n{head}"


def test_oracle16_covers_every_entry_and_kind(oracle16: dict[str, Any]) -> None:
    assert oracle16["piCodingAgentVersion"] == "1.6.0"
    assert oracle16["nodeVersion"].startswith("v22.")
    assert not oracle16["coverageMissing"]
    kinds = {f["kind"] for f in oracle16["files"]}
    assert {"generated", "pi16", "generated-0.73", "handwritten-0.73", "fixture"} <= kinds
    assert max(f["entries"] for f in oracle16["files"] if f["kind"] == "generated") >= 1000
    pi16 = {os.path.basename(f["file"]) for f in oracle16["files"] if f["kind"] == "pi16"}
    assert {"01-agent-session.jsonl", "agent-turns-1.6.0.jsonl", "0.73.1-file-resumed-by-1.6.0.jsonl"} <= pi16
    cov = set(oracle16["coverage"])
    for t in ("usage", "context_edit", "compaction", "branch_summary", "label", "custom_message"):
        assert f"entry:{t}" in cov


def test_contexts_equal_pi16(oracle16: dict[str, Any]) -> None:
    """buildSessionContext wherever pi 1.6.0 builds what 0.73.1 built."""
    n, bad = cmp.contexts(oracle16, pending=False)
    assert n > 700
    assert not bad, _report(n, bad)


def test_contexts_with_projection_equal_pi16(oracle16: dict[str, Any]) -> None:
    """The contexts pi 1.6.0 projects (context edits, systemMessage checkpoints, system
    messages dropped from a compaction's kept range, null content normalized)."""
    n, bad = cmp.contexts(oracle16, pending=True)
    assert n > 100
    assert not bad, _report(n, bad)


def test_convert_to_llm_and_tokens_equal_pi16(oracle16: dict[str, Any]) -> None:
    n, bad = cmp.llm_and_tokens(oracle16)
    assert n > 2000
    assert not bad, _report(n, bad)


def test_tree_rows_equal_pi16(oracle16: dict[str, Any]) -> None:
    """/tree rows: ids, order, indent, connector, gutters, fold marks, titles, lines."""
    n, bad = cmp.outlines(oracle16)
    assert n > 3000
    assert not bad, _report(n, bad)


def test_tree_children_and_labels_equal_pi16(oracle16: dict[str, Any]) -> None:
    n, bad = cmp.trees(oracle16)
    assert not bad, _report(n, bad)


def test_session_info_equals_pi16(oracle16: dict[str, Any]) -> None:
    n, bad = cmp.infos(oracle16)
    assert n >= 30
    assert not bad, _report(n, bad)


def test_listing_order_equals_pi16(oracle16: dict[str, Any]) -> None:
    """SessionManager.list(cwd, dir): header-cwd filter, newest first, ties by file name descending."""
    n, bad = cmp.listings(oracle16)
    assert not bad, _report(n, bad)
    ties = [c for c in oracle16["listings"] if len(set(c["modified"])) < len(c["modified"])]
    assert ties, "no listing with equal modified times"
    assert any(not c["paths"] for c in oracle16["listings"]), "no listing filtered to nothing"


def _contexts(manifest: dict[str, Any]):
    for f in manifest["files"]:
        for ctx in load_json(f["expected"])["contexts"]:
            yield f"{f['kind']}:{os.path.basename(f['file'])} leaf={ctx['leafId']}", ctx


@pytest.mark.parametrize("model_id", ["claude-sonnet-4-5", "claude-opus-5"])
def test_anthropic_body_equals_pi16(oracle16: dict[str, Any], model_id: str) -> None:
    """The body pi-ai 1.6.0 builds for pi's own convertToLlm output: messages, system,
    tools, max_tokens, thinking. claude-sonnet-4-5 folds every system message into the
    top-level prompt; claude-opus-5 sends later ones in place."""
    n, bad = 0, []
    for where, ctx in _contexts(oracle16):
        pi = ctx["anthropicBodies"][model_id]
        if "body" not in pi:
            continue  # pi-ai refused the messages (malformed content in hand-made files)
        n += 1
        model = ANTHROPIC.get(model_id)
        if model is None:
            bad.append((where, "model unknown"))
            continue
        ids = [str(i) for i in range(len(ctx["llm"]))]
        body, _ = request_body(ctx["llm"], ids, model, ctx["thinkingLevel"])
        for key in sorted(set(body) | set(pi["body"])):
            if body.get(key) != pi["body"].get(key):
                bad.append((where, key))
    assert n > 1000
    assert not bad, _report(n, bad)


def test_openai_messages_equal_pi16(oracle16: dict[str, Any]) -> None:
    """pi-ai 1.6.0's Chat Completions messages (gpt-4o) for pi's convertToLlm output."""
    n, bad = 0, []
    for where, ctx in _contexts(oracle16):
        if ctx.get("openai") is None:
            continue
        n += 1
        ids = [str(i) for i in range(len(ctx["llm"]))]
        msgs, _ = openai_messages(ctx["llm"], ids, OPENAI_DEFAULT)
        if msgs != ctx["openai"]["messages"]:
            bad.append((where, "messages"))
    assert n > 1000
    assert not bad, _report(n, bad)


@pytest.mark.parametrize("name", ["01-agent-session.jsonl", "recorded/agent-turns-1.6.0.jsonl"])
def test_context16_script_answers_for_one_leaf(name: str, tmp_path) -> None:
    """tests/oracle/context16.mjs (pi 1.6.0's answers for one file and leaf) agrees with us:
    tokens, convertToLlm, provider bodies, /tree rows of every filter, SessionInfo."""
    file = tmp_path / os.path.basename(name)
    shutil.copyfile(ROOT / "tests" / "fixtures" / "pi16" / name, file)
    idx = SessionIndex.open(str(file))
    leaf = idx.ids[len(idx) // 2]
    pi = run_oracle("context16.mjs", str(file), {"leaf": leaf}, pi16=True)
    assert pi["leafId"] == leaf
    assert estimate_total(pi["agent"]) == pi["tokens"]
    assert convert_to_llm(pi["agent"])[0] == pi["llm"]
    assert set(pi["anthropic"]) == {"claude-sonnet-4-5", "claude-opus-5"}
    assert all("body" in b for b in pi["anthropic"].values())
    ids = [str(i) for i in range(len(pi["llm"]))]
    for model_id, b in pi["anthropic"].items():
        assert request_body(pi["llm"], ids, ANTHROPIC[model_id], pi["thinkingLevel"])[0] == b["body"]
    assert openai_messages(pi["llm"], ids, OPENAI_DEFAULT)[0] == pi["openai"]["body"]["messages"]
    outline = Outline(idx)
    for filt, rows in pi["tree"].items():
        ours = get_tree(outline, leaf, filt)["rows"]
        want = [(r["id"], r["indent"], r["connector"], r["gutters"], r["title"]) for r in rows]
        assert [(r["id"], r["indent"], r["connector"], r["gutters"], r["title"]) for r in ours] == want, filt
    info = session_info(idx)
    assert (info["messageCount"], info["firstMessage"], info["modified"]) == (
        pi["sessionInfo"]["messageCount"],
        pi["sessionInfo"]["firstMessage"],
        pi["sessionInfo"]["modified"],
    )
