"""LSP document features on pi 1.6.0's entries, through a real LSP client: outline kinds and
names, hover on a context edit and a usage entry, go to a target, diagnostics for bad edits."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from lsp_client import server
from lsprotocol import types as lsp

from pi_server.store.index import SessionIndex

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pi16"


def _flat(items):
    for sym in items:
        yield sym
        yield from _flat(sym.children or [])


def _open(c, path: Path) -> str:
    uri = path.as_uri()
    c.lc.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=path.read_text())
        )
    )
    return uri


async def test_outline_hover_and_definition_on_pi16_entries(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--p--"
    root.mkdir(parents=True)
    edits = root / "edits.jsonl"
    agent = root / "agent.jsonl"
    shutil.copyfile(FIXTURES / "02-context-edits.jsonl", edits)
    shutil.copyfile(FIXTURES / "01-agent-session.jsonl", agent)
    idx = SessionIndex.open(str(edits))
    edit_pos = idx.types.index("context_edit")
    edit = idx.read_entry(edit_pos)
    target_line = idx.lines[idx.by_id[edit["targetId"]]]
    raw = Path(edits).read_text().splitlines()[idx.lines[edit_pos]]
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        uri = _open(c, edits)
        ident = lsp.TextDocumentIdentifier(uri)
        every = list(_flat(await c.lc.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))))
        kinds = {s.kind for s in every}
        assert len(kinds) >= 6 and lsp.SymbolKind.Module in kinds  # the system message
        assert not [s.name for s in every if s.name.endswith("(no content)")]
        assert any(s.name.startswith("assistant: [bash: ") for s in every)
        assert any(s.name.startswith("[context omit: ") for s in every)
        hover = await c.lc.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(idx.lines[edit_pos], 3)))
        assert hover is not None and f"`{edit['targetId']}`: user: Secret token" in hover.contents.value
        on_target = await c.lc.text_document_definition_async(
            lsp.DefinitionParams(ident, lsp.Position(idx.lines[edit_pos], raw.index('"targetId"') + 3))
        )
        assert on_target is not None and on_target.range.start.line == target_line
        on_parent = await c.lc.text_document_definition_async(
            lsp.DefinitionParams(ident, lsp.Position(idx.lines[edit_pos], 2))
        )
        assert on_parent is not None and on_parent.range.start.line == idx.lines[idx.by_id[edit["parentId"]]]
        a_idx = SessionIndex.open(str(agent))
        usage_line = a_idx.lines[a_idx.types.index("usage")]
        a_uri = _open(c, agent)
        hover = await c.lc.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(a_uri), lsp.Position(usage_line, 1))
        )
        assert hover is not None and "tokens: " in hover.contents.value and "cost: $" in hover.contents.value


async def test_diagnostics_for_context_edits_off_path_or_missing(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--p--"
    root.mkdir(parents=True)
    path = root / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "a", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "u2",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": "b", "timestamp": 2},
        },
        {
            "type": "context_edit",
            "id": "e1",
            "parentId": "u2",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "targetId": "u1",
            "replacement": None,
        },
        {
            "type": "context_edit",
            "id": "e2",
            "parentId": "e1",
            "timestamp": "2026-01-01T00:00:04.000Z",
            "targetId": "ghost",
            "replacement": None,
        },
        {
            "type": "context_edit",
            "id": "e3",
            "parentId": "e2",
            "timestamp": "2026-01-01T00:00:05.000Z",
            "targetId": "u2",
            "replacement": {"content": "B"},
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    async with server("--sessions-dir", str(tmp_path / "sessions"), "--state-dir", str(tmp_path / "state")) as c:
        uri = _open(c, path)
        for _ in range(200):
            if uri in c.lc.diagnostics:
                break
            await asyncio.sleep(0.02)
        found = {(d.range.start.line, d.code) for d in c.lc.diagnostics[uri]}
    assert found == {(3, "edit-target-off-path"), (4, "dangling-edit-target")}
