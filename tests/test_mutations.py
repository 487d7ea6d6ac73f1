"""Every field of every entry type (and the header) set to a value of every JSON type: every
method answers within 5 s with a result or a documented error, never -32603; where pi 1.6.0
opens the file, the entries, the context and the tree are pi's.

One real pi-server serves all the mutated files. The cross product field × kind is run in
full, packed: a file mutates one field on each of many lines (one mutation a line), so each
(field, kind) pair is in exactly one file. The seed corpus (tests/fixtures/mutations/corpus.json)
is replayed next, then hypothesis explores combinations of mutations in one file.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_client import Client, server
from lsprotocol import types as lsp
from mutations import CORPUS, KINDS, base_lines, fields, mutate, raw_value
from pygls.exceptions import JsonRpcException

LIMIT = 5.0
DOCUMENTED = {-32001, -32002, -32003, -32004, -32005, -32006, -32007, -32602}
FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")
FORMATS = ("agent", "llm", "anthropic", "openai")
LEAVES = ("a609509f", "b972506c", "63829035")  # tips and pre-compaction leaves of the base tree
Mut = tuple[int, tuple[Any, ...], str, int]


class Run:
    """Calls against one server, each timed and judged: a failure is -32603, another
    undocumented error, or no answer within LIMIT."""

    def __init__(self, c: Client) -> None:
        self.c = c
        self.failures: list[str] = []
        self.calls = 0
        self.slowest = (0.0, "")

    async def _timed(self, what: str, coro: Any) -> Any:
        self.calls += 1
        t = time.monotonic()
        task = asyncio.ensure_future(coro)
        # not cancelled on a timeout: the client cannot take an answer to a cancelled request
        await asyncio.wait({task}, timeout=LIMIT)
        took = time.monotonic() - t
        if took > self.slowest[0]:
            self.slowest = (took, what)
        if not task.done():
            self.failures.append(f"{what}: no answer within {LIMIT} s")
            await asyncio.wait({task})
        try:
            return task.result()
        except JsonRpcException as e:
            if e.code not in DOCUMENTED:
                self.failures.append(f"{what}: {e.code} {str(e)[:300]}")
            return None

    async def call(self, where: str, method: str, params: dict[str, Any]) -> Any:
        extra = {k: v for k, v in params.items() if k != "session"}
        return await self._timed(
            f"{where} {method} {json.dumps(extra)[:120]}", self.c.lc.protocol.send_request_async(method, params)
        )

    async def exercise(self, where: str, path: Path, lines: list[int]) -> None:
        """Every method on one file; `lines` are the mutated lines (their entries are aimed at)."""
        s = str(path)
        ids = _ids_at(path, lines)
        session = await self.call(where, "pi/getTree", {"session": s}) is not None
        for filt in FILTERS:
            await self.call(where, "pi/getTree", {"session": s, "filter": filt})
        await self.call(where, "pi/getTree", {"session": s, "filter": "all", "search": "a t"})
        for fmt in FORMATS:
            await self.call(where, "pi/buildContext", {"session": s, "format": fmt})
        for leaf in (*LEAVES, *ids[:1]):  # contexts that hold the entries the default leaf's does not
            for fmt in ("agent", "anthropic"):
                await self.call(where, "pi/buildContext", {"session": s, "format": fmt, "leafId": leaf})
            await self.call(where, "pi/getSessionStats", {"session": s, "leafId": leaf})
        for eid in ids:
            await self.call(where, "pi/getEntry", {"session": s, "id": eid})
        await self.call(where, "pi/getSessionStats", {"session": s})
        await self.call(where, "pi/getContextEdits", {"session": s})
        await self._documents(where, path, lines, session)
        target = ids[0] if ids else "37bf706a"
        await self.call(where, "pi/summarizeBranch", {"session": s, "targetId": "37bf706a"})
        await self.call(where, "pi/summarizeBranch", {"session": s, "targetId": target, "fromId": "b972506c"})
        await self.call(where, "pi/switchBranch", {"session": s, "targetId": target})
        await self.call(where, "pi/compact", {"session": s})
        await self.call(where, "pi/setLabel", {"session": s, "targetId": target, "label": "m"})
        await self.call(where, "pi/switchBranch", {"session": s, "targetId": "b972506c", "summarize": True})

    async def _documents(self, where: str, path: Path, lines: list[int], session: bool) -> None:
        """Outline, hover on the mutated lines, and the diagnostics published on open (for a
        file that is a session: others get none)."""
        uri = path.as_uri()
        ident = lsp.TextDocumentIdentifier(uri)
        self.c.lc.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "jsonl", 1, path.read_text(errors="replace")))
        )
        await self._timed(
            f"{where} documentSymbol", self.c.lc.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))
        )
        for line in lines[:4]:
            await self._timed(
                f"{where} hover line {line}",
                self.c.lc.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(line, 3))),
            )
        if session:
            await self._timed(f"{where} diagnostics", _diagnostics(self.c, uri))
        self.c.lc.text_document_did_close(lsp.DidCloseTextDocumentParams(ident))


async def _diagnostics(c: Client, uri: str) -> None:
    while uri not in c.lc.diagnostics:
        await asyncio.sleep(0.005)
    c.lc.diagnostics.pop(uri)


def _ids_at(path: Path, lines: list[int]) -> list[str]:
    """The string ids of the entries on the mutated lines (as written, before any write)."""
    out = []
    with open(path, "rb") as f:
        all_lines = f.read().split(b"\n")
    for n in lines:
        head = all_lines[n][:400].decode(errors="replace")
        at = head.find('"id":"')
        if n and at >= 0:
            out.append(head[at + 6 : head.index('"', at + 6)])
    return out


def packed() -> list[tuple[str, list[Mut]]]:
    """The cross product field × kind, a file per (kind, round): round r mutates the r-th field
    of every line that has one. Header fields get files of their own (a bad header makes the
    file no session at all, which would hide the other mutations)."""
    by_line: dict[int, list[tuple[Any, ...]]] = {}
    for n, p in fields():
        by_line.setdefault(n, []).append(p)
    out: list[tuple[str, list[Mut]]] = []
    for kind in KINDS:
        for p in by_line.pop(0, []) if kind == KINDS[0] else []:
            out += [(f"header-{'.'.join(map(str, p))}-{k}", [(0, p, k, 0)]) for k in KINDS]
        rounds = max(len(v) for n, v in by_line.items() if n)
        for r in range(rounds):
            muts = [(n, ps[r], kind, r) for n, ps in sorted(by_line.items()) if n and r < len(ps)]
            out.append((f"{kind}-{r}", muts))
    return out


def _write(root: Path, name: str, muts: list[Mut]) -> Path:
    d = root / f"--{name}--"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "s.jsonl"
    path.write_text(mutate(base_lines(), muts), errors="surrogatepass")
    return path


def _args(tmp: Path) -> list[str]:
    return ["--sessions-dir", str(tmp / "sessions"), "--state-dir", str(tmp / "state")]


def _env(tmp: Path) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "", "PI_CODING_AGENT_DIR": str(tmp / "agent"), "PI_SERVER_WORKERS": "0"}


async def _compare_with_pi(c: Client, files: list[Path]) -> tuple[int, list[str]]:
    """pi 1.6.0's entries, context and tree against ours, on files pi opens."""
    listing = files[0].parent.parent.parent / "pi-files.json"
    listing.write_text(json.dumps([str(f) for f in files]))
    pis = run_oracle("open_many16.mjs", str(listing), pi16=True, timeout=300)
    compared, bad = 0, []
    for f, pi in zip(files, pis, strict=True):
        if "error" in pi:
            continue
        compared += 1
        s = str(f)
        ctx = await c.call("pi/buildContext", {"session": s})
        got = (ctx["leafId"], ctx["messages"], ctx["thinkingLevel"], ctx["model"])
        if got != (pi["leafId"], pi["messages"], pi["thinkingLevel"], pi["model"]):
            bad.append(f"{f.parent.name}: context")
        by_id = {e["id"]: e for e in pi["entryObjects"] if isinstance(e.get("id"), str)}  # the later wins
        for entry in by_id.values():
            if (await c.call("pi/getEntry", {"session": s, "id": entry["id"]}))["entry"] != entry:
                bad.append(f"{f.parent.name}: entry {entry['id']}")
        rows = (await c.call("pi/getTree", {"session": s, "filter": "all", "limit": 10_000}))["rows"]
        # pi's tree parent of each entry; a row whose parent is shown must hang under it (entries
        # whose id is no string, or not unique, are not compared: pi-server names those rows itself)
        ids = [n["id"] for n in pi["tree"] if isinstance(n["id"], str)]
        unique = {i for i in ids if ids.count(i) == 1}
        parent = {
            c: n["id"] for n in pi["tree"] for c in n["children"] if isinstance(c, str) and isinstance(n["id"], str)
        }
        parent = {c: p for c, p in parent.items() if c in unique and p in unique}
        shown = {r["id"] for r in rows if r["id"] in unique}
        if any(
            r["id"] in parent and parent[r["id"]] in shown and r["visibleParentId"] != parent[r["id"]] for r in rows
        ):
            bad.append(f"{f.parent.name}: tree")
        compared_rows = len(shown)
        assert compared_rows or not unique, f.parent.name
    return compared, bad


