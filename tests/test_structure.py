"""The layering rule, read from the imports: each layer imports only from layers below it,
no import cycles, and no module or function grows past its size limit."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "pi_server"

# bottom first; packages on one rank may not import each other
RANK = {
    "jsutil": 0,
    "store": 1,
    "tree": 2,
    "context": 3,
    "llm": 4,
    "summaries": 5,
    "live": 5,
    "agent": 6,
    "server": 7,
    "cli": 8,
    "__main__": 9,
}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join(["pi_server", *parts])] = path
    return out


def _parse(text: str) -> ast.Module:
    # CPython 3.11's AST builder trips over the huge recursion limit conftest sets for pi's trees
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        return ast.parse(text)
    finally:
        sys.setrecursionlimit(limit)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(_parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pi_server"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pi_server"))
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {i for i in _imports(p) if i in mods and i != m} for m, p in mods.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_has_a_layer() -> None:
    for m in _modules():
        layer = _layer(m)
        assert layer is None or layer in RANK, f"{m}: no layer for {layer!r}"


def test_imports_only_run_down() -> None:
    wrong = []
    for m, deps in _graph().items():
        here = _layer(m)
        if here is None:
            continue
        for d in deps:
            there = _layer(d)
            if there is None or there == here:
                continue
            if RANK[there] >= RANK[here]:
                wrong.append(f"{m} -> {d}")
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_sizes() -> None:
    too_big = []
    for m, path in _modules().items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_big.append(f"{m}: {len(text.splitlines())} lines")
        for node in ast.walk(_parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_big.append(f"{m}.{node.name}: {n} lines")
    assert too_big == []
