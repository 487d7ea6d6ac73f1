"""LSP features for the session files themselves: outline, diagnostics, hover, go to parent."""

from __future__ import annotations

import bisect

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from pi_server.live.session import LiveSession
from pi_server.server import errors
from pi_server.server.base import PiServer
from pi_server.server.rpc import lsp_feature
from pi_server.tree import titles
from pi_server.tree.paths import tree_diagnostics

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
}
_KIND = {
    "message": lsp.SymbolKind.String,
    "compaction": lsp.SymbolKind.Package,
    "branch_summary": lsp.SymbolKind.Namespace,
    "label": lsp.SymbolKind.Key,
}


def _line_range(line: int, length_chars: int = 0) -> lsp.Range:
    return lsp.Range(lsp.Position(line, 0), lsp.Position(line, length_chars))


async def _live_for(ls: PiServer, uri: str) -> LiveSession | None:
    path = to_fs_path(uri)
    if ls.registry is None or path is None or not path.endswith(".jsonl"):
        return None
    try:
        return await ls.core(ls.registry.get, path)
    except errors.PiError:
        return None


async def _publish(ls: PiServer, uri: str) -> None:
    live = await _live_for(ls, uri)
    if live is None:
        return
    ls.text_document_publish_diagnostics(
        lsp.PublishDiagnosticsParams(uri=uri, diagnostics=await ls.core(diagnostics, live))
    )


@lsp_feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: PiServer, p: lsp.DidOpenTextDocumentParams) -> None:
    """Diagnostics for a session file as it is opened."""
    await _publish(ls, p.text_document.uri)


@lsp_feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: PiServer, p: lsp.DidSaveTextDocumentParams) -> None:
    """Diagnostics again after a save."""
    await _publish(ls, p.text_document.uri)


@lsp_feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def document_symbol(ls: PiServer, p: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
    """The tree as an outline."""
    live = await _live_for(ls, p.text_document.uri)
    return [] if live is None else await ls.core(symbols, live)


@lsp_feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: PiServer, p: lsp.HoverParams) -> lsp.Hover | None:
    """What an entry line holds."""
    live = await _live_for(ls, p.text_document.uri)
    return None if live is None else await ls.core(hover_at, live, p.position.line)


@lsp_feature(lsp.TEXT_DOCUMENT_DEFINITION)
async def definition(ls: PiServer, p: lsp.DefinitionParams) -> lsp.Location | None:
    """Go to an entry's parent."""
    live = await _live_for(ls, p.text_document.uri)
    return None if live is None else await ls.core(parent_location, live, p.text_document.uri, p.position)


def diagnostics(live: LiveSession) -> list[lsp.Diagnostic]:
    idx = live.index
    found = list(idx.diagnostics) + tree_diagnostics(idx, live.outline.tree)
    return [
        lsp.Diagnostic(
            range=_line_range(d.line, d.length),
            message=d.message,
            severity=_SEVERITY[d.severity],
            code=d.code,
            source="pi-server",
        )
        for d in found
    ]


def symbols(live: LiveSession) -> list[lsp.DocumentSymbol]:
    """The tree outline: one symbol per entry, children nested under branch points."""
    idx = live.index
    lines = live.index.lines
    tree = live.outline.tree
    order, _ = live.outline.flat(live.index.by_id.get(live.leaf_id) if live.leaf_id else None)
    entries = idx.read_entries(order, light=True)
    title = {pos: titles.display_title(e, {}) or e.get("type", "entry") for pos, e in zip(order, entries, strict=True)}
    made: dict[int, lsp.DocumentSymbol] = {}
    roots: list[lsp.DocumentSymbol] = []
    container: dict[int, list] = {}  # where an entry's symbol goes: a chain stays at its level
    for pos in order:
        sym = lsp.DocumentSymbol(
            name=str(title[pos] or idx.types[pos] or "entry")[:120],
            detail=f"{idx.types[pos]} · {idx.ids[pos]}",
            kind=_KIND.get(idx.types[pos], lsp.SymbolKind.Event),
            range=_line_range(lines[pos]),
            selection_range=_line_range(lines[pos]),
            children=[],
        )
        made[pos] = sym
        parent = tree.parent[pos]
        if parent == -1:
            where = roots
        elif len(tree.children.get(parent, ())) > 1:
            where = sym_children(made[parent])
        else:
            where = container[parent]
        container[pos] = where
        where.append(sym)
    return roots


def sym_children(sym: lsp.DocumentSymbol) -> list:
    assert sym.children is not None
    return sym.children


def hover_at(live: LiveSession, line: int) -> lsp.Hover | None:
    idx = live.index
    lines = live.index.lines
    pos = bisect.bisect_left(lines, line)
    if pos >= len(lines) or lines[pos] != line:
        return None
    e = idx.read_entry(pos)
    msg = e.get("message") if isinstance(e.get("message"), dict) else {}
    parts = [f"**{e.get('type')}**" + (f" · {msg.get('role')}" if msg.get("role") else "") + f" · `{idx.ids[pos]}`"]
    parts.append(f"time: {e.get('timestamp')}")
    if msg.get("model"):
        parts.append(f"model: {msg.get('provider')}/{msg.get('model')}")
    usage = msg.get("usage")
    if isinstance(usage, dict) and "totalTokens" in usage:
        parts.append(f"tokens: {usage['totalTokens']}")
    label = idx.label_of(idx.ids[pos])
    if label:
        parts.append(f"label: {label}")
    text = titles.display_title(e, {})
    if text:
        parts.append("\n" + text[:500])
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n".join(parts)))


def parent_location(live: LiveSession, uri: str, position: lsp.Position) -> lsp.Location | None:
    idx = live.index
    lines = live.index.lines
    pos = bisect.bisect_left(lines, position.line)
    if pos >= len(lines) or lines[pos] != position.line:
        return None
    parent = idx.parents[pos]
    if parent is None or parent not in idx.by_id:
        return None
    target = lines[idx.by_id[parent]]
    return lsp.Location(uri=uri, range=_line_range(target))
