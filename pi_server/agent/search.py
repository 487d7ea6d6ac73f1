"""pi's grep and find, run as pi runs them: ripgrep in a subprocess.

ripgrep gives pi's semantics for free: a linear-time regex engine (a model's
`(a+)+$` cannot stall anything), symlinks not followed, FIFOs and devices
skipped during the walk, .gitignore honoured. The subprocess is killed on
abort, at the result limit, and after `timeout` seconds, so no thread of the
server ever waits on it. grep's flags and output follow pi's core/tools/grep.js;
find takes fd's flags from core/tools/find.js, with `rg --files` listing files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from typing import Any

from pi_server.agent.confine import ToolError, open_in_cwd, read_regular, resolve_in_cwd, with_notices
from pi_server.agent.truncate import GREP_MAX_LINE_LENGTH, truncate_line

MAX_OUTPUT_LINE = 8 << 20  # a longer line of rg output is skipped, not buffered
STDERR_KEEP = 64 << 10


def rg_path() -> str:
    """The `rg` installed with pi-server (the pinned ripgrep wheel), else one on PATH."""
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(d, "rg")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not available")
    return found


async def _feed(stream: asyncio.StreamReader, on_line: Callable[[bytes], bool]) -> bool:
    """Hand each output line to on_line until it returns False (True: stopped early)."""
    buf, skipping = b"", False
    while chunk := await stream.read(1 << 16):
        buf += chunk
        start = 0
        while (i := buf.find(b"\n", start)) >= 0:
            line, start = buf[start:i], i + 1
            if skipping:
                skipping = False
            elif not on_line(line):
                return True
        buf = buf[start:]
        if len(buf) > MAX_OUTPUT_LINE:
            buf, skipping = b"", True
    if buf and not skipping:
        on_line(buf)
    return False


async def _drain(stream: asyncio.StreamReader) -> bytes:
    kept = b""
    while chunk := await stream.read(1 << 16):
        kept = (kept + chunk)[:STDERR_KEEP]
    return kept


async def run_rg(
    args: list[str], on_line: Callable[[bytes], bool], timeout: float, where: Opened | None = None
) -> tuple[int, bool, str]:
    """(exit code, stopped early, stderr) of one rg run; killed on cancel, stop or timeout.
    `where`: the search root as opened within the cwd (rg searches it, not a name)."""
    env = {k: v for k, v in os.environ.items() if k != "RIPGREP_CONFIG_PATH"}  # no flags from elsewhere
    stdin: int = subprocess.DEVNULL
    cwd = None
    if where is not None and where.is_dir:
        cwd = where.dir_path()
    elif where is not None:
        stdin = where.fd
    proc = await asyncio.create_subprocess_exec(
        rg_path(),
        *args,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert proc.stdout is not None and proc.stderr is not None
    err = asyncio.ensure_future(_drain(proc.stderr))
    try:
        async with asyncio.timeout(timeout):
            stopped = await _feed(proc.stdout, on_line)
            if stopped:
                proc.kill()
            code = await proc.wait()
            return code, stopped, (await err).decode("utf-8", "replace")
    except TimeoutError:
        raise ToolError(f"Search timed out after {timeout:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await proc.wait()  # reaped and its pipes closed, even when we were cancelled
        err.cancel()


class Opened:
    """A search root opened within the cwd: rg is pointed at this descriptor, never at the
    name, so a folder or file swapped for a symlink after the check is not what it reads."""

    def __init__(self, root: str, cwd: str) -> None:
        self.root = root
        try:
            self.fd = open_in_cwd(root, cwd)
        except FileNotFoundError:
            raise ToolError(f"Path not found: {root}") from None
        mode = os.fstat(self.fd).st_mode
        self.is_dir, self.is_file = stat.S_ISDIR(mode), stat.S_ISREG(mode)
        if self.is_file:
            os.set_blocking(self.fd, True)

    def dir_path(self) -> str:
        """A name for the opened folder that cannot be redirected: the descriptor's own, where
        the system has one; the checked path elsewhere."""
        own = f"/proc/self/fd/{self.fd}"  # resolved in the child too, which inherits the descriptor until exec
        return own if os.path.isdir(own) else self.root

    def close(self) -> None:
        os.close(self.fd)


def search_args(args: dict[str, Any], cwd: str) -> tuple[str, str]:
    """The pattern and the search root (inside the cwd) that find and grep both take."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        raise ToolError("pattern must be a string")
    return pattern, resolve_in_cwd(args.get("path") or ".", cwd)


def _int(args: dict[str, Any], key: str, default: int) -> int:
    v = args.get(key)
    return default if v is None else int(v)


def _lines_of(path: str, cache: dict[str, list[str]], cwd: str) -> list[str]:
    if path not in cache:
        try:
            text = read_regular(path, cwd=cwd).decode("utf-8", "replace")
            cache[path] = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        except (OSError, ToolError):
            cache[path] = []
    return cache[path]