def _exact(name: str, muts: list[Mut]) -> bool:
    return not name.startswith("header") and not any(
        k == "number" and raw_value(k, v).lstrip("-").isdigit() and abs(int(raw_value(k, v))) > 2**53
        for _, _, k, v in muts
    )


async def test_every_field_every_kind(tmp_path: Path) -> None:
    cases = packed()
    made = [(name, _write(tmp_path / "sessions", name, muts), sorted({m[0] for m in muts})) for name, muts in cases]
    huge = _write(tmp_path / "sessions", "huge-string", [(4, ("message", "content", 0, "text"), "huge", 0)])
    made.append(("huge-string", huge, [4]))
    pairs = sum(len(m) for _, m in cases)
    assert pairs == len(fields()) * len(KINDS)
    async with server(*_args(tmp_path), env=_env(tmp_path)) as c:
        run = Run(c)
        # every 7th file; not those with an integer past 2**53, which JSON.parse rounds to a double
        # and pi-server keeps exact (a known difference, left to the number handling)
        sample = [p for (name, muts), (_, p, _) in list(zip(cases, made, strict=False))[::7] if _exact(name, muts)]
        compared, bad = await _compare_with_pi(c, sample)  # before any write
        t = time.monotonic()
        for name, path, lines in made:
            await run.exercise(name, path, lines)
        for params in ({}, {"query": "tree depth"}):
            await run.call("store", "pi/listSessions", params)
        took = time.monotonic() - t
    print(
        f"\nmutations: {pairs} field×kind pairs in {len(made)} files, {run.calls} calls in {took:.1f} s,"
        f" slowest {run.slowest[0]:.2f} s ({run.slowest[1]}); compared with pi: {compared}/{len(sample)} files"
    )
    assert not run.failures, run.failures[:20]
    assert not bad, bad[:20]
    assert compared >= len(sample) // 2


