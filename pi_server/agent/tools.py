"""pi's read-only tools (read, ls, grep, find) run in the server, confined to the session's cwd.

Output text, notices and `details` follow pi's core/tools/*.js; grep and find run
ripgrep as pi does (search.py). Every run is bounded in time and cancellable: the
searches are subprocesses killed on abort, and read/ls never open a FIFO or a
device, so none of them can hold a thread of the server.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pi_server.agent.confine import ToolError, error_result, kind, resolve_in_cwd, with_notices
from pi_server.agent.readfile import read_file
from pi_server.agent.search import tool_find, tool_grep

__all__ = ["LOCAL_TOOLS", "ToolError", "error_result", "resolve_in_cwd", "run_local", "run_tool"]

log = logging.getLogger("pi_server")
TOOL_TIMEOUT = 60.0  # seconds; pi has none, but a server must not wait forever on one call
# read/ls run here, never on the core's worker or pygls's pool
_FILES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pi-tools")


def tool_read(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    path = args.get("path")
    if not isinstance(path, str):
        raise ToolError("path must be a string")
    full = resolve_in_cwd(path, cwd)
    what = kind(full)
    if what == "missing" or not os.access(full, os.R_OK):
        raise ToolError(f"ENOENT: no such file or directory, access '{full}'")
    if what == "dir":
        raise ToolError("EISDIR: illegal operation on a directory, read")
    if what == "special":
        raise ToolError(f"Not a regular file: {full}")
    return read_file(full, path, args, cwd)


def tool_ls(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    full = resolve_in_cwd(args.get("path") or ".", cwd)
    limit = int(args.get("limit") or 500)
    what = kind(full)
    if what == "missing":
        raise ToolError(f"Path not found: {full}")
    if what != "dir":
        raise ToolError(f"Not a directory: {full}")
    names = sorted(os.listdir(full), key=str.lower)
    out: list[str] = []
    hit_limit = False
    for name in names:
        if len(out) >= limit:
            hit_limit = True
            break
        try:
            suffix = "/" if os.path.isdir(os.path.join(full, name)) else ""
        except OSError:
            continue
        out.append(name + suffix)
    if not out:
        return {"content": [{"type": "text", "text": "(empty directory)"}]}
    notices: list[str] = []
    details: dict[str, Any] = {}
    if hit_limit:
        notices.append(f"{limit} entries limit reached. Use limit={limit * 2} for more")
        details["entryLimitReached"] = limit
    return with_notices(out, notices, details)


LOCAL_TOOLS = {"read": tool_read, "ls": tool_ls, "grep": tool_grep, "find": tool_find}
_SEARCHES = {"grep", "find"}


async def run_tool(name: str, args: Any, cwd: str, timeout: float = TOOL_TIMEOUT) -> tuple[dict[str, Any], bool]:
    """(result, isError) for one of the server's own tools; cancelling it stops the work."""
    args = args if isinstance(args, dict) else {}
    if not cwd or not os.path.isabs(cwd):
        return error_result("This session has no working directory: tools are disabled"), True
    try:
        if name in _SEARCHES:
            return await LOCAL_TOOLS[name](args, cwd, timeout), False
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(_FILES, LOCAL_TOOLS[name], args, cwd)
        return await asyncio.wait_for(job, timeout), False
    except ToolError as e:
        return error_result(str(e)), True
    except TimeoutError:
        return error_result(f"{name} timed out after {timeout:g} s"), True
    except (ValueError, TypeError, ArithmeticError) as e:  # ArithmeticError: int(inf), a huge count
        return error_result(f"invalid arguments: {e}"), True
    except OSError as e:
        return error_result(f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")), True
    except Exception as e:  # MemoryError included: the model hears of it, the turn goes on
        log.exception("tool %s failed", name)
        return error_result(f"{name} failed: {type(e).__name__}: {e}".rstrip(": ")), True


def run_local(name: str, args: Any, cwd: str, timeout: float = TOOL_TIMEOUT) -> tuple[dict[str, Any], bool]:
    """run_tool for callers without an event loop."""
    return asyncio.run(run_tool(name, args, cwd, timeout))
