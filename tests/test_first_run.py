"""A newcomer's first run: the README's commands as written, the CLI's checks, docs complete on their own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lsp_client import server

from pi_server.server import rpc
from pi_server.server.app import ServerOptions, create_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "pi_server" / "samples"


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_server", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _readme_first_command() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Two commands") :]
    block = section[section.index("```sh\n") + 6 : section.index("```", section.index("```sh\n") + 6)]
    return block.splitlines()[0]


def test_the_readmes_first_command_works_on_a_clean_copy(tmp_path: Path) -> None:
    """Run exactly as written, in a copy of the repository with no virtualenv and no ~/.pi."""
    copy = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    for rel in files.stdout.splitlines():
        if (ROOT / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    command = _readme_first_command()
    assert command.startswith("python3 -m venv .venv && ")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PI_CODING_AGENT_DIR", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    env["HOME"] = str(home)
    out = subprocess.run(["bash", "-c", command], cwd=copy, capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "bundled samples" in out.stderr and "/home/demo/shop" in out.stdout  # ls
    assert "rows, filter default)" in out.stdout  # tree
    assert "SetuptoolsDeprecationWarning" not in out.stdout + out.stderr
    assert (copy / ".venv" / "bin" / "rg").exists()  # the pinned ripgrep came with it


def test_a_clean_build_has_no_license_warning(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SetuptoolsDeprecationWarning" not in out.stdout + out.stderr
    assert "license" not in (out.stdout + out.stderr).lower().replace("license_files", "").replace("license-files", "")


def test_cli_arguments_are_checked_in_one_line() -> None:
    for argv in (
        ["ls", "--limit", "-1"],
        ["tree", "--limit", "-5"],
        ["tree", "--offset", "-1"],
        ["ls", "--limit", "many"],
        ["ls", "--sessions-dir", "/nonexistent"],
        ["tree", "--sessions-dir", "/nonexistent"],
    ):
        out = _cli(*argv)
        assert out.returncode == 2, (argv, out.stdout, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and out.stdout == "", (argv, out.stderr)
    out = _cli("ls", "--limit", "0", "--sessions-dir", str(SAMPLES))
    assert out.returncode == 0
    top = _cli("--help").stdout
    assert "serve" in top and "--tcp" in top and "stdio" in top


async def test_the_cli_shows_the_leaf_the_server_keeps(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    state = tmp_path / "state"
    big = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    ids = [json.loads(line)["id"] for line in big.read_text().splitlines()[1:]]
    async with server("--sessions-dir", str(root), "--state-dir", str(state)) as c:
        tree = await c.call("pi/getTree", {"session": str(big), "filter": "all"})
        kinds = {r["id"]: (r["type"], r.get("role")) for r in tree["rows"]}
        target = next(i for i in reversed(ids[:-1]) if kinds.get(i) == ("message", "assistant"))
        switched = await c.call("pi/switchBranch", {"session": str(big), "targetId": target})
        served = await c.call("pi/buildContext", {"session": str(big)})
    assert switched["leafId"] == target and served["leafId"] == target

    out = _cli("context", str(big), "--state-dir", str(state))
    assert out.returncode == 0 and json.loads(out.stdout) == served
    assert target in out.stderr and "--leaf" in out.stderr
    tree_out = _cli("tree", str(big), "--json", "--state-dir", str(state))
    assert json.loads(tree_out.stdout)["leafId"] == target
    # an explicit --leaf wins, silently
    mine = _cli("context", str(big), "--leaf", ids[-1], "--state-dir", str(state))
    assert json.loads(mine.stdout)["leafId"] == ids[-1] and mine.stderr == ""
    # once the file grows, pi's leaf (the last entry) is the leaf again, as in the server
    with big.open("a") as f:
        f.write(json.dumps({"type": "label", "id": "feedf00d", "parentId": ids[-1], "timestamp": "2026-12-01T00:00:00.000Z", "targetId": ids[0], "label": "x"}) + "\n")
    grown = _cli("context", str(big), "--state-dir", str(state))
    assert json.loads(grown.stdout)["leafId"] == "feedf00d" and grown.stderr == ""


def _repo_texts() -> list[tuple[Path, str]]:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    out = []
    for rel in files.stdout.splitlines():
        p = ROOT / rel
        if p.suffix in (".py", ".mjs", ".md", ".toml", ".ts", ".lua", ".json") or p.name == "run":
            if p.is_file() and "node_modules" not in p.parts and "fixtures" not in p.parts:
                out.append((p, p.read_text(errors="replace")))
    return out


def test_nothing_needed_lives_outside_the_repository() -> None:
    outside = re.compile(r"/work/shared|shared/(fixtures|spec)|\.\./\.\./shared|PROTOCOL\.md")
    hits = [str(p.relative_to(ROOT)) for p, text in _repo_texts() if p.name != "test_first_run.py" and outside.search(text)]
    assert hits == []
    assert (ROOT / "tests" / "fixtures" / "pi" / "before-compaction.jsonl").is_file()


def test_protocol_md_is_the_whole_contract() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    create_server(ServerOptions())  # fills the method table
    for method in rpc.PI_METHODS:
        assert f"`{method}`" in doc, method
    for note in ("pi/sessionUpdated", "pi/sessionsChanged", "pi/savePoint", "pi/agentEvent", "pi/executeTool"):
        assert note in doc
    for code in ("-32602", "-32001", "-32002", "-32003", "-32004", "-32005", "-32006"):
        assert code in doc
    # one answer to "which leaf without leafId": the current one, everywhere
    assert "omitted means the file's last entry" not in doc
    assert "omitted: the current leaf" in doc and "omitted means the session's current leaf" in doc
