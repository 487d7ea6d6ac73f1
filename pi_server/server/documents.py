"""LSP features for the session files themselves: outline, diagnostics, hover, go to parent."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from pi_server.live.sessions import LiveSession
from pi_server.server import errors
from pi_server.server.app import PiServer
from pi_server.tree import titles
from pi_server.tree.paths import tree_diagnostics

_PARENT = re.compile(r'"parentId"\s*:\s*"([^"]+)"')
_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
}
# outline kinds, so that an editor groups entries by what they are (Emacs imenu groups by kind)
_KIND = {
    "compaction": lsp.SymbolKind.Package,
    "branch_summary": lsp.SymbolKind.Namespace,
    "label": lsp.SymbolKind.Key,
    "model_change": lsp.SymbolKind.Property,
    "thinking_level_change": lsp.SymbolKind.Property,
    "session_info": lsp.SymbolKind.Constant,
    "custom": lsp.SymbolKind.Object,
    "custom_message": lsp.SymbolKind.Struct,
}
_ROLE_KIND = {
    "user": lsp.SymbolKind.Event,
    "assistant": lsp.SymbolKind.Method,
    "toolResult": lsp.SymbolKind.Function,
    "bashExecution": lsp.SymbolKind.Operator,
}
_NO_CONTENT = "assistant: (no content)"


def symbol_kind(entry_type: str | None, role: object) -> lsp.SymbolKind:
    if entry_type == "message":
        return _ROLE_KIND.get(role if isinstance(role, str) else "", lsp.SymbolKind.Struct)
    return _KIND.get(entry_type or "", lsp.SymbolKind.Object)


def entry_title(entry: dict, full: Callable[[], dict]) -> str:
    """pi's display text; an assistant message that only calls tools is named by its calls."""
    text = titles.display_title(entry, {})
    if text != _NO_CONTENT:
        return text
    content = full().get("message", {}).get("content")
    calls = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"] if isinstance(content, list) else []
    )
    return (
        "assistant: " + " ".join(titles.tool_call_title(b.get("name"), b.get("arguments")) for b in calls)
        if calls
        else text
    )


def _line_range(line: int, length_chars: int = 0) -> lsp.Range:
    return lsp.Range(lsp.Position(line, 0), lsp.Position(line, length_chars))


def line_numbers(live: LiveSession) -> list[int]:
    """Physical line of every entry, counted once per index generation."""
    idx = live.index
    cached = getattr(live, "_lines", None)
    if cached is not None and cached[0] == idx.generation:
        return cached[1]
    with open(idx.path, "rb") as f:
        data = f.read(idx.size)
    out: list[int] = []
    line = 0
    pos = 0
    for off in idx.offsets:
        line += data.count(b"\n", pos, off)
        pos = off
        out.append(line)
    live._lines = (idx.generation, out)  # type: ignore[attr-defined]
    return out


def register(server: PiServer) -> None:
    async def live_for(ls: PiServer, uri: str) -> LiveSession | None:
        path = to_fs_path(uri)
        if ls.registry is None or path is None or not path.endswith(".jsonl"):
            return None
        try:
            return await ls.core(ls.registry.get, path)
        except errors.PiError:
            return None

    async def publish(ls: PiServer, uri: str) -> None:
        live = await live_for(ls, uri)
        if live is None:
            return
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=await ls.core(diagnostics, live))
        )

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: PiServer, p: lsp.DidOpenTextDocumentParams) -> None:
        await publish(ls, p.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: PiServer, p: lsp.DidSaveTextDocumentParams) -> None:
        await publish(ls, p.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls: PiServer, p: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        live = await live_for(ls, p.text_document.uri)
        return [] if live is None else await ls.core(symbols, live)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: PiServer, p: lsp.HoverParams) -> lsp.Hover | None:
        live = await live_for(ls, p.text_document.uri)
        return None if live is None else await ls.core(hover_at, live, p.position.line)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: PiServer, p: lsp.DefinitionParams) -> lsp.Location | None:
        live = await live_for(ls, p.text_document.uri)
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
    lines = line_numbers(live)
    tree = live.outline.tree
    order, _ = live.outline.flat(live.index.by_id.get(live.leaf_id) if live.leaf_id else None)
    entries = idx.read_entries(order, light=True)
    light = dict(zip(order, entries, strict=True))
    title = {pos: entry_title(e, lambda p=pos: idx.read_entry(p)) or e.get("type", "entry") for pos, e in light.items()}
    made: dict[int, lsp.DocumentSymbol] = {}
    roots: list[lsp.DocumentSymbol] = []
    container: dict[int, list] = {}  # where an entry's symbol goes: a chain stays at its level
    for pos in order:
        sym = lsp.DocumentSymbol(
            name=(title[pos] or idx.types[pos] or "entry")[:120],
            detail=f"{idx.types[pos]} · {idx.ids[pos]}",
            kind=symbol_kind(idx.types[pos], (light[pos].get("message") or {}).get("role")),
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
    lines = line_numbers(live)
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
    text = entry_title(e, lambda: e)
    if text:
        parts.append("\n" + text[:500])
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n".join(parts)))


def parent_location(live: LiveSession, uri: str, position: lsp.Position) -> lsp.Location | None:
    idx = live.index
    lines = line_numbers(live)
    pos = bisect.bisect_left(lines, position.line)
    if pos >= len(lines) or lines[pos] != position.line:
        return None
    with open(idx.path, "rb") as f:
        f.seek(idx.offsets[pos])
        raw = f.read(idx.lengths[pos]).decode("utf-8", "replace")
    m = _PARENT.search(raw)
    parent = m.group(1) if m else idx.parents[pos]
    if parent is None or parent not in idx.by_id:
        return None
    target = lines[idx.by_id[parent]]
    return lsp.Location(uri=uri, range=_line_range(target))
