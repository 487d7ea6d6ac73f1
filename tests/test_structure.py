"""The layering rule, read from the imports: each layer imports only from layers below it,
no import cycles, and no module or function grows past its size limit."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "pi_server"

# bottom first; packages on one rank may not import each other
RANK = {
    "jsutil": 0,
    "redact": 0,
    "rendezvous": 0,  # where a daemon listens: the standard library only
    "store": 1,
    "tree": 2,
    "fulltext": 2,  # the full-text index: store's entries, its own text rules
    "context": 3,
    "llm": 4,
    "summaries": 5,
    "live": 5,
    "agent": 6,
    "server": 7,
    "connector": 7,  # what editors start: relays to the daemon, imports none of the server
    "search_cli": 7.5,  # `pi-server search`: a client of the daemon, below the command line
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


def _facts(path: Path) -> tuple[set[str], list[tuple[str, int]]]:
    """(pi_server imports, (function, lines) pairs) of one module."""
    found: set[str] = set()
    funcs: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pi_server"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pi_server"))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            funcs.append((node.name, (node.end_lineno or node.lineno) - node.lineno + 1))
    return found, funcs


@functools.cache
def _report() -> dict[str, dict]:
    # parsed in a fresh interpreter: CPython 3.11's AST builder can fail with "recursion depth
    # mismatch" under the huge recursion limit conftest sets for pi's trees
    out = subprocess.run([sys.executable, __file__], check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)


def _imports(path: Path) -> set[str]:
    return set(_report()[str(path)]["imports"])


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
        facts = _report()[str(path)]
        if facts["lines"] > MAX_MODULE_LINES:
            too_big.append(f"{m}: {facts['lines']} lines")
        too_big += [f"{m}.{name}: {n} lines" for name, n in facts["functions"] if n > MAX_FUNCTION_LINES]
    assert too_big == []


if __name__ == "__main__":
    report = {}
    for _m, _p in _modules().items():
        _imp, _funcs = _facts(_p)
        report[str(_p)] = {"imports": sorted(_imp), "functions": _funcs, "lines": len(_p.read_text().splitlines())}
    print(json.dumps(report))
