"""The daemon end to end: a real LSP client over stdio against a real pi-server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_oracle
from lsp_client import server
from pygls.exceptions import JsonRpcException

from pi_server.store.index import SessionIndex
from pi_server.tree.outline import Outline, get_tree

SAMPLES = Path(__file__).resolve().parent.parent / "pi_server" / "samples"
ORACLE = Path(__file__).resolve().parent / "oracle"


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    files = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return {
        "root": str(root),
        "state": str(tmp_path / "state"),
        "big": str(files[-1]),
        "files": [str(f) for f in files],
    }


def args(store: dict[str, Any], *extra: str) -> list[str]:
    return ["--sessions-dir", store["root"], "--state-dir", store["state"], *extra]


async def expect_error(client, method: str, params: dict, code: int, kind: str | None = None) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await client.call(method, params)
    assert info.value.code == code, info.value
    if kind:
        assert info.value.data == {"kind": kind}
    assert "Traceback" not in info.value.message
    return info.value


async def test_initialize_advertises_methods(store) -> None:
    async with server(*args(store)) as c:
        caps = c.init.capabilities.experimental["piSessions"]
        assert caps["protocolVersion"] == 1
        assert {"pi/listSessions", "pi/getTree", "pi/buildContext", "pi/switchBranch", "pi/fork"} <= set(
            caps["methods"]
        )


async def test_reads_equal_the_core(store) -> None:
    async with server(*args(store)) as c:
        listed = (await c.call("pi/listSessions", {}))["sessions"]
        assert {s["session"] for s in listed} == set(store["files"])
        assert [s["modified"] for s in listed] == sorted((s["modified"] for s in listed), reverse=True)
        assert (await c.call("pi/listSessions", {"query": "repository pagination"}))["sessions"][0]["session"] == store[
            "big"
        ]
        idx = SessionIndex.open(store["big"])
        for filt in ("default", "no-tools", "user-only", "labeled-only", "all"):
            got = await c.call("pi/getTree", {"session": store["big"], "filter": filt})
            assert got == get_tree(Outline(idx), idx.last_id, filt)
        page = await c.call("pi/getTree", {"session": store["big"], "filter": "all", "offset": 3, "limit": 4})
        assert page["offset"] == 3 and len(page["rows"]) == 4
        entry = (await c.call("pi/getEntry", {"session": store["big"], "id": idx.ids[3]}))["entry"]
        assert entry == idx.read_entry(3)
        ctx = await c.call("pi/buildContext", {"session": store["big"]})
        assert ctx["leafId"] == idx.last_id and ctx["messages"]
        empty = await c.call("pi/buildContext", {"session": store["big"], "leafId": None})
        assert empty["messages"] == [] and empty["thinkingLevel"] == "off"
        anth = await c.call("pi/buildContext", {"session": store["big"], "format": "anthropic"})
        assert anth["request"]["model"] == "claude-sonnet-4-5"


async def test_errors(store, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copy(store["big"], outside)
    notes = Path(store["root"]) / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    async with server(*args(store)) as c:
        e = await expect_error(c, "pi/getTree", {}, -32602, "InvalidParams")
        assert "session" in e.message
        e = await expect_error(c, "pi/getTree", {"session": store["big"], "filter": "nope"}, -32602)
        assert "filter" in e.message
        await expect_error(c, "pi/getTree", {"session": store["big"], "limit": -1}, -32602)
        await expect_error(c, "pi/getTree", {"session": str(outside)}, -32003, "OutsideRoots")
        await expect_error(c, "pi/getTree", {"session": "/etc/passwd"}, -32003)
        await expect_error(c, "pi/getTree", {"session": store["root"] + "/../../x.jsonl"}, -32003)
        await expect_error(c, "pi/getTree", {"session": store["root"] + "/missing.jsonl"}, -32001, "SessionNotFound")
        await expect_error(c, "pi/getTree", {"session": str(notes)}, -32001)
        await expect_error(c, "pi/getEntry", {"session": store["big"], "id": "nope"}, -32002, "EntryNotFound")
        await expect_error(c, "pi/buildContext", {"session": store["big"], "leafId": "nope"}, -32002)
        await expect_error(c, "pi/setLabel", {"session": store["big"], "targetId": "nope", "label": "x"}, -32002)
        await expect_error(c, "pi/summarizeBranch", {"session": store["big"]}, -32602)
        await expect_error(c, "pi/summarizeBranch", {"session": store["big"], "targetId": "nope"}, -32002)
        await expect_error(c, "pi/fork", {"session": store["big"], "leafId": "nope"}, -32002)


async def test_write_failed(store) -> None:
    import resource

    big = store["big"]
    limit = os.path.getsize(big) + 10  # the next append cannot fit, even as root

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    async with server(*args(store), preexec_fn=cap) as c:
        before = Path(big).read_bytes()
        e = await expect_error(c, "pi/setSessionName", {"session": big, "name": "x" * 100}, -32005, "WriteFailed")
        assert big in e.message or "append" in e.message
        assert Path(big).read_bytes()[: len(before)] == before  # nothing lost
        assert (await c.call("pi/getTree", {"session": big}))["total"] > 0  # still serving


async def test_switch_label_name_and_leaf_persistence(store) -> None:
    big = store["big"]
    idx = SessionIndex.open(big)
    users = [i for i, r in enumerate(idx.roles) if r == "user"]
    target = idx.ids[users[1]]
    async with server(*args(store)) as c:
        out = await c.call("pi/switchBranch", {"session": big, "targetId": target})
        parent = idx.parents[users[1]]
        assert out == {"leafId": parent, "editorText": "Go with the ORM.", "queued": False}
        tree = await c.call("pi/getTree", {"session": big, "filter": "all"})
        assert tree["leafId"] == parent
        assert [r["id"] for r in tree["rows"] if r["isLeaf"]] == [parent]
        ctx = await c.call("pi/buildContext", {"session": big})
        assert ctx["leafId"] == parent and ctx["entryIds"][-1] == parent
        # a switch to a non-message entry lands on it
        a = idx.ids[users[1] + 1]
        assert (await c.call("pi/switchBranch", {"session": big, "targetId": a}))["leafId"] == a
    async with server(*args(store)) as c:  # restart: the switch holds
        assert (await c.call("pi/getTree", {"session": big}))["leafId"] == a
        before = Path(big).read_bytes()
        lab = await c.call("pi/setLabel", {"session": big, "targetId": target, "label": "second-ask"})
        assert lab["queued"] is False
        upd = await c.wait_for("pi/sessionUpdated")
        assert upd["appended"] == [lab["entryId"]] and upd["leafId"] == lab["entryId"]
        written = Path(big).read_bytes()
        assert written.startswith(before)  # append-only
        line = json.loads(written[len(before) :])
        assert line == {
            "type": "label",
            "id": lab["entryId"],
            "parentId": a,
            "timestamp": line["timestamp"],
            "targetId": target,
            "label": "second-ask",
        }
        rows = (await c.call("pi/getTree", {"session": big, "filter": "labeled-only"}))["rows"]
        assert any(r["id"] == target and r["label"] == "second-ask" for r in rows)
        await c.call("pi/setLabel", {"session": big, "targetId": target, "label": None})
        rows = (await c.call("pi/getTree", {"session": big, "filter": "labeled-only"}))["rows"]
        assert all(r["id"] != target for r in rows)
        name = await c.call("pi/setSessionName", {"session": big, "name": "  renamed  "})
        listed = {s["session"]: s for s in (await c.call("pi/listSessions", {}))["sessions"]}
        assert listed[big]["name"] == "renamed" and listed[big]["leafId"] == name["entryId"]
        # persist: a marker entry under the new leaf, so pi resumes there
        out = await c.call("pi/switchBranch", {"session": big, "targetId": target, "persist": True})
        marker = json.loads(Path(big).read_text().splitlines()[-1])
        assert marker["type"] == "custom" and marker["customType"] == "pi-server/leaf"
        assert marker["parentId"] == idx.parents[users[1]] and out["leafId"] == marker["id"]


async def test_fork_equals_pis_create_branched_session(store, tmp_path: Path) -> None:
    big = store["big"]
    idx = SessionIndex.open(big)
    leaf = idx.ids[-3]
    # pi 1.6.0 is the reference: labels leave the path and what followed them is re-chained
    pi = run_oracle("fork.mjs", big, leaf, str(tmp_path / "pi"), "1.6", pi16=True)
    async with server(*args(store)) as c:
        new = (await c.call("pi/fork", {"session": big, "leafId": leaf}))["session"]
        await c.wait_for("pi/sessionsChanged", lambda p: new in p["added"])
        lines = [json.loads(x) for x in Path(new).read_text().splitlines()]
        head, theirs = lines[0], pi["lines"][0]
        assert head["parentSession"] == big and head["version"] == 3 and head["cwd"] == theirs["cwd"]
        assert set(head) == set(theirs) and os.path.dirname(new) == os.path.dirname(big)

        def norm(entries: list[dict]) -> list[dict]:  # label ids are fresh in both
            label_ids = {e["id"]: f"L{i}" for i, e in enumerate(x for x in entries if x["type"] == "label")}
            return [{k: label_ids.get(v, v) if k in ("id", "parentId") else v for k, v in e.items()} for e in entries]

        assert norm(lines[1:]) == norm(pi["lines"][1:])
        ctx = await c.call("pi/buildContext", {"session": new})
        assert ctx["messages"] == pi["messages"]


async def test_watching_appends_partial_lines_and_rewrites(store) -> None:
    f = store["files"][0]
    async with server(*args(store)) as c:
        await c.call("pi/getTree", {"session": f})
        e1 = {
            "type": "custom",
            "id": "abcd0001",
            "parentId": None,
            "timestamp": "2026-12-01T00:00:00.000Z",
            "customType": "x",
        }
        line = json.dumps(e1)
        with open(f, "a") as fh:
            fh.write(line[:20])
        time.sleep(0.3)
        assert not [n for m, n in c.notes if m == "pi/sessionUpdated"]  # half a line: not yet written
        with open(f, "a") as fh:
            fh.write(line[20:] + "\n")
        upd = await c.wait_for("pi/sessionUpdated")
        assert upd == {"session": f, "appended": ["abcd0001"], "leafId": "abcd0001", "reset": False}
        # pi migrates old files in place: a rewrite is a reset
        text = Path(f).read_text().splitlines()
        Path(f).write_text("\n".join(text[:3]) + "\n")
        upd = await c.wait_for("pi/sessionUpdated", lambda p: p["reset"])
        tree = await c.call("pi/getTree", {"session": f, "filter": "all"})
        assert tree["total"] == 2 and upd["leafId"] == tree["leafId"]
        new = Path(store["root"]) / "--home-demo-notes--" / "2026-12-01T00-00-00-000Z_new.jsonl"
        shutil.copy(store["files"][1], new)
        await c.wait_for("pi/sessionsChanged", lambda p: str(new) in p["added"])
        new.unlink()
        await c.wait_for("pi/sessionsChanged", lambda p: str(new) in p["removed"])


def _busy_turn(path: str) -> dict:
    e = {
        "type": "message",
        "id": "busy0001",
        "parentId": SessionIndex.open(path).last_id,
        "timestamp": "2026-12-01T00:00:00.000Z",
        "message": {"role": "user", "content": "go on", "timestamp": 1},
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(e) + "\n")
    return e


async def test_pending_writes_wait_for_the_turn_and_survive_a_restart(store) -> None:
    big = store["big"]
    user = _busy_turn(big)
    idx = SessionIndex.open(big)
    async with server(*args(store)) as c:
        lab = await c.call("pi/setLabel", {"session": big, "targetId": idx.ids[0], "label": "queued-one"})
        assert lab == {"entryId": None, "queued": True}
        name = await c.call("pi/setSessionName", {"session": big, "name": "after the turn"})
        assert name["queued"] is True
        assert Path(big).read_text().splitlines()[-1] == json.dumps(user)  # nothing written yet
    async with server(*args(store)) as c:  # the queue is persisted
        await c.call("pi/getTree", {"session": big})
        reply = {
            "type": "message",
            "id": "busy0002",
            "parentId": "busy0001",
            "timestamp": "2026-12-01T00:00:05.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "done"}],
                "stopReason": "stop",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "timestamp": 2,
            },
        }
        with open(big, "a") as fh:
            fh.write(json.dumps(reply) + "\n")
        sp = await c.wait_for("pi/savePoint")
        lines = [json.loads(x) for x in Path(big).read_text().splitlines()]
        assert [e["id"] for e in lines[-2:]] == sp["flushed"]
        lab_e, name_e = lines[-2:]
        assert lab_e["type"] == "label" and lab_e["parentId"] == "busy0002"  # parent resolved at flush time
        assert name_e["type"] == "session_info" and name_e["parentId"] == lab_e["id"]


async def test_busy_timeout_flushes(store) -> None:
    big = store["big"]
    async with server(*args(store, "--busy-timeout", "3")) as c:
        await c.call("pi/getTree", {"session": big})
        _busy_turn(big)
        await c.wait_for("pi/sessionUpdated")
        lab = await c.call("pi/setLabel", {"session": big, "targetId": "busy0001", "label": "late"})
        assert lab["queued"] is True
        sp = await c.wait_for("pi/savePoint", timeout=15)
        assert json.loads(Path(big).read_text().splitlines()[-1])["id"] == sp["flushed"][0]


async def test_document_features(store) -> None:
    from lsprotocol import types as lsp

    big = store["big"]
    bad = Path(store["root"]) / "--home-demo-shop--" / "broken.jsonl"
    text = Path(big).read_text().splitlines()
    bad.write_text(
        "\n".join([text[0], "{oops", text[1], text[2].replace(json.loads(text[2])["parentId"], "ghost")]) + "\n"
    )
    async with server(*args(store)) as c:
        uri = Path(big).as_uri()
        c.lc.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=Path(big).read_text())
            )
        )
        syms = await c.lc.text_document_document_symbol_async(lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri)))

        def flat(items):
            for sym in items:
                yield sym
                yield from flat(sym.children or [])

        every = list(flat(syms))
        assert len(every) == len(SessionIndex.open(big)) and syms[0].range.start.line == 1
        assert syms[0].name == "[model: claude-sonnet-4-5]"
        assert any(sym.children for sym in every)  # branches nest under their branch point
        hover = await c.lc.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(3, 5))
        )
        assert hover is not None and "message" in hover.contents.value
        loc = await c.lc.text_document_definition_async(
            lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(3, 40))
        )
        assert loc is not None and loc.range.start.line == 2
        bad_uri = bad.as_uri()
        c.lc.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=bad_uri, language_id="jsonl", version=1, text=bad.read_text())
            )
        )
        for _ in range(100):
            if bad_uri in c.lc.diagnostics:
                break
            import asyncio

            await asyncio.sleep(0.05)
        codes = {d.code for d in c.lc.diagnostics[bad_uri]}
        assert {"malformed-line", "orphan"} <= codes


async def test_concurrent_writer_pi_and_the_server(store) -> None:
    """pi's SessionManager appends while the server appends labels: no torn or lost lines."""
    import asyncio

    big = store["big"]
    idx = SessionIndex.open(big)
    targets = [idx.ids[i] for i in range(0, len(idx), 2)]
    async with server(*args(store)) as c:
        await c.call("pi/getTree", {"session": big})
        proc = await asyncio.create_subprocess_exec(
            "node",
            str(ORACLE / "writer.mjs"),
            big,
            "120",
            "2",
            cwd=str(ORACLE.parent.parent),
            stdout=asyncio.subprocess.PIPE,
        )
        labels = []
        for i in range(60):
            out = await c.call(
                "pi/setLabel", {"session": big, "targetId": targets[i % len(targets)], "label": f"mark-{i}"}
            )
            assert out["queued"] is False
            labels.append(out["entryId"])
            await asyncio.sleep(0.003)
        stdout, _ = await proc.communicate()
        assert proc.returncode == 0
        pi = json.loads(stdout)
        raw = Path(big).read_bytes()
        assert raw.endswith(b"\n")
        lines = [json.loads(x) for x in raw.split(b"\n")[:-1]]  # every line whole
        ids = [e["id"] for e in lines[1:]]
        assert len(ids) == len(set(ids))
        assert set(pi["written"]) <= set(ids) and set(labels) <= set(ids)
        assert pi["entries"] == ids  # pi opens it and sees every entry
        await c.wait_for("pi/sessionUpdated", lambda p: pi["written"][-1] in p["appended"], timeout=15)
        tree = await c.call("pi/getTree", {"session": big, "filter": "all"})
        listed = {r["id"] for r in tree["rows"]}
        fresh = SessionIndex.open(big)
        assert fresh.ids == ids and not fresh.diagnostics
        assert set(pi["written"]) <= listed and set(labels) <= listed  # the server's index has every entry
        assert tree == get_tree(Outline(fresh), tree["leafId"], "all")


