"""JavaScript string and JSON semantics that pi's answers depend on.

pi measures and slices strings in UTF-16 code units, trims with JS's whitespace
set and serializes with JSON.stringify; matching its output means doing the same.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import msgspec

# ECMAScript WhiteSpace + LineTerminator (String.prototype.trim).
_JS_WS = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680\u2000\u2001\u2002\u2003"
    "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_SPLIT_WS = re.compile(f"[{_JS_WS}]+")


def js_key(v: Any) -> Any:
    """`v` as a key that behaves as in a JS Map or Set (SameValueZero): strings, numbers and
    booleans by value but apart by type (`1`, `"1"` and `true` are three keys), arrays and
    objects by identity (two values parsed from a file are never the same key)."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("number", float(v)) if v == v else ("number", "NaN")
    return ("object", id(v))


def js_trim(s: str) -> str:
    return s.strip(_JS_WS)


def js_split_ws(s: str) -> list[str]:
    """`s.split(/\\s+/).filter(Boolean)`."""
    return [t for t in _JS_SPLIT_WS.split(s) if t]


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def u16len(s: str) -> int:
    """`s.length`: characters outside the BMP count twice."""
    if s.isascii():
        return len(s)
    # a slice at a time: one scan of a prompt of tens of megabytes holds the interpreter
    # lock, every other thread waiting, for a tenth of a second and more
    find = _ASTRAL.findall
    return len(s) + sum(len(find(s, i, i + SLICE)) for i in range(0, len(s), SLICE))


SLICE = 1 << 18  # characters per regular-expression call over a long text (~1 ms)


def u16slice(s: str, start: int, end: int | None = None) -> str:
    """`s.slice(start, end)` with UTF-16 indices (may leave a lone surrogate, as JS does)."""
    if s.isascii() or not _ASTRAL.search(s):
        return s[start:end]
    b = s.encode("utf-16-le", "surrogatepass")
    e = len(b) if end is None else end * 2
    return b[start * 2 : e].decode("utf-16-le", "surrogatepass")


def u16sort_key(s: str) -> bytes:
    """Sort key giving JS's default sort order (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def js_number(v: float | int) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v) or math.isinf(v):
        return "null"
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    r = repr(v)
    if "e" in r:
        mant, exp = r.split("e")
        ex = int(exp)
        if -7 < ex < 21:
            return format(v, "f").rstrip("0").rstrip(".")
        return f"{mant}e{'+' if ex > 0 else '-'}{abs(ex)}"
    return r


def js_string(v: Any, missing: str = "undefined") -> str:
    """String(v) (or a template literal) of a JSON value; None stands for `missing`."""
    if v is None:
        return missing
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return js_number(v)
    if isinstance(v, list):
        return ",".join("" if x is None else js_string(x) for x in v)
    return "[object Object]"


def js_stringify(value: Any) -> str:
    """JSON.stringify(value) for JSON-shaped data (dict order kept)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if type(value) is msgspec.Raw:
        return bytes(value).decode()  # a value nested too deep to hold, kept as its JSON text
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{js_stringify(v)}" for k, v in value.items())
            + "}"
        )
    return "null"


def js_date_ms(value: Any) -> float:
    """`new Date(value).getTime()`: NaN when JS would not parse it."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value) if abs(value) <= 8.64e15 else math.nan
    if not isinstance(value, str):
        return math.nan
    s = value.strip()
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return math.nan
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return float(round(dt.timestamp() * 1000))


def js_date_json(value: Any) -> int | float | None:
    """The JSON of `new Date(value).getTime()` (NaN serializes as null)."""
    ms = js_date_ms(value)
    if math.isnan(ms):
        return None
    return int(ms)


def js_finite(value: Any) -> Any:
    """`value` as JSON.stringify then JSON.parse would give it: a non-finite number (what
    `1e400` parses to) is null. A copy of containers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: js_finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_finite(v) for v in value]
    return value


def non_finite_at(value: Any, where: tuple[str, ...] = ()) -> str | None:
    """The dotted path (`replacement.content.0.n`) of the first non-finite number in a parsed
    JSON value, or None when every number is finite."""
    if isinstance(value, float):
        return None if math.isfinite(value) else ".".join(where)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        if isinstance(v, dict | list | float):
            found = non_finite_at(v, (*where, str(k)))
            if found is not None:
                return found
    return None
