"""The server's pi/getTree and pi/buildContext equal pi's own answers (the oracle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import load_json
from lsp_client import server


async def test_server_answers_equal_pi(oracle: dict[str, Any], pi16_answers, tmp_path: Path) -> None:
    files = [f for f in oracle["files"] if f["kind"] != "fixture"]
    root = str(Path(files[0]["file"]).parent.parent)
    checked = 0
    async with server("--sessions-dir", root, "--state-dir", str(tmp_path / "state")) as c:
        for f in files:
            exp = load_json(f["expected"])
            # where pi 1.6.0 answers otherwise (token sums with user images, tool titles), its answer
            exp16 = pi16_answers(f)
            for ctx, ctx16 in zip(exp["contexts"], exp16["contexts"], strict=True):
                if ctx["leafId"] == "__missing__":
                    continue
                params: dict[str, Any] = {"session": f["file"]}
                if ctx["leafId"] != "__default__":
                    params["leafId"] = ctx["leafId"]
                for fmt, key in (("agent", "agent"), ("llm", "llm")):
                    got = await c.call("pi/buildContext", {**params, "format": fmt})
                    assert got["messages"] == ctx[key], (f["file"], ctx["leafId"], fmt)
                    assert got["tokens"] == ctx16["tokens"] and got["thinkingLevel"] == ctx["thinkingLevel"]
                checked += 1
            for case, case16 in list(zip(exp["outlines"], exp16["outlines"], strict=True))[::3]:
                got = await c.call(
                    "pi/getTree",
                    {
                        "session": f["file"],
                        "filter": case["filter"],
                        "search": case["search"],
                        "folded": case["folded"] or [],
                        "leafId": case["leafId"],
                    },
                )
                assert [r["id"] for r in got["rows"]] == [r["id"] for r in case["rows"]], (f["file"], case["filter"])
                assert [r["title"] for r in got["rows"]] == [r["title"] for r in case16["rows"]]
                assert [r["indent"] for r in got["rows"]] == [r["displayIndent"] for r in case["rows"]]
                checked += 1
    assert checked > 300
