"""pi's `read` (core/tools/read.js) without loading the file: lines are streamed, only what the
output can show is kept, the rest is counted; an image is sent only below pi's inline limit.

Memory stays bounded by the display caps (2000 lines / 50KB, plus one line and one chunk)
whatever the file's size or line lengths. pi resizes images with a WASM decoder; the server
has none, so an image whose base64 would pass pi's limit (4.5 MB) is omitted with pi's own
notice instead of sent, and is never read.
"""

from __future__ import annotations

import base64
import codecs
import math
import os
import stat
import struct
from typing import Any

from pi_server.agent.confine import ToolError, open_in_cwd
from pi_server.agent.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head

CHUNK = 1 << 20  # bytes read at a time
SNIFF = 4100  # bytes pi looks at to recognise an image
IMAGE_MAX_BASE64 = int(4.5 * 1024 * 1024)  # pi's inline image limit (its encoded size)
TOO_BIG = "[Image omitted: could not be resized below the inline image size limit.]"
NOT_CONVERTED = "[Image omitted: could not be converted to a supported inline image format.]"


def _u32be(b: bytes, at: int) -> int:
    return struct.unpack_from(">I", b, at)[0] if len(b) >= at + 4 else 0


def _png_is_still(b: bytes) -> bool:
    """A PNG with its IHDR first and no animation chunk (acTL) before its image data."""
    if len(b) < 16 or _u32be(b, 8) != 13 or b[12:16] != b"IHDR":
        return False
    at = 8
    while at + 8 <= len(b):
        kind = b[at + 4 : at + 8]
        if kind == b"acTL":
            return False
        if kind == b"IDAT":
            return True
        nxt = at + 12 + _u32be(b, at)
        if nxt <= at or nxt > len(b):
            return True
        at = nxt
    return True


def _bmp_ok(b: bytes) -> bool:
    if len(b) < 26:
        return False
    size, offset, dib = struct.unpack_from("<I4xII", b, 2)
    if (size != 0 and size < 26) or offset < 14 + dib or (size != 0 and offset >= size):
        return False
    if dib == 12:
        planes, bits = struct.unpack_from("<HH", b, 22)
    elif 40 <= dib <= 124 and len(b) >= 30:
        planes, bits = struct.unpack_from("<HH", b, 26)
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


def image_mime(head: bytes) -> str | None:
    """The image types pi's read recognises from a file's first bytes (as its mime.js)."""
    if head.startswith(b"\xff\xd8\xff"):
        return None if head[3:4] == b"\xf7" else "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png" if _png_is_still(head) else None
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:2] == b"BM" and _bmp_ok(head):
        return "image/bmp"
    return None


def read_image(fd: int, size: int, mime: str) -> dict[str, Any]:
    note = f"Read image file [{mime}]"
    if mime == "image/bmp":  # pi converts it to PNG; without a decoder the server cannot
        return {"content": [{"type": "text", "text": f"{note}\n{NOT_CONVERTED}"}]}
    if math.ceil(size / 3) * 4 >= IMAGE_MAX_BASE64:
        return {"content": [{"type": "text", "text": f"{note}\n{TOO_BIG}"}]}
    data = _read_upto(fd, IMAGE_MAX_BASE64)
    if math.ceil(len(data) / 3) * 4 >= IMAGE_MAX_BASE64:  # it grew since the stat
        return {"content": [{"type": "text", "text": f"{note}\n{TOO_BIG}"}]}
    encoded = base64.b64encode(data).decode()
    return {"content": [{"type": "text", "text": note}, {"type": "image", "data": encoded, "mimeType": mime}]}


