"""The server's `read` against pi 1.6.0's own, on files that are large, wide, odd or images,
and a read of a file larger than the server may hold never taking the turn down."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from conftest import run_oracle

from pi_server.agent.tools import run_local


def _png(width: int, height: int, body: bytes | None = None) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\0" + b"\x80\x40\x20" * width for _ in range(height)))
    idat = chunk(b"IDAT", pixels) if body is None else body
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


def _files(root: Path) -> None:
    (root / "Big.txt").write_text("".join(f"line {i}\n" for i in range(3000)))
    (root / "wide.txt").write_text("x" * 60000 + "\n")
    (root / "mid.txt").write_text("a\n" + "y" * 60000 + "\nb\n")
    (root / "nonl.txt").write_text("one\ntwo")
    (root / "empty.txt").write_text("")
    (root / "bad.txt").write_bytes(b"ok \xff\xfe bad \xe2\x82 end\n\xef\xbb\xbfbom \xe2\x82\xac\n")
    # 24 MB over 600,000 lines, a 3 MB line in the middle
    line = "0123456789abcdef" * 2 + "\n"
    with open(root / "large.txt", "w") as f:
        f.write(line * 300_000 + "z" * 3_000_000 + "\n" + line * 300_000)
    (root / "small.png").write_bytes(_png(3, 2))
    (root / "huge.png").write_bytes(_png(100, 100, body=os.urandom(5 * 1024 * 1024)))  # undecodable, 5 MB


CALLS = [
    {"path": "Big.txt"},
    {"path": "Big.txt", "offset": 10, "limit": 5},
    {"path": "Big.txt", "offset": 2999},
    {"path": "Big.txt", "offset": 3001},
    {"path": "Big.txt", "offset": 3002},
    {"path": "Big.txt", "limit": 0},
    {"path": "Big.txt", "offset": 1500, "limit": 2500},
    {"path": "wide.txt"},
    {"path": "mid.txt"},
    {"path": "mid.txt", "offset": 2},
    {"path": "mid.txt", "offset": 3},
    {"path": "nonl.txt"},
    {"path": "empty.txt"},
    {"path": "bad.txt"},
    {"path": "large.txt"},
    {"path": "large.txt", "offset": 299_990},
    {"path": "large.txt", "offset": 300_001},
    {"path": "large.txt", "offset": 300_002, "limit": 10},
    {"path": "large.txt", "offset": 600_002},
    {"path": "small.png"},
    {"path": "huge.png"},
]


def test_read_matches_pi16(tmp_path: Path) -> None:
    _files(tmp_path)
    pi = run_oracle("agent_tools.mjs", "@earendil-works", str(tmp_path), [["read", a] for a in CALLS], pi16=True)
    for args, want in zip(CALLS, pi, strict=True):
        got, is_error = run_local("read", args, str(tmp_path))
        assert is_error == want["isError"], args
        assert got["content"] == want["content"], args
        assert got.get("details") == want["details"], args


def _limit_memory() -> None:
    # the server may not hold a 2.5 GB file (as on a machine with less memory than the file):
    # reading it whole fails, reading it as pi does does not come near the limit
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


async def test_a_huge_file_or_image_is_a_tool_result_not_a_dead_turn(env) -> None:
    from fake_anthropic import FakeAnthropic
    from lsp_client import server
    from test_agent import answer, args, entries, envvars, finished, tool_use

    cwd = Path(env["cwd"])
    with open(cwd / "huge.log", "wb") as f:  # sparse: 2.5 GB of NULs on one line, no disk used
        f.truncate(2560 << 20)
    with open(cwd / "photo.png", "wb") as f:  # a 70 MB image
        f.write(_png(4000, 4000, body=b""))
        f.truncate(70 << 20)
    replies = [
        tool_use("read", {"path": "huge.log"}),
        tool_use("read", {"path": "photo.png"}, "toolu_2"),
        answer("Both read."),
    ]
    with FakeAnthropic(replies) as fake:
        async with server(*args(env), env=envvars(env, fake.url), preexec_fn=_limit_memory) as c:
            r = await c.call("pi/prompt", {"cwd": env["cwd"], "text": "Read huge.log and photo.png"})
            evs = await finished(c, r["turnId"], timeout=120)
            pid = c.lc._server.pid  # type: ignore[attr-defined]
            status = Path(f"/proc/{pid}/status").read_text()
            peak = int(next(x for x in status.splitlines() if x.startswith("VmHWM:")).split()[1]) // 1024
            print(f"server peak RSS {peak} MB after reading a 2.5 GB file and a 70 MB image")
    assert evs[-1]["type"] == "agent_end"
    results = [e["message"] for e in entries(r["session"])[1:] if e.get("message", {}).get("role") == "toolResult"]
    assert [m["isError"] for m in results] == [False, False]
    assert results[0]["content"] == [
        {
            "type": "text",
            "text": "[Line 1 is 2560.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' huge.log | head -c 51200]",
        }
    ]
    assert results[1]["content"] == [
        {
            "type": "text",
            "text": "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]",
        }
    ]
    assert len(fake.requests) == 3 and peak < 1024
