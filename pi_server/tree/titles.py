"""The one-line text pi's /tree shows for an entry, and the text its search sees."""

from __future__ import annotations

import math
import os
import posixpath
import re
from typing import Any

from pi_server.jsutil import js_number, js_string, js_stringify, js_trim, u16len, u16slice
from pi_server.store import entry_types as et
from pi_server.store.content import block_fields as _block

_MAX = 200  # pi's tree selector looks at the first 200 characters of a message


def extract_content(content: Any) -> str:
    """pi's TreeList.extractContent: text, cut at 200 UTF-16 units."""
    if isinstance(content, str):
        return u16slice(content, 0, _MAX)
    if isinstance(content, list):
        result = ""
        for c in content:
            t, text = _block(c)
            if t == "text":
                result += text if isinstance(text, str) else ("undefined" if text is None else str(text))
                if u16len(result) >= _MAX:
                    return u16slice(result, 0, _MAX)
        return result
    return ""


def _normalize(s: str) -> str:
    return js_trim(s.replace("\n", " ").replace("\t", " "))


def _home() -> str:
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""


def _resolve(p: str) -> str:
    """node's path.posix.resolve for an absolute path (no file system access)."""
    if "//" not in p and "/." not in p and (len(p) == 1 or not p.endswith("/")):
        return p  # already normal: most paths (normpath is the slow part of a title)
    out = posixpath.normpath(p)
    return "/" + out.lstrip("/") if out.startswith("//") else out


_home_key: tuple[str, str, str] = ("", "", "")  # HOME, its resolved form, and that with "/"


def _short(p: str) -> str:
    """pi 1.6.0's shortenHomePath: only absolute paths at or under HOME, normalized."""
    global _home_key
    home = _home()
    if not home or not p.startswith("/"):
        return p
    if _home_key[0] != home or not home.startswith("/"):  # a relative HOME follows the cwd
        hkey = _resolve(home if home.startswith("/") else os.path.join(os.getcwd(), home))
        _home_key = (home, hkey, hkey if hkey.endswith("/") else hkey + "/")
    _, hkey, under = _home_key
    key = _resolve(p)
    if key == hkey:
        return "~"
    if not key.startswith(under):
        return p
    # both are normalized absolute paths and key lies under hkey: the relative path is the rest
    return "~/" + key[len(under) :]


def _js_str(v: Any) -> str:
    """String(v) where pi's value is null."""
    return js_string(v, "null")


def _or(args: dict[str, Any], *keys: str, default: str = "") -> str:
    for k in keys:
        v = args.get(k)
        if v not in (None, "", 0, False) and not (isinstance(v, float) and v != v):
            return _js_str(v)
    return default


def tool_call_title(name: Any, args: Any) -> str:
    """pi's formatToolCall: how a tool result row reads in /tree."""
    if not isinstance(args, dict):
        args = {} if args is None else args
    get = args.get if isinstance(args, dict) else (lambda k: None)
    n = name if isinstance(name, str) else _js_str(name)
    if n in ("read", "write", "edit") and isinstance(args, dict):
        path = _short(_or(args, "path", "file_path"))
        if n == "read":
            path += read_line_range(get("offset"), get("limit"))
        return f"[{n}: {path}]"
    if n == "bash" and isinstance(args, dict):
        raw = _or(args, "command")
        cmd = u16slice(_normalize(raw), 0, 50)
        return f"[bash: {cmd}{'...' if u16len(raw) > 50 else ''}]"
    if n in ("grep", "find") and isinstance(args, dict):
        pattern = _or(args, "pattern")
        path = _short(_or(args, "path", default="."))
        return f"[grep: /{pattern}/ in {path}]" if n == "grep" else f"[find: {pattern} in {path}]"
    if n == "ls" and isinstance(args, dict):
        return f"[ls: {_short(_or(args, 'path', default='.'))}]"
    s = js_stringify(args) if args is not None else "undefined"
    return f"[{n}: {u16slice(s, 0, 40)}{'...' if u16len(s) > 40 else ''}]"


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_JS_RADIX = {"x": 16, "o": 8, "b": 2}


def _js_to_number(s: str) -> float:
    """JavaScript's Number(string); NaN when it is not a numeric literal."""
    t = js_trim(s)
    if not t:
        return 0.0
    if len(t) > 2 and t[0] == "0" and t[1].lower() in _JS_RADIX:
        try:
            return float(int(t[2:], _JS_RADIX[t[1].lower()]))
        except ValueError:
            return math.nan
    if _JS_DECIMAL.fullmatch(t):
        return float(t.replace("Infinity", "inf"))
    return math.nan


def _line_number(v: Any) -> float | None:
    """pi's parseLineNumber: finite numbers, numeric strings converted."""
    if isinstance(v, str) and js_trim(v) != "":
        v = _js_to_number(v)
    if _num(v) and math.isfinite(v):
        return v
    return None


def read_line_range(offset: Any, limit: Any) -> str:
    """pi 1.6.0's formatReadLineRange: `:start` or `:start-end`, nothing for malformed ranges."""
    if offset is None and limit is None:
        return ""
    start = 1 if offset is None else _line_number(offset)
    if start is None:
        return ""
    if limit is None:
        return f":{js_number(start)}"
    count = _line_number(limit)
    if count is None:
        return ""
    end = start + count - 1
    return f":{js_number(start)}{'-' + js_number(end) if end and end == end else ''}"


