"""Session paths as clients see them: a name that is not UTF-8 travels as its `file:` URI.

Paths are bytes on POSIX. Inside the server a path is the `str` `os.fsdecode` gives, where a
byte that is not UTF-8 is a lone surrogate (`\\udce9`); os functions map it back to the same
byte, but a JSON string cannot carry it as UTF-8. So such a path goes out as its `file:` URI
(RFC 8089, each byte percent-encoded: ASCII, lossless) with `displayPath` beside it in
listings (the name decoded with U+FFFD), and every `session` param takes a `file:` URI as
well as a path. A path that is valid UTF-8 goes out as itself.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from urllib.parse import unquote_to_bytes, urlsplit


def is_utf8(path: str) -> bool:
    if path.isascii():
        return True
    try:
        path.encode()
        return True
    except UnicodeEncodeError:
        return False


def to_wire(path: str) -> str:
    """The `session` a client gets for `path`."""
    return path if is_utf8(path) else PurePosixPath(path).as_uri()


def display(path: str) -> str:
    """The path as a person reads it: bytes that are not UTF-8 shown as U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def from_wire(session: str) -> str:
    """The path a client's `session` names: a `file:` URI (local host) is decoded byte for byte;
    anything else is taken as a path."""
    if not session.startswith("file:"):
        return session
    parts = urlsplit(session)
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return session  # not a local file URI: refused later as the path it is not
    return os.fsdecode(unquote_to_bytes(parts.path))
