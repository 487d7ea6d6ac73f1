"""pi's read-only tools (read, ls, grep, find) run in the server, confined to the session's cwd.

Output text, notices and `details` follow pi's core/tools/*.js; grep and find are
done in Python instead of ripgrep/fd, with pi's output format and limits.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any

from pi_server.agent.truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, format_size, truncate_head, truncate_line


class ToolError(Exception):
    """The tool failed; pi turns the message into an error tool result."""


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "details": {}}


def resolve_in_cwd(path: str, cwd: str) -> str:
    """pi's resolveToCwd, then refuse anything whose real path leaves the cwd."""
    p = path[1:] if path.startswith("@") else path
    if p == "~" or p.startswith("~/"):
        p = os.path.expanduser(p)
    full = os.path.normpath(p if os.path.isabs(p) else os.path.join(cwd, p))
    real, root = os.path.realpath(full), os.path.realpath(cwd)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise ToolError(f"Path is outside the session's working directory ({cwd}): {path}")
    return full


_IMAGES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"))


def _image_mime(head: bytes) -> str | None:
    for magic, mime in _IMAGES:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def tool_read(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    path = args.get("path")
    if not isinstance(path, str):
        raise ToolError("path must be a string")
    full = resolve_in_cwd(path, cwd)
    if not os.access(full, os.R_OK):
        raise ToolError(f"ENOENT: no such file or directory, access '{full}'")
    with open(full, "rb") as f:
        data = f.read()
    mime = _image_mime(data[:16])
    if mime:
        text = f"Read image file [{mime}]"
        return {
            "content": [
                {"type": "text", "text": text},
                {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime},
            ]
        }
    lines = data.decode("utf-8", "replace").split("\n")
    offset, limit = args.get("offset"), args.get("limit")
    start = max(0, int(offset) - 1) if offset else 0
    shown = start + 1
    if start >= len(lines):
        raise ToolError(f"Offset {offset} is beyond end of file ({len(lines)} lines total)")
    user_lines = None
    if limit is not None:
        end = min(start + int(limit), len(lines))
        selected = "\n".join(lines[start:end])
        user_lines = end - start
    else:
        selected = "\n".join(lines[start:])
    t = truncate_head(selected)
    details: dict[str, Any] | None = None
    if t["firstLineExceedsLimit"]:
        size = format_size(len(lines[start].encode()))
        out = (
            f"[Line {shown} is {size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. "
            f"Use bash: sed -n '{shown}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": t}
    elif t["truncated"]:
        last = shown + t["outputLines"] - 1
        if t["truncatedBy"] == "lines":
            note = f"[Showing lines {shown}-{last} of {len(lines)}. Use offset={last + 1} to continue.]"
        else:
            note = (
                f"[Showing lines {shown}-{last} of {len(lines)} ({format_size(DEFAULT_MAX_BYTES)} limit). "
                f"Use offset={last + 1} to continue.]"
            )
        out = t["content"] + "\n\n" + note
        details = {"truncation": t}
    elif user_lines is not None and start + user_lines < len(lines):
        remaining = len(lines) - (start + user_lines)
        out = f"{t['content']}\n\n[{remaining} more lines in file. Use offset={start + user_lines + 1} to continue.]"
    else:
        out = t["content"]
    result: dict[str, Any] = {"content": [{"type": "text", "text": out}]}
    if details is not None:
        result["details"] = details
    return result


def _with_notices(lines: list[str], notices: list[str], details: dict[str, Any]) -> dict[str, Any]:
    t = truncate_head("\n".join(lines), max_lines=2**53 - 1)
    out = t["content"]
    if t["truncated"]:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = t
    if notices:
        out += f"\n\n[{'. '.join(notices)}]"
    result: dict[str, Any] = {"content": [{"type": "text", "text": out}]}
    if details:
        result["details"] = details
    return result


def tool_ls(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    full = resolve_in_cwd(args.get("path") or ".", cwd)
    limit = int(args.get("limit") or 500)
    if not os.path.exists(full):
        raise ToolError(f"Path not found: {full}")
    if not os.path.isdir(full):
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
    return _with_notices(out, notices, details)


def _walk(root: str) -> list[str]:
    """Files under root (hidden ones included, as pi's --hidden), .git and node_modules skipped."""
    found: list[str] = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in (".git", "node_modules"))
        found += [os.path.join(d, f) for f in sorted(files)]
    return found


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as fd/ripgrep read it: `**/` any directories, `*` and `?` within one path part."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def _glob_match(rel: str, pattern: str) -> bool:
    # a pattern without a slash matches the file name anywhere, as fd's glob mode
    target = os.path.basename(rel) if "/" not in pattern else rel
    return _glob_regex(pattern).match(target) is not None


def _search_args(args: dict[str, Any], cwd: str) -> tuple[str, str]:
    """The pattern and the existing search root (inside the cwd) that find and grep both take."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        raise ToolError("pattern must be a string")
    root = resolve_in_cwd(args.get("path") or ".", cwd)
    if not os.path.exists(root):
        raise ToolError(f"Path not found: {root}")
    return pattern, root


def tool_find(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    pattern, root = _search_args(args, cwd)
    limit = int(args.get("limit") or 1000)
    hits: list[str] = []
    for f in _walk(root):
        rel = os.path.relpath(f, root).replace(os.sep, "/")
        if _glob_match(rel, pattern):
            hits.append(rel)
    if not hits:
        return {"content": [{"type": "text", "text": "No files found matching pattern"}]}
    notices: list[str] = []
    details: dict[str, Any] = {}
    if len(hits) > limit:
        hits = hits[:limit]
        notices.append(f"{limit} results limit reached")
        details["resultLimitReached"] = limit
    return _with_notices(hits, notices, details)


def tool_grep(args: dict[str, Any], cwd: str) -> dict[str, Any]:
    pattern, root = _search_args(args, cwd)
    is_dir = os.path.isdir(root)
    flags = re.IGNORECASE if args.get("ignoreCase") else 0
    try:
        rx = re.compile(re.escape(pattern) if args.get("literal") else pattern, flags)
    except re.error as e:
        raise ToolError(f"regex parse error: {e}") from None
    ctx = int(args.get("context") or 0)
    limit = max(1, int(args.get("limit") or 100))
    glob = args.get("glob")
    out: list[str] = []
    count = 0
    cut = False
    reached = False
    for f in _walk(root) if is_dir else [root]:
        rel = os.path.relpath(f, root).replace(os.sep, "/") if is_dir else os.path.basename(f)
        if glob and not _glob_match(rel, glob):
            continue
        try:
            with open(f, "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if b"\0" in raw[:8000]:
            continue  # binary, as ripgrep skips it
        lines = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for n, line in enumerate(lines, 1):
            if not rx.search(line):
                continue
            if count >= limit:
                reached = True
                break
            count += 1
            lo, hi = (max(1, n - ctx), min(len(lines), n + ctx)) if ctx else (n, n)
            for cur in range(lo, hi + 1):
                text, was = truncate_line(lines[cur - 1])
                cut = cut or was
                sep = ":" if cur == n else "-"
                out.append(f"{rel}{sep}{cur}{sep} {text}")
        if reached:
            break
    if count == 0:
        return {"content": [{"type": "text", "text": "No matches found"}]}
    notices: list[str] = []
    details: dict[str, Any] = {}
    if reached:
        notices.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern")
        details["matchLimitReached"] = limit
    if cut:
        notices.append(f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines")
        details["linesTruncated"] = True
    return _with_notices(out, notices, details)


LOCAL_TOOLS = {"read": tool_read, "ls": tool_ls, "grep": tool_grep, "find": tool_find}


def run_local(name: str, args: dict[str, Any], cwd: str) -> tuple[dict[str, Any], bool]:
    """(result, isError) for one of the server's own tools."""
    try:
        return LOCAL_TOOLS[name](args if isinstance(args, dict) else {}, cwd), False
    except ToolError as e:
        return error_result(str(e)), True
    except OSError as e:
        return error_result(f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")), True
