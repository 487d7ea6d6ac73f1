"""The outline of a session file: each entry a kind an editor can group by, tool-only replies named by their calls."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsp_client import server
from lsprotocol import types as lsp

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"


async def test_outline_kinds_and_tool_call_titles(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    shop = next(root.rglob("*01a22bae*.jsonl"))
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        uri = shop.as_uri()
        c.lc.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=shop.read_text())
            )
        )
        syms = await c.lc.text_document_document_symbol_async(lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri)))

        def flat(items: list[lsp.DocumentSymbol]) -> list[lsp.DocumentSymbol]:
            return [x for s in items for x in (s, *flat(s.children or []))]

        every = flat(syms)
        kinds = {s.name.split(":")[0]: s.kind for s in every if s.name.startswith(("user:", "assistant:"))}
        assert kinds == {"user": lsp.SymbolKind.Event, "assistant": lsp.SymbolKind.Method}
        assert lsp.SymbolKind.String not in {s.kind for s in every}
        assert len({s.kind for s in every}) >= 5
        names = [s.name for s in every]
        assert "assistant: (no content)" not in names
        assert any(n.startswith("assistant: [read: ") for n in names), names
        line = next(s.range.start.line for s in every if s.name.startswith("assistant: [read: "))
        hover = await c.lc.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, 3))
        )
        assert hover is not None and "assistant: [read: " in hover.contents.value