class Served:
    """A server on an event loop of its own thread, for hypothesis's synchronous examples."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.tmp = tmp
        self.ctx = server(*_args(tmp), env=_env(tmp))
        self.run = Run(self.sync(self.ctx.__aenter__()))

    def sync(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(600)

    def close(self) -> None:
        self.sync(self.ctx.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("mutations"))
    yield s
    s.close()


FIELDS = fields()
mutation = st.tuples(
    st.sampled_from(FIELDS), st.sampled_from([k for k in KINDS if k != "deep"] * 3 + ["deep"]), st.integers(0, 4)
).map(lambda t: (t[0][0], t[0][1], t[1], t[2]))
_count = iter(range(1_000_000))


def _one(served: Served, muts: list[Mut], where: str) -> None:
    path = _write(served.tmp / "sessions", f"{where}-{next(_count)}", muts)
    served.sync(served.run.exercise(where, path, sorted({m[0] for m in muts})))
    assert not served.run.failures, (muts, served.run.failures[:10])


def test_seed_corpus(served: Served) -> None:
    """The combinations kept from earlier runs, replayed before anything new is tried."""
    for case in json.loads(CORPUS.read_text()):
        _one(served, [(n, tuple(p), k, v) for n, p, k, v in case["mutations"]], "corpus")


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(mutation, min_size=1, max_size=6))
def test_combined_mutations(served: Served, muts: list[Mut]) -> None:
    _one(served, muts, "explore")
