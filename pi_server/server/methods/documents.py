"""LSP features for the session files themselves: outline, diagnostics, hover, go to parent or target."""

from __future__ import annotations

import bisect
import time
from collections.abc import Generator
from functools import partial
from typing import Any

from lsprotocol import types as lsp

from pi_server.live.registry import STEP_S
from pi_server.live.session import LiveSession
from pi_server.server import errors, offcore, wire
from pi_server.server.base import PiServer
from pi_server.server.rpc import lsp_feature
from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.store.names import from_wire
from pi_server.store.records import F_ASSISTANT_TEXT
from pi_server.tree import titles
from pi_server.tree.paths import tree_diagnostics

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
}
# one kind per entry (and message role), so outline clients group them sensibly
_KIND = {
    et.COMPACTION: lsp.SymbolKind.Package,
    et.BRANCH_SUMMARY: lsp.SymbolKind.Namespace,
    et.LABEL: lsp.SymbolKind.Key,
    et.CONTEXT_EDIT: lsp.SymbolKind.Operator,
    et.USAGE: lsp.SymbolKind.Number,
    et.MODEL_CHANGE: lsp.SymbolKind.Property,
    et.THINKING_LEVEL_CHANGE: lsp.SymbolKind.Property,
    et.SESSION_INFO: lsp.SymbolKind.Constant,
    et.CUSTOM_MESSAGE: lsp.SymbolKind.Object,
    et.CUSTOM: lsp.SymbolKind.Struct,
}
_ROLE_KIND = {
    "user": lsp.SymbolKind.Event,
    "assistant": lsp.SymbolKind.Method,
    "toolResult": lsp.SymbolKind.Field,
    "system": lsp.SymbolKind.Module,
    "bashExecution": lsp.SymbolKind.Function,
    "custom": lsp.SymbolKind.Object,
    "branchSummary": lsp.SymbolKind.Namespace,
    "compactionSummary": lsp.SymbolKind.Package,
}


def _kind(etype: str, role: str | None) -> lsp.SymbolKind:
    if etype == et.MESSAGE:
        return _ROLE_KIND.get(role or "", lsp.SymbolKind.String)
    return _KIND.get(etype, lsp.SymbolKind.Event)


def _line_range(line: int, length_chars: int = 0) -> lsp.Range:
    return lsp.Range(lsp.Position(line, 0), lsp.Position(line, length_chars))


async def _live_for(ls: PiServer, uri: str) -> LiveSession | None:
    path = from_wire(uri) if uri.startswith("file:") else None  # byte for byte: names not UTF-8 too
    if ls.registry is None or path is None or path.startswith("file:") or not path.endswith(".jsonl"):
        return None
    try:
        async with offcore.held(ls, path):  # a large session: read off the core worker
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
async def document_symbol(ls: PiServer, p: lsp.DocumentSymbolParams) -> list[dict[str, Any]] | wire.Encoded:
    """The tree as an outline."""
    live = await _live_for(ls, p.text_document.uri)
    if live is None:
        return []
    # in steps: a hub of 50,000 children or a 10,000-symbol outline never holds the worker;
    # encoded by msgspec, as the pi/* answers are (pygls's converter took seconds on 10,000,
    # on the event loop every other request waits on)
    # (this session object, not the registry's again: a large one may have been dropped meanwhile)
    return wire.encode(await ls.core_steps(partial(_symbols, live)))


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


# Branches nest at most this deep; deeper branch points keep their children at the deepest
# level (side by side, as a chain), so editors never walk (or render) thousands of levels.
MAX_SYMBOL_DEPTH = 64
# At most this many symbols, the first in /tree order (the active branch first): an outline
# of more is not read by anyone, and its cost grows with it (20,000 symbols: ~1 s to build).
MAX_SYMBOLS = 10_000
SYMBOL_CHUNK = 200  # entries titled per read of the file


