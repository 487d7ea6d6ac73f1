"""Tools that require strict sampling they cannot have: pi-ai 1.6.0 refuses the request before
sending it, with its own words; pi-server's turns fail the same way, and `pi/buildContext` /
`context --format anthropic` answer with that reason instead of a body pi would never send."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from conftest import run_oracle
from fake_anthropic import FakeAnthropic
from lsp_client import server
from test_server import expect_error

from pi_server.agent.stream import call_model, empty_message
from pi_server.llm.anthropic import request_body
from pi_server.llm.models import ANTHROPIC

KEY = "sk-ant-test-0123456789abcdef"
OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
SCHEMAS = [
    OBJ,  # strict-capable: sent strict
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
    {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}},
    {"type": "object", "properties": {"n": {"description": "untyped"}}},
    {"type": "object", "additionalProperties": True},
    {"type": "object", "properties": {"n": {"type": "array", "items": [{"type": "string"}]}}},
    {"type": "object", "properties": {"n": {"anyOf": [{"type": "object"}, {"type": "string"}]}}},
    {"type": "object", "properties": {"n": {"type": "string", "format": "color"}}},
    {"type": "string"},
]


def _tool(name: str, schema: dict[str, Any], strict: str) -> dict[str, Any]:
    sampling = {"type": "json_schema", "strict": strict}
    return {"name": name, "description": "d", "parameters": schema, "constrainedSampling": sampling}


def _cases() -> list[dict[str, Any]]:
    out = []
    for model in ("claude-sonnet-4-5", "claude-opus-5"):
        for n, schema in enumerate(SCHEMAS):
            for strict in ("require", "prefer"):
                out.append({"model": model, "tools": [_tool("fine", OBJ, "require"), _tool(f"t{n}", schema, strict)]})
    return out


def test_refusals_equal_pi16(monkeypatch) -> None:
    cases = _cases()
    with FakeAnthropic() as fake:
        pi = run_oracle("refused16.mjs", fake.url, cases, pi16=True)
        sent_by_pi = len(fake.requests)
        fake.requests.clear()

        async def emit(_: dict[str, Any]) -> None:
            pass

        async def ours() -> list[dict[str, Any]]:
            got = []
            for c in cases:
                llm = [
                    {"role": "system", "content": "You help.", "toolsAdded": c["tools"], "timestamp": 0},
                    {"role": "user", "content": "hi", "timestamp": 0},
                ]
                out = empty_message(c["model"])
                model = ANTHROPIC[c["model"]]
                await call_model(lambda m=model, x=llm: request_body(x, [None, None], m, "off")[0], KEY, out, emit)
                got.append({"model": c["model"], "stopReason": out["stopReason"], "error": out.get("errorMessage")})
            return got

        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        mine = asyncio.run(ours())
        assert len(fake.requests) == sent_by_pi  # the refused ones are not sent, by either
    assert mine == pi
    refused = [p for p in pi if p["error"]]
    assert len(refused) == 2 * (len(SCHEMAS) - 1), refused  # every unsupported schema, on both models
    assert refused[0]["error"].startswith('Tool "t1" requires JSON-schema constrained sampling, but minimum: 1')


async def test_build_context_says_why(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "p").mkdir(parents=True)
    f = root / "p" / "s.jsonl"
    tool = _tool("t1", SCHEMAS[1], "require")
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": str(tmp_path)},
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-12-01T00:00:01.000Z",
            "message": {"role": "system", "content": "You help.", "toolsAdded": [tool], "timestamp": 1},
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-12-01T00:00:02.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 2},
        },
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    async with server("--sessions-dir", str(root), "--state-dir", str(tmp_path / "state")) as c:
        llm = await c.call("pi/buildContext", {"session": str(f), "format": "llm"})
        assert [m["role"] for m in llm["messages"]] == ["system", "user"]
        err = await expect_error(c, "pi/buildContext", {"session": str(f), "format": "anthropic"}, -32602)
        assert 'Tool "t1" requires JSON-schema constrained sampling, but minimum: 1 is unsupported.' in err.message
        # the server goes on serving
        assert (await c.call("pi/buildContext", {"session": str(f), "format": "openai"}))["messages"]
