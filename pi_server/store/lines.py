"""Splitting a byte buffer into JSONL lines with their offsets.

Lines end at b"\\n" only: pi writes U+2028/U+2029/U+0085 raw inside JSON
strings, so any other notion of a line break tears entries apart.
"""

from __future__ import annotations

from collections.abc import Iterator


def iter_lines(buf: bytes, base: int = 0) -> Iterator[tuple[int, int]]:
    """Yield (offset, length) of each complete line (without its newline).

    A trailing part without a newline is not yielded: it is not written yet.
    """
    find = buf.find
    pos = 0
    while True:
        nl = find(b"\n", pos)
        if nl < 0:
            return
        yield base + pos, nl - pos
        pos = nl + 1


def complete_end(buf: bytes) -> int:
    """Length of the prefix of buf made of complete lines."""
    return buf.rfind(b"\n") + 1