async def test_restart_reuses_the_index_cache_and_sees_changes(store) -> None:
    async with server(*args(store)) as c:
        first = (await c.call("pi/listSessions", {}))["sessions"]
    assert (Path(store["state"]) / "listing.msgpack").exists()
    assert len(list((Path(store["state"]) / "index").iterdir())) == len(store["files"])
    f = store["files"][0]
    e = {
        "type": "message",
        "id": "late0001",
        "parentId": SessionIndex.open(f).last_id,
        "timestamp": "2026-12-01T00:00:00.000Z",
        "message": {"role": "user", "content": "one more thing", "timestamp": 1796083200000},
    }
    with open(f, "a") as fh:
        fh.write(json.dumps(e) + "\n")
    async with server(*args(store)) as c:
        second = {s["session"]: s for s in (await c.call("pi/listSessions", {}))["sessions"]}
        for s in first:
            if s["session"] != f:
                assert second[s["session"]] == s
        assert second[f]["messageCount"] == next(s for s in first if s["session"] == f)["messageCount"] + 1
        assert second[f]["leafId"] == "late0001", (second[f], SessionIndex.open(f).ids[-4:])
        tree = await c.call("pi/getTree", {"session": f, "filter": "all"})
        assert [r["id"] for r in tree["rows"] if r["isLeaf"]] == ["late0001"]


