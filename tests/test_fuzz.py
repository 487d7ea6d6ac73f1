"""A small bounded fuzzer: mutated sessions never crash or hang pi-server, and where pi
opens a mutated file, the context equals pi's (lone surrogates included).

Files with fields of odd types (a `message` that is a number...) are only checked for
crashes and hangs: pi passes such values through into its context as they are, which
the context layer does not copy yet."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from conftest import run_oracle

from pi_server.context.build import build_context
from pi_server.llm.formats import context_result
from pi_server.store.index import NotASession, SessionIndex
from pi_server.tree.outline import Outline, get_tree

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
SEED = 14
CASES = 160


def _surrogate(line: str, rnd: random.Random) -> str:
    at = line.find('"text":"')
    if at < 0:
        return line
    at += len('"text":"') + rnd.randrange(0, 4)
    return line[:at] + rnd.choice(["\\ud83d", "\\ude00", "\\udfff\\ud800"]) + line[at:]


def _retype(line: str, rnd: random.Random) -> str:
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    if not isinstance(obj, dict):
        return line
    key = rnd.choice(["type", "id", "parentId", "message", "timestamp", "toolCallId"])
    obj[key] = rnd.choice([5, None, {"x": 1}, ["a"], "", True, 1.5])
    return json.dumps(obj)


def _reparent(lines: list[str], rnd: random.Random) -> None:
    """A new parent from an earlier line, or a missing one: never a cycle (pi's walk up a
    cycle never ends, so pi could not judge the file; cycles are in test_hostile)."""
    i = rnd.randrange(2, len(lines)) if len(lines) > 2 else 1
    try:
        obj = json.loads(lines[i])
        other = json.loads(lines[rnd.randrange(1, i)]) if i > 1 else {}
    except ValueError:
        return
    if isinstance(obj, dict) and isinstance(other, dict) and other.get("id") != obj.get("id"):
        obj["parentId"] = rnd.choice([other.get("id"), "ghost"])
        lines[i] = json.dumps(obj)


def mutate(lines: list[str], rnd: random.Random, odd_types: bool) -> bytes:
    lines = list(lines)
    for _ in range(rnd.randrange(1, 4)):
        kind = rnd.randrange(9)
        if kind == 4 and not odd_types:
            kind = 3
        i = rnd.randrange(1, len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rnd.randrange(1, i) if i > 1 else i])  # a copy after its original
        elif kind == 2:
            j = rnd.randrange(1, len(lines))
            lines[i], lines[j] = lines[j], lines[i]  # a child before its parent
        elif kind == 3:
            lines[i] = _surrogate(lines[i], rnd)
        elif kind == 4:
            lines[i] = _retype(lines[i], rnd)
        elif kind == 5:
            _reparent(lines, rnd)
        elif kind == 6:
            lines.insert(i, rnd.choice(["{", "[]", "null", '{"type":"message"}', "\x00\x00", '"s"', "{}"]))
        elif kind == 7:
            cut = rnd.randrange(len(lines[i]))
            lines[i] = lines[i][:cut]
        else:
            lines[i] = lines[i].replace('"', "'", 1)
        if len(lines) < 2:
            break
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    if rnd.random() < 0.1:
        data = data[: rnd.randrange(len(data))]  # a crash mid-line
    return data


def _exercise(path: str) -> dict[str, Any] | None:
    """Everything a client can ask of one file; returns the agent context, or None."""
    try:
        idx = SessionIndex.open(path)
    except NotASession:
        return None
    outline = Outline(idx)
    for filt in ("default", "no-tools", "user-only", "labeled-only", "all"):
        get_tree(outline, idx.last_id, filt)
    for pos in range(len(idx)):
        if idx.ids[pos] is not None:
            idx.read_entry(pos)
    for fmt in ("agent", "llm", "anthropic", "openai"):
        context_result(idx, None, before_first=False, fmt=fmt)
    ctx = build_context(idx, None)
    return {"messages": ctx.messages, "thinkingLevel": ctx.thinking_level, "entries": len(idx)}


def test_mutated_sessions(tmp_path: Path) -> None:
    rnd = random.Random(SEED)
    bases = [p.read_text().splitlines() for p in sorted(SAMPLES.rglob("*.jsonl"))]
    files, ours = [], []
    slowest = 0.0
    for n in range(CASES):
        f = tmp_path / f"m{n:03d}.jsonl"
        odd = n % 4 == 3  # fields of odd types: checked for crashes and hangs only (see below)
        f.write_bytes(mutate(rnd.choice(bases), rnd, odd))
        t = time.monotonic()
        mine = _exercise(str(f))  # a crash fails the test here
        ours.append(None if odd else mine)
        slowest = max(slowest, time.monotonic() - t)
        files.append(str(f))
    assert slowest < 5.0
    pis = run_oracle("open_many.mjs", files, timeout=120)
    compared = 0
    for f, mine, pi in zip(files, ours, pis, strict=True):
        if "error" in pi or mine is None:
            continue
        compared += 1
        assert mine["messages"] == pi["messages"], f
        assert mine["thinkingLevel"] == pi["thinkingLevel"], f
    assert compared >= CASES // 3
