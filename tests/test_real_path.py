"""`real_path` (the kernel's answer from an O_PATH descriptor) is `os.path.realpath` in every
case a session root can hold: links to files and folders, chains, dangling links, loops,
relative paths, FIFOs, names that are not UTF-8, paths through a file."""

from __future__ import annotations

import os
from pathlib import Path

from pi_server.store.discovery import real_path


def test_real_path_is_realpath(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "real" / "sub"
    d.mkdir(parents=True)
    f = d / "s.jsonl"
    f.write_text("{}\n")
    os.mkfifo(d / "fifo.jsonl")
    odd = os.fsdecode(os.fsencode(str(d)) + b"/caf\xe9.jsonl")
    Path(odd).write_text("{}\n")
    (tmp_path / "to_dir").symlink_to(tmp_path / "real")
    (tmp_path / "to_file").symlink_to(f)
    (tmp_path / "chain").symlink_to(tmp_path / "to_file")
    (tmp_path / "rel").symlink_to("real/sub/s.jsonl")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x.jsonl")
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    monkeypatch.chdir(tmp_path)
    cases = [
        str(f), str(d), str(d / "fifo.jsonl"), odd, str(tmp_path / "to_dir" / "sub" / "s.jsonl"),
        str(tmp_path / "to_file"), str(tmp_path / "chain"), str(tmp_path / "rel"), str(tmp_path / "dangling"),
        str(tmp_path / "loop_a"), str(tmp_path / "missing.jsonl"), str(f / "through_a_file"),
        "real/sub/../sub/s.jsonl", "to_dir", str(tmp_path / "to_dir") + "/", "/",
    ]
    for path in cases:
        assert real_path(path) == os.path.realpath(path), path


def test_an_existing_path_is_resolved_by_the_kernel(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Three system calls, not one per component: `os.path.realpath` is not needed."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    want = os.path.realpath(tmp_path / "link" / "b")

    def refused(_path: object, **_kw: object) -> str:
        raise AssertionError("os.path.realpath was used")

    monkeypatch.setattr(os.path, "realpath", refused)
    assert real_path(str(tmp_path / "link" / "b")) == want