async def test_evicted_sessions_reload_and_still_notify(store) -> None:
    async with server(*args(store, "--max-live-entries", "1")) as c:
        listed = (await c.call("pi/listSessions", {}))["sessions"]
        assert len(listed) == 3
        f = store["files"][1]
        for other in store["files"]:
            await c.call("pi/getTree", {"session": other})  # f is evicted by the others
        e = {
            "type": "custom",
            "id": "evict001",
            "parentId": None,
            "timestamp": "2026-12-01T00:00:00.000Z",
            "customType": "x",
        }
        with open(f, "a") as fh:
            fh.write(json.dumps(e) + "\n")
        upd = await c.wait_for("pi/sessionUpdated", lambda p: p["session"] == f)
        assert upd == {"session": f, "appended": ["evict001"], "leafId": "evict001", "reset": False}
        tree = await c.call("pi/getTree", {"session": f, "filter": "all"})
        assert tree == get_tree(Outline(SessionIndex.open(f)), "evict001", "all")


async def test_progress_and_disconnect(store) -> None:
    from lsprotocol import types as lsp

    async with server(*args(store)) as c:
        for _ in range(200):
            reports = [r for rs in c.lc.progress_reports.values() for r in rs]
            if any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports):
                break
            import asyncio

            await asyncio.sleep(0.02)
        kinds = [type(r).__name__ for r in reports]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    # a client that goes away ends the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_server", *args(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0


