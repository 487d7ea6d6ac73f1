"""pi/buildContext's "agent" answer carries messages as the file's own bytes: over the wire it
still says what pi 1.6.0 says, for lines that cannot be carried as they are too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import _have_pi16, run_oracle

from pi_server.context.build import build_context
from pi_server.llm.formats import context_result
from pi_server.server.wire import encode
from pi_server.store.index import SessionIndex

pytestmark = pytest.mark.skipif(not _have_pi16(), reason="pi 1.6.0 not installed")

TS = '"timestamp":"2025-01-07T08:02:42.000Z"'


def _entry(eid: str, parent: str | None, body: str) -> bytes:
    p = "null" if parent is None else f'"{parent}"'
    return f'{{"type":"message","id":"{eid}","parentId":{p},{TS},"message":{body}}}'.encode()


LINES: list[bytes] = [
    f'{{"type":"session","version":3,"id":"s1",{TS},"cwd":"/x"}}'.encode(),
    f'{{"type":"model_change","id":"a0","parentId":null,{TS},"provider":"anthropic","modelId":"m\\ud83d"}}'.encode(),
    # a lone surrogate, as pi writes a string cut in UTF-16 units
    _entry("a1", "a0", '{"role":"user","content":"hi \\ud83d there","timestamp":1}'),
    _entry("a2", "a1", '{"role":"system","content":"sys \\udc00","timestamp":1}'),
    _entry("a3", "a2", '{"role":"assistant","content":null,"timestamp":1}'),  # pi normalizes it
    # bytes that are not UTF-8 (pi reads them as U+FFFD) beside a 4-byte character
    b'{"type":"message","id":"a4","parentId":"a3",' + TS.encode() + b',"message":{"role":"user",'
    b'"content":[{"type":"text","text":"bad \xff\xfe utf8 \xf0\x9f\x98\x80"}],"timestamp":1}}',
    _entry(
        "a5",
        "a4",
        '{"role":"assistant","content":[{"type":"text","text":"caf\\u00e9 \\ud83d\\ude00"},'
        '{"type":"toolCall","id":"t","name":"n","arguments":{"x":100.0,"y":1e21,"w":0.000001,"v":[1,2.5],"z":"\\ud83d"}}],'
        '"provider":"p","model":"q","stopReason":"toolUse","timestamp":1}',
    ),
    # written by hand, not by JSON.stringify: spaces, a null field
    _entry("a6", "a5", '{ "role" : "toolResult", "content" : [ {"type": "text", "text": "spaced"} ], '
           '"toolCallId": "t", "timestamp": 1, "details": null }'),
    f'{{"type":"context_edit","id":"a7","parentId":"a6",{TS},"targetId":"a1","replacement":{{"content":"edited"}}}}'.encode(),
]


def _wire(res: dict[str, Any]) -> dict[str, Any]:
    return json.loads(encode(res).data)


@pytest.mark.parametrize("leaf", ["a7", "a6", "a5", "a3", "a1"])
def test_agent_answer_is_pis(tmp_path: Path, leaf: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(LINES) + b"\n")
    idx = SessionIndex.open(str(path))
    res = context_result(idx, leaf)
    assert all(type(m) is msgspec.Raw for m in res["messages"])
    ours = _wire(res)
    pi = run_oracle("context16.mjs", str(path), {"leaf": leaf, "filters": [], "models": [], "openai": False}, pi16=True)
    assert ours["messages"] == pi["agent"]
    assert ours["tokens"] == pi["tokens"]
    assert (ours["model"], ours["thinkingLevel"]) == (pi["model"], pi["thinkingLevel"])
    # the parsed build says the same (the other formats start from it)
    assert json.loads(json.dumps(build_context(idx, leaf).messages)) == ours["messages"]
    # and a second, warm answer is the same bytes
    assert encode(context_result(idx, leaf)).data == encode(res).data
