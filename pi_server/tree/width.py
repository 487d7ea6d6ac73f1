"""Rows fitted to a terminal's columns, as pi's /tree fits them."""

from __future__ import annotations

import sys


def terminal_width() -> int | None:
    """The terminal's columns when stdout is one (rows are fitted, as pi's /tree does); else None."""
    import shutil

    try:
        if not sys.stdout.isatty():
            return None
    except ValueError:
        return None
    return shutil.get_terminal_size().columns


def fit_width(line: str, width: int) -> str:
    """The line cut to `width` terminal columns (wide characters take two, combining ones none)."""
    import unicodedata

    used = 0
    for i, ch in enumerate(line):
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        w = 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        if used + w > width:
            return line[:i]
        used += w
    return line
