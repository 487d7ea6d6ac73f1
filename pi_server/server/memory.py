"""Memory a large answer used, given back to the system once it is written.

A context answer is a buffer of tens of megabytes. glibc's allocator keeps such
buffers in the process after they are freed (its mmap threshold grows to the size
of the last one freed), so a daemon that answered one large context would hold
that much for good. `malloc_trim` returns the free pages (~0.3 ms; ~20 MiB after
a 19,000-message context).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

LARGE = 1 << 20  # bytes of an answer worth a trim


@functools.cache
def _libc_trim() -> Any:
    try:
        return ctypes.CDLL(None).malloc_trim  # the process's own C library
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


def after_answer(size: int) -> None:
    """Give free memory back after an answer of `size` bytes was written."""
    if size >= LARGE and (trim := _libc_trim()) is not None:
        trim(0)
