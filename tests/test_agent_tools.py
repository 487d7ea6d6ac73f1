"""The server's read-only tools against pi's own (read, ls), and grep/find output, cwd confinement."""

from __future__ import annotations

from pathlib import Path

from conftest import run_oracle

from pi_server.agent.system16 import build_sections
from pi_server.agent.tools import run_local


def _tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("def f():\n    return 1\n# TODO one\n")
    (root / "src" / "b.ts").write_text("const x = 1; // TODO two\n")
    (root / ".hidden").write_text("h\n")
    (root / "Big.txt").write_text("".join(f"line {i}\n" for i in range(3000)))
    (root / "wide.txt").write_text("x" * 60000 + "\n")
    (root / "empty").mkdir()


def test_ls_matches_pi(tmp_path: Path) -> None:
    # read is compared with pi 1.6's (which counts lines as 0.73 did not) in test_read16.py
    _tree(tmp_path)
    calls = [
        ["ls", {}],
        ["ls", {"path": "src", "limit": 1}],
        ["ls", {"path": "empty"}],
    ]
    pi = run_oracle("agent_tools.mjs", "@mariozechner", str(tmp_path), calls)
    for (name, args), want in zip(calls, pi, strict=True):
        got, is_error = run_local(name, args, str(tmp_path))
        assert is_error == want["isError"], (name, args)
        assert got["content"] == want["content"], (name, args)
        assert got.get("details") == want["details"], (name, args)


def test_grep_find_and_confinement(tmp_path: Path) -> None:
    _tree(tmp_path)
    got, err = run_local("grep", {"pattern": "TODO"}, str(tmp_path))
    assert not err and got["content"][0]["text"] == "src/a.py:3: # TODO one\nsrc/b.ts:1: const x = 1; // TODO two"
    got, _ = run_local("grep", {"pattern": "return", "context": 1, "path": "src/a.py"}, str(tmp_path))
    assert got["content"][0]["text"] == "a.py-1- def f():\na.py:2:     return 1\na.py-3- # TODO one"
    got, _ = run_local("grep", {"pattern": "line", "limit": 2}, str(tmp_path))
    assert got["content"][0]["text"].endswith("[2 matches limit reached. Use limit=4 for more, or refine pattern]")
    got, _ = run_local("grep", {"pattern": "nothing-here"}, str(tmp_path))
    assert got["content"][0]["text"] == "No matches found"
    got, _ = run_local("find", {"pattern": "*.py"}, str(tmp_path))
    assert got["content"][0]["text"] == "src/a.py"
    got, _ = run_local("find", {"pattern": "src/**/*.ts"}, str(tmp_path))
    assert got["content"][0]["text"] == "src/b.ts"
    for name, args in [
        ("read", {"path": "/etc/passwd"}),
        ("ls", {"path": ".."}),
        ("grep", {"pattern": "x", "path": "/"}),
    ]:
        got, err = run_local(name, args, str(tmp_path))
        assert err and "outside" in got["content"][0]["text"]
    (tmp_path / "link").symlink_to("/etc")
    got, err = run_local("ls", {"path": "link"}, str(tmp_path))
    assert err and "outside" in got["content"][0]["text"]


def test_system_prompt_lists_tools_and_context(tmp_path: Path, monkeypatch) -> None:
    """pi 1.6.0's sections for a tool set: the tools with their snippets, the rules their
    guidelines give, and the project's AGENTS.md."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "AGENTS.md").write_text("Use tabs.")
    sections = build_sections(str(tmp_path), ["read", "bash", "grep", "find", "ls"])
    assert sections["tools"].startswith("<tools>\n- read: Read file contents\n- bash: ")
    assert "- Use bash for file operations" not in sections["rules"]  # grep/find/ls are there
    only_bash = build_sections(str(tmp_path), ["read", "bash"])
    assert "- Use bash for file operations like ls, rg, find" in only_bash["rules"]
    text = "\n\n".join(sections.values())
    assert f"{tmp_path}/AGENTS.md" in text and "Use tabs." in text