def user_title(content: Any) -> str:
    return "user: " + _normalize(extract_content(content))


def assistant_title(content: Any, stop_reason: Any, error: Any) -> str:
    text = _normalize(extract_content(content))
    if text:
        return "assistant: " + text
    if stop_reason == "aborted":
        return "assistant: (aborted)"
    if error:
        return "assistant: " + u16slice(_normalize(_js_str(error)), 0, 80)
    return "assistant: (no content)"


def tool_result_title(call: Any, name: Any, tool_titles: dict[str, str]) -> str:
    """The call's title (tool_titles: by call id), else the tool's name."""
    if call and isinstance(call, str) and call in tool_titles:
        return tool_titles[call]
    return f"[{'tool' if name is None else _js_str(name)}]"


def display_title(entry: dict[str, Any], tool_titles: dict[str, str]) -> str:
    """pi's getEntryDisplayText without colours."""
    t = entry.get("type")
    if t == et.MESSAGE:
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        role = msg.get("role")
        if role == "user":
            return user_title(msg.get("content"))
        if role == "assistant":
            return assistant_title(msg.get("content"), msg.get("stopReason"), msg.get("errorMessage"))
        if role == "toolResult":
            return tool_result_title(msg.get("toolCallId"), msg.get("toolName"), tool_titles)
        if role == "bashExecution":
            cmd = msg.get("command")
            return f"[bash]: {_normalize(_js_str(cmd) if cmd is not None else '')}"
        return f"[{'undefined' if role is None else _js_str(role)}]"
    if t == et.CUSTOM_MESSAGE:
        content = entry.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = "".join(
                c.get("text") if isinstance(c.get("text"), str) else "undefined"
                for c in (content if isinstance(content, list) else [])
                if isinstance(c, dict) and c.get("type") == "text"
            )
        return f"[{_js_str(entry.get('customType'))}]: " + _normalize(text)
    if t == et.COMPACTION:
        tb = entry.get("tokensBefore")
        k = _js_round(tb / 1000) if _num(tb) else "NaN"
        return f"[compaction: {k}k tokens]"
    if t == et.BRANCH_SUMMARY:
        s = entry.get("summary")
        return "[branch summary]: " + _normalize(s if isinstance(s, str) else _js_str(s) if s is not None else "")
    if t == et.MODEL_CHANGE:
        return f"[model: {_js_str(entry.get('modelId')) if entry.get('modelId') is not None else 'undefined'}]"
    if t == et.THINKING_LEVEL_CHANGE:
        v = entry.get("thinkingLevel")
        return f"[thinking: {'undefined' if v is None else _js_str(v)}]"
    if t == et.CUSTOM:
        v = entry.get("customType")
        return f"[custom: {'undefined' if v is None else _js_str(v)}]"
    if t == et.CONTEXT_EDIT:
        target = _js_str(entry["targetId"]) if "targetId" in entry else "undefined"
        return f"[context {_edit_kind(entry)}: {target}]"
    if t == et.LABEL:
        v = entry.get("label")
        return f"[label: {'(cleared)' if v is None else _js_str(v)}]"
    if t == et.SESSION_INFO:
        name = entry.get("name")
        return f"[title: {_js_str(name)}]" if name else "[title: empty]"
    return ""


def _js_round(x: float) -> str:
    import math

    return js_stringify(math.floor(x + 0.5))


def search_text(entry: dict[str, Any], label: str | None) -> str:
    """pi's getSearchableText (lower-cased by the caller)."""
    parts: list[str] = []
    if label:
        parts.append(label)
    t = entry.get("type")
    if t == et.MESSAGE:
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        parts.append(_j(msg.get("role")))
        if msg.get("content"):
            parts.append(extract_content(msg.get("content")))
        if msg.get("role") == "bashExecution" and msg.get("command"):
            parts.append(_j(msg.get("command")))
    elif t == et.CUSTOM_MESSAGE:
        parts.append(_j(entry.get("customType")))
        c = entry.get("content")
        parts.append(c if isinstance(c, str) else extract_content(c))
    elif t == et.COMPACTION:
        parts.append("compaction")
    elif t == et.BRANCH_SUMMARY:
        parts += ["branch summary", _j(entry.get("summary"))]
    elif t == et.SESSION_INFO:
        parts.append("title")
        if entry.get("name"):
            parts.append(_j(entry.get("name")))
    elif t == et.MODEL_CHANGE:
        parts += ["model", _j(entry.get("modelId"))]
    elif t == et.THINKING_LEVEL_CHANGE:
        parts += ["thinking", _j(entry.get("thinkingLevel"))]
    elif t == et.CUSTOM:
        parts += ["custom", _j(entry.get("customType"))]
    elif t == et.CONTEXT_EDIT:
        parts += ["context edit", _edit_kind(entry), _j(entry.get("targetId"))]
    elif t == et.LABEL:
        parts += ["label", _j(entry.get("label"))]
    return " ".join(parts)


def _edit_kind(entry: dict[str, Any]) -> str:
    """pi tests `replacement === null`: a missing replacement reads as a replace."""
    return "omit" if "replacement" in entry and entry["replacement"] is None else "replace"


def _j(v: Any) -> str:
    """How Array.prototype.join renders one element."""
    return "" if v is None else _js_str(v)