def _grep_lines(
    matches: list[tuple[str, int, str | None]], root: str, is_dir: bool, ctx: int, cwd: str
) -> tuple[list[str], bool]:
    """pi's formatting of rg's matches: `path:line: text`, context lines as `path-line- text`.
    rg searched the opened root: its paths are relative to it (`.`), or stdin for a file."""
    out: list[str] = []
    cut = False
    cache: dict[str, list[str]] = {}
    for found, n, text in matches:
        rel = os.path.normpath(found).replace(os.sep, "/") if is_dir else ""
        if not rel or rel.startswith("..") or os.path.isabs(rel):
            rel = os.path.basename(root if not is_dir else found)
        path = os.path.join(root, rel) if is_dir else root
        if ctx == 0 and text is not None:
            line, was = truncate_line(text.replace("\r\n", "\n").replace("\r", "").removesuffix("\n"))
            cut = cut or was
            out.append(f"{rel}:{n}: {line}")
            continue
        lines = _lines_of(path, cache, cwd)
        if not lines:
            out.append(f"{rel}:{n}: (unable to read file)")
            continue
        lo, hi = (max(1, n - ctx), min(len(lines), n + ctx)) if ctx else (n, n)
        for cur in range(lo, hi + 1):
            line, was = truncate_line((lines[cur - 1] if cur - 1 < len(lines) else "").replace("\r", ""))
            cut = cut or was
            sep = ":" if cur == n else "-"
            out.append(f"{rel}{sep}{cur}{sep} {line}")
    return out, cut


async def tool_grep(args: dict[str, Any], cwd: str, timeout: float) -> dict[str, Any]:
    pattern, root = search_args(args, cwd)
    where = Opened(root, cwd)
    try:
        return await _grep(args, pattern, root, where, cwd, timeout)
    finally:
        where.close()


async def _grep(
    args: dict[str, Any], pattern: str, root: str, where: Opened, cwd: str, timeout: float
) -> dict[str, Any]:
    is_dir = where.is_dir
    if not is_dir and not where.is_file:
        raise ToolError(f"Not a regular file: {root}")
    ctx = max(0, _int(args, "context", 0))
    limit = max(1, _int(args, "limit", 100))
    rg = ["--json", "--line-number", "--color=never", "--hidden", "--sort", "path"]
    if args.get("ignoreCase"):
        rg.append("--ignore-case")
    if args.get("literal"):
        rg.append("--fixed-strings")
    if isinstance(args.get("glob"), str) and args["glob"]:
        rg += ["--glob", args["glob"]]
    rg += ["--", pattern, "." if is_dir else "-"]
    matches: list[tuple[str, int, str | None]] = []

    def on_line(raw: bytes) -> bool:
        try:
            ev = json.loads(raw)
        except ValueError:
            return True
        if ev.get("type") != "match":
            return True
        data = ev.get("data") or {}
        path, n = (data.get("path") or {}).get("text"), data.get("line_number")
        if isinstance(path, str) and isinstance(n, int):
            matches.append((path, n, (data.get("lines") or {}).get("text")))
        return len(matches) < limit

    code, stopped, err = await run_rg(rg, on_line, timeout, where)
    if not stopped and code not in (0, 1):
        raise ToolError(err.strip() or f"ripgrep exited with code {code}")
    if not matches:
        return {"content": [{"type": "text", "text": "No matches found"}]}
    out, cut = await asyncio.to_thread(_grep_lines, matches, root, is_dir, ctx, cwd)
    notices: list[str] = []
    details: dict[str, Any] = {}
    if len(matches) >= limit:
        notices.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern")
        details["matchLimitReached"] = limit
    after: tuple[str, ...] = ()
    if cut:
        after = (f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines",)
        details["linesTruncated"] = True
    return with_notices(out, notices, details, after)


async def tool_find(args: dict[str, Any], cwd: str, timeout: float) -> dict[str, Any]:
    pattern, root = search_args(args, cwd)
    where = Opened(root, cwd)
    try:
        if not where.is_dir:
            raise ToolError(f"Not a directory: {root}")
        return await _find(args, pattern, where, timeout)
    finally:
        where.close()


async def _find(args: dict[str, Any], pattern: str, where: Opened, timeout: float) -> dict[str, Any]:
    root = "."
    limit = max(1, _int(args, "limit", 1000))
    # as pi gives fd a path pattern: matched anywhere below the root
    if "/" in pattern and not pattern.startswith(("/", "**/")) and pattern != "**":
        pattern = "**/" + pattern
    rg = ["--files", "--hidden", "--no-require-git", "--color=never", "--sort", "path", "--glob", pattern, "--", root]
    found: list[str] = []
    prefix = root.rstrip(os.sep) + os.sep

    def on_line(raw: bytes) -> bool:
        line = raw.decode("utf-8", "replace").rstrip("\r").strip()
        if line:
            rel = line[len(prefix) :] if line.startswith(prefix) else os.path.relpath(line, root)
            found.append(rel.replace(os.sep, "/"))
        return len(found) < limit

    code, stopped, err = await run_rg(rg, on_line, timeout, where)
    if not found:
        if not stopped and code not in (0, 1):
            raise ToolError(err.strip() or f"ripgrep exited with code {code}")
        return {"content": [{"type": "text", "text": "No files found matching pattern"}]}
    notices: list[str] = []
    details: dict[str, Any] = {}
    if len(found) >= limit:
        notices.append(f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern")
        details["resultLimitReached"] = limit
    return with_notices(found, notices, details)