def _read_upto(fd: int, n: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    parts, total = [], 0
    while total < n:
        chunk = os.read(fd, min(CHUNK, n - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


def _nbytes(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


class Lines:
    """The lines [start, end) of a text fed in pieces, as `text.split("\\n")[start:end]` would
    give them, keeping only those truncate_head may show and counting the rest."""

    def __init__(self, start: int, limit: int | None) -> None:
        self.start = start
        self.end = math.inf if limit is None else start + limit
        self.line = 0  # index of the line being read, in the whole text
        self.kept: list[str] = []
        self.kept_bytes = 0
        self.keeping = True
        self.selected = 0  # selected lines finished
        self.selected_bytes = 0  # size of the selected lines joined by newlines
        self.first_bytes = 0  # size of the first selected line
        self.last_empty = True
        self.pieces: list[str] = []
        self.line_bytes = 0

    def feed(self, text: str) -> None:
        pos = 0
        while True:
            nl = text.find("\n", pos)
            stop = len(text) if nl < 0 else nl
            inside = self.start <= self.line < self.end
            if inside and stop > pos:
                self._add(text[pos:stop])
            if nl < 0:
                return
            if inside:
                self._finish(newline=self.line + 1 < self.end)
            self.line += 1
            pos = nl + 1

    def close(self) -> None:
        if self.start <= self.line < self.end:
            self._finish(newline=False)

    def _add(self, piece: str) -> None:
        # a line past the byte cap is never shown (a first one only measured): keep little of it
        if self.keeping and self.line_bytes <= DEFAULT_MAX_BYTES:
            self.pieces.append(piece)
        self.line_bytes += _nbytes(piece)

    def _finish(self, newline: bool) -> None:
        if self.selected == 0:
            self.first_bytes = self.line_bytes
        self.selected_bytes += self.line_bytes + (1 if newline else 0)
        self.last_empty = self.line_bytes == 0
        if self.keeping:
            # one line past the caps is kept: truncate_head drops a trailing empty line, so it
            # needs the next line to decide as it would on the whole text
            past = len(self.kept) > DEFAULT_MAX_LINES or self.kept_bytes > DEFAULT_MAX_BYTES
            text = "".join(self.pieces)
            self.kept_bytes += _nbytes(text) + (1 if self.kept else 0)
            self.kept.append(text)
            self.keeping = not past
        self.selected += 1
        self.pieces = []
        self.line_bytes = 0

    def truncation(self) -> dict[str, Any]:
        t = truncate_head("\n".join(self.kept))
        t["totalLines"] = 0 if self.selected_bytes == 0 else self.selected - (1 if self.last_empty else 0)
        t["totalBytes"] = self.selected_bytes
        return t


def select_lines(fd: int, start: int, limit: int | None) -> tuple[int, Lines]:
    """(lines in the file, the selection) reading the file from its start in chunks."""
    os.lseek(fd, 0, os.SEEK_SET)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = Lines(start, limit)
    buf = bytearray(CHUNK)  # one buffer reused: a 2.5 GB file is not 2,500 fresh allocations
    view = memoryview(buf)
    with open(fd, "rb", buffering=0, closefd=False) as f:
        while n := f.readinto(buf):
            lines.feed(decoder.decode(view[:n]))
    lines.feed(decoder.decode(b"", final=True))
    lines.close()
    return lines.line + 1, lines


def _int_arg(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ToolError(f"{name} must be a number")
    return int(value)


def read_text(fd: int, path: str, args: dict[str, Any]) -> dict[str, Any]:
    offset, limit = _int_arg(args.get("offset"), "offset"), _int_arg(args.get("limit"), "limit")
    if limit is not None and limit < 0:
        raise ToolError("limit must not be negative")
    start = max(0, offset - 1) if offset else 0
    shown = start + 1
    total, sel = select_lines(fd, start, limit)
    if start >= total:
        raise ToolError(f"Offset {offset} is beyond end of file ({total} lines total)")
    t = sel.truncation()
    details: dict[str, Any] | None = {"truncation": t}
    if t["firstLineExceedsLimit"]:
        out = (
            f"[Line {shown} is {format_size(sel.first_bytes)}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. "
            f"Use bash: sed -n '{shown}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
    elif t["truncated"]:
        last = shown + t["outputLines"] - 1
        cap = "" if t["truncatedBy"] == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        out = f"{t['content']}\n\n[Showing lines {shown}-{last} of {total}{cap}. Use offset={last + 1} to continue.]"
    else:
        details = None
        out = t["content"]
        if limit is not None and start + limit < total:
            out += f"\n\n[{total - start - limit} more lines in file. Use offset={start + limit + 1} to continue.]"
    result: dict[str, Any] = {"content": [{"type": "text", "text": out}]}
    if details is not None:
        result["details"] = details
    return result


def read_file(full: str, path: str, args: dict[str, Any], cwd: str) -> dict[str, Any]:
    """pi's read of one file already resolved and checked to exist: an image or its lines.
    Opened within the cwd (a symlink swapped in after the check is never followed), non-blocking
    and checked after opening, so a FIFO swapped in cannot hang it."""
    fd = open_in_cwd(full, cwd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"Not a regular file: {full}")
        os.set_blocking(fd, True)
        mime = image_mime(os.read(fd, SNIFF))
        if mime:
            return read_image(fd, st.st_size, mime)
        return read_text(fd, path, args)
    finally:
        os.close(fd)