async def test_first_write_to_a_v1_file_migrates_it_as_pi_does(store, tmp_path: Path) -> None:
    src = Path(__file__).resolve().parent / "fixtures" / "pi" / "before-compaction.jsonl"
    v1 = Path(store["root"]) / "--old--" / "2025-12-09T00-53-29-825Z_ffae836b.jsonl"
    v1.parent.mkdir()
    shutil.copy(src, v1)
    os.chmod(v1, 0o644)
    before = SessionIndex.open(str(v1))
    async with server(*args(store)) as c:
        ctx_before = await c.call("pi/buildContext", {"session": str(v1)})
        target = before.ids[5]
        lab = await c.call("pi/setLabel", {"session": str(v1), "targetId": target, "label": "kept-id"})
        lines = [json.loads(x) for x in v1.read_text().splitlines()]
        assert lines[0]["version"] == 3 and lines[0]["id"] == before.header.id
        assert [e["id"] for e in lines[1:-1]] == before.ids  # the ids shown before are kept
        assert lines[-1]["id"] == lab["entryId"] and lines[-1]["targetId"] == target
        ctx_after = await c.call("pi/buildContext", {"session": str(v1), "leafId": before.ids[-1]})
        assert ctx_after["messages"] == ctx_before["messages"]
    # pi reads the migrated file as a v3 session with our ids
    out = subprocess.run(
        [
            "node",
            "-e",
            f"""
        import("@mariozechner/pi-coding-agent").then(({{SessionManager}}) => {{
          const sm = SessionManager.open({json.dumps(str(v1))});
          process.stdout.write(JSON.stringify({{ids: sm.getEntries().map(e => e.id), label: sm.getLabel({json.dumps(target)})}}));
        }})""",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=ORACLE.parent.parent,
    )
    pi = json.loads(out.stdout)
    assert pi["ids"] == [*before.ids, lab["entryId"]] and pi["label"] == "kept-id"


async def test_an_unknown_method_is_the_clients_business_not_a_server_error(
    store: dict[str, Any], tmp_path: Path
) -> None:
    for verbose in ((), ("-v",)):
        log = tmp_path / f"server{len(verbose)}.log"
        # a state dir of its own: a daemon of its own, started with this log file and verbosity
        state = ["--state-dir", str(tmp_path / f"state{len(verbose)}")]
        async with server(*args(store, "--log-file", str(log), *verbose), *state) as c:
            for method in ("editor/somethingElse", "pi/noSuchMethod"):
                with pytest.raises(JsonRpcException) as e:
                    await c.call(method, {})
                assert e.value.code == -32601
            assert (await c.call("pi/listSessions", {"limit": 1}))["sessions"]
        text = log.read_text()
        assert " ERROR " not in text, text
        if verbose:  # still there for whoever debugs a client
            assert "DEBUG pi_server: Method Not Found: editor/somethingElse" in text, text