def _symbols(live: LiveSession) -> Generator[None, None, list[dict[str, Any]]]:
    """The tree outline: one symbol per entry, children nested under branch points.

    Plain LSP `DocumentSymbol` JSON (no per-field validation: 20,000 entries cost ~0.3 s),
    built in one pass over the pre-order, nesting capped at `MAX_SYMBOL_DEPTH`, at most
    `MAX_SYMBOLS` of them; linear in them (a branch point's children are not listed per
    child). Positions stay valid between steps: a file only grows, or is a new index."""
    idx = live.index
    lines, types, ids, roles = idx.lines, idx.types, idx.ids, idx.roles
    tree = live.outline.tree
    order, _ = live.outline.flat(idx.by_id.get(live.leaf_id) if live.leaf_id else None)
    order = order[:MAX_SYMBOLS]  # a pre-order: every kept entry's parent is kept
    made: dict[int, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    # where an entry's symbol goes and at what depth: a chain stays at its parent's level
    container: dict[int, tuple[list, int]] = {}
    t0 = time.monotonic()
    for start in range(0, len(order), SYMBOL_CHUNK):
        chunk = order[start : start + SYMBOL_CHUNK]
        title = outline_titles(idx, chunk)
        for pos in chunk:
            rng = {"start": {"line": lines[pos], "character": 0}, "end": {"line": lines[pos], "character": 0}}
            sym = {
                "name": str(title[pos] or types[pos] or "entry")[:120],
                "detail": f"{types[pos]} · {ids[pos]}",
                "kind": _kind(types[pos], roles[pos]).value,
                "range": rng,
                "selectionRange": rng,
                "children": [],
            }
            made[pos] = sym
            parent = tree.parent[pos]
            if parent == -1:
                where = (roots, 0)
            else:
                up, depth = container[parent]
                if tree.children.several(parent) and depth < MAX_SYMBOL_DEPTH:
                    where = (made[parent]["children"], depth + 1)
                else:
                    where = (up, depth)
            container[pos] = where
            where[0].append(sym)
        if time.monotonic() - t0 > STEP_S:
            yield
            t0 = time.monotonic()
    return roots


def outline_titles(idx: SessionIndex, order: list[int]) -> dict[int, str]:
    """pi's /tree titles, with names for what /tree leaves blank: a usage entry, and an
    assistant message that only calls tools (named by its calls)."""
    entries = idx.read_entries(order, light=True)
    out = {pos: titles.display_title(e, {}) for pos, e in zip(order, entries, strict=True)}
    for pos, e in zip(order, entries, strict=True):
        if idx.types[pos] == et.USAGE:
            out[pos] = f"[usage: {e.get('kind', 'usage')}]"
    calls_only = [p for p in order if idx.roles[p] == "assistant" and not idx.flags[p] & F_ASSISTANT_TEXT]
    for pos, e in zip(calls_only, idx.read_entries(calls_only), strict=True):
        calls = [b for b in _blocks(e) if b.get("type") == "toolCall"]
        if calls:
            out[pos] = "assistant: " + " ".join(titles.tool_call_title(b.get("name"), b.get("arguments")) for b in calls)
    return {pos: t or idx.types[pos] or "entry" for pos, t in out.items()}


def _blocks(e: dict[str, Any]) -> list[dict[str, Any]]:
    m = e.get("message")
    content = m.get("content") if isinstance(m, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _pos_at(live: LiveSession, line: int) -> int | None:
    lines = live.index.lines
    pos = bisect.bisect_left(lines, line)
    return pos if pos < len(lines) and lines[pos] == line else None


def hover_at(live: LiveSession, line: int) -> lsp.Hover | None:
    """The entry on a line: kind, id, time, model, tokens, label, title; a context edit names its
    target, a usage entry its tokens and cost."""
    idx = live.index
    pos = _pos_at(live, line)
    if pos is None:
        return None
    e = idx.read_entry(pos)
    msg = e.get("message") if isinstance(e.get("message"), dict) else {}
    parts = [f"**{e.get('type')}**" + (f" · {msg.get('role')}" if msg.get("role") else "") + f" · `{idx.ids[pos]}`"]
    parts.append(f"time: {e.get('timestamp')}")
    if msg.get("model"):
        parts.append(f"model: {msg.get('provider')}/{msg.get('model')}")
    parts += _usage_lines(msg.get("usage") if msg else e.get("usage") if e.get("type") == et.USAGE else None)
    label = idx.label_of(idx.ids[pos])
    if label:
        parts.append(f"label: {label}")
    if e.get("type") == et.CONTEXT_EDIT:
        parts.append(_edit_line(idx, e))
    text = outline_titles(idx, [pos])[pos] if e.get("type") != et.CONTEXT_EDIT else ""
    if text:
        parts.append("\n" + text[:500])
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n".join(parts)))


def _usage_lines(usage: Any) -> list[str]:
    if not isinstance(usage, dict):
        return []
    out = []
    if "totalTokens" in usage:
        out.append(f"tokens: {usage['totalTokens']}")
    cost = usage.get("cost")
    if isinstance(cost, dict) and isinstance(cost.get("total"), int | float):
        out.append(f"cost: ${cost['total']:.4f}")
    return out


def _edit_line(idx: SessionIndex, e: dict[str, Any]) -> str:
    target = e.get("targetId")
    what = "omits" if e.get("replacement") is None else "replaces the content of"
    tpos = idx.by_id.get(target) if isinstance(target, str) else None
    if tpos is None:
        return f"{what} `{target}` (not in this file)"
    return f"{what} `{target}`: {outline_titles(idx, [tpos])[tpos][:200]}"


def parent_location(live: LiveSession, uri: str, position: lsp.Position) -> lsp.Location | None:
    """Go to definition: on a label's or context edit's `targetId`, its target; elsewhere the parent."""
    idx = live.index
    pos = _pos_at(live, position.line)
    if pos is None:
        return None
    ref = idx.parents[pos]
    if idx.types[pos] in (et.LABEL, et.CONTEXT_EDIT):
        e = idx.read_entry(pos)
        raw = idx.read_raw(pos).decode("utf-8", "replace")
        at = raw.find('"targetId"')
        if at >= 0 and position.character >= at and isinstance(e.get("targetId"), str):
            ref = e["targetId"]
    if ref is None or ref not in idx.by_id:
        return None
    return lsp.Location(uri=uri, range=_line_range(idx.lines[idx.by_id[ref]]))
