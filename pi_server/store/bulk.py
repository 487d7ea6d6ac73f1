"""Bulk work for the worker processes (server/pool.py starts them as `python -m
pi_server.store.bulk`): which files a searched listing matches, and the first index of
files, saved to the index cache for the server to load.

A worker reads session files and writes nothing but index cache entries (each an
atomic rename, the format of store/cache.py): sessions, leaf pointers and queues are
written by the server alone. Requests and answers are msgpack frames (a 4-byte
length, then the body) on stdin and stdout; each item's answer goes out as soon as it
is known, so the server knows which file a worker was on if it dies or hangs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, BinaryIO

import msgspec

from pi_server.store.cache import IndexCache, fingerprint
from pi_server.store.discovery import is_within, search_text, session_info, text_matches
from pi_server.store.index import NotASession, SessionIndex

TEXT_BUDGET = 48 << 20  # bytes of search text kept per worker between searches


class Worker:
    def __init__(self) -> None:
        self.caches: dict[str, IndexCache] = {}
        # path -> (fingerprint, search text): a repeated search costs one stat per unchanged file
        self.texts: dict[str, tuple[tuple[int, int, int], str]] = {}
        self.text_bytes = 0
        self.dirs: dict[str, str] = {}  # folders' real paths, for one request

    def cache(self, state_root: str) -> IndexCache:
        cache = self.caches.get(state_root)
        if cache is None:
            cache = self.caches[state_root] = IndexCache(state_root)
        return cache

    def load(self, path: str, cache: IndexCache) -> SessionIndex:
        """The file's index: from the cache when it holds, else built and saved there."""
        idx = cache.load(path)
        if idx is None:
            idx = SessionIndex.open(path)
            cache.save(idx)
        elif idx.generation > 1:  # grown since it was cached
            cache.save(idx)
        if idx.header is None:
            raise NotASession(path)
        return idx

    def search(self, path: str, tokens: list[str], state_root: str, roots: list[str]) -> bool | None:
        """Whether the session matches every token (None: not a session, or a symlink out of the
        roots: never read, left out)."""
        if not is_within(path, roots, self.dirs):
            return None
        fp = fingerprint(path)
        if fp is None:
            return None
        key = (fp["size"], fp["mtime_ns"], fp["ino"])
        known = self.texts.get(path)
        if known is not None and known[0] == key:
            return text_matches(known[1], tokens)
        text = search_text(self.load(path, self.cache(state_root)))
        if known is not None:
            self.text_bytes -= sys.getsizeof(known[1])
            del self.texts[path]
        size = sys.getsizeof(text)  # 1, 2 or 4 bytes a character
        if self.text_bytes + size <= TEXT_BUDGET:
            self.texts[path] = (key, text)
            self.text_bytes += size
        return text_matches(text, tokens)

    def index(self, path: str, state_root: str) -> dict[str, Any] | None:
        """Index the file into the cache; its SessionInfo and entry count for the server's listing."""
        idx = self.load(path, self.cache(state_root))
        fp = fingerprint(path)
        if fp is None:
            return None
        return {"fp": fp, "info": {**session_info(idx), "_size": idx.size}, "entries": len(idx)}

    def run(self, req: dict[str, Any], item: str) -> Any:
        try:
            if req["op"] == "search":
                return self.search(item, req["tokens"], req["state"], req["roots"])
            return self.index(item, req["state"])
        except (NotASession, OSError, ValueError, RecursionError, MemoryError):
            return None  # skipped, as the server's own listing skips it
        except Exception as e:
            print(f"pi-server worker skipped {item}: {type(e).__name__}: {e}", file=sys.stderr)
            return None


def read_frame(f: BinaryIO) -> Any:
    head = f.read(4)
    if len(head) < 4:
        return None
    body = f.read(int.from_bytes(head, "big"))
    return msgspec.msgpack.decode(body)


def write_frame(f: BinaryIO, obj: Any) -> None:
    body = msgspec.msgpack.encode(obj)
    f.write(len(body).to_bytes(4, "big") + body)
    f.flush()


def _watch_parent(parent: int) -> None:
    """Exit when the server is gone, even in the middle of a slow file: never an orphan."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main() -> None:
    try:
        os.nice(10)  # the server's requests go first on a busy machine
    except OSError:
        pass
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    worker = Worker()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the answer pipe
    while True:
        req = read_frame(stdin)
        if req is None:
            return
        worker.dirs = {}
        for i, item in enumerate(req["items"]):
            write_frame(stdout, [i, worker.run(req, item)])


if __name__ == "__main__":
    main()
