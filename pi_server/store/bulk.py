"""Bulk work for the worker processes (server/pool.py starts them as `python -m
pi_server.store.bulk`): which files a searched listing matches, and the first index of
files, saved to the index cache for the server to load.

A worker reads session files and writes nothing but index cache entries (each an
atomic rename, the format of store/cache.py): sessions, leaf pointers and queues are
written by the server alone. Requests and answers are msgpack frames (a 4-byte
length, then the body) on stdin and stdout. Answers go out a few at a time, none held
back longer than a few milliseconds, so the server knows which file a worker was on if
it dies or hangs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, BinaryIO

from pi_server.store.cache import IndexCache, fingerprint
from pi_server.store.discovery import is_within, search_text, session_info, text_matches
from pi_server.store.index import NotASession, SessionIndex
from pi_server.store.packing import pack, unpack

TEXT_BUDGET = 48 << 20  # bytes of search text kept per worker between searches


class Worker:
    def __init__(self) -> None:
        self.caches: dict[str, IndexCache] = {}
        # path -> (fingerprint, search text): a repeated search only stats an unchanged file
        self.texts: dict[str, tuple[tuple[int, int, int], str]] = {}
        self.text_bytes = 0
        self.dirs: dict[str, str] = {}  # folders' real paths, for one request

    def cache(self, state_root: str) -> IndexCache:
        cache = self.caches.get(state_root)
        if cache is None:
            cache = self.caches[state_root] = IndexCache(state_root)
        return cache

    def load(self, path: str, cache: IndexCache, roots: tuple[str, ...] = ()) -> SessionIndex:
        """The file's index: from the cache when it holds, else built and saved there (read
        within `roots`: store/beneath.py)."""
        idx = cache.load(path, roots)
        if idx is None:
            idx = SessionIndex.open(path, roots)
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
        text = search_text(self.load(path, self.cache(state_root), tuple(roots)))
        if known is not None:
            self.text_bytes -= sys.getsizeof(known[1])
            del self.texts[path]
        size = sys.getsizeof(text)  # 1, 2 or 4 bytes a character
        if self.text_bytes + size <= TEXT_BUDGET:
            self.texts[path] = (key, text)
            self.text_bytes += size
        return text_matches(text, tokens)

    def index(self, path: str, state_root: str, roots: tuple[str, ...] = ()) -> dict[str, Any] | None:
        """Index the file into the cache; its SessionInfo and entry count for the server's listing."""
        idx = self.load(path, self.cache(state_root), roots)
        fp = fingerprint(path)
        if fp is None:
            return None
        return {"fp": fp, "info": {**session_info(idx), "_size": idx.size}, "entries": len(idx)}

    def run(self, req: dict[str, Any], item: str) -> Any:
        try:
            if req["op"] == "search":
                return self.search(item, req["tokens"], req["state"], req["roots"])
            return self.index(item, req["state"], tuple(req.get("roots") or ()))
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
    return unpack(body)


def write_frame(f: BinaryIO, obj: Any) -> None:
    body = pack(obj)
    f.write(len(body).to_bytes(4, "big") + body)
    f.flush()


def _watch_parent(parent: int) -> None:
    """Exit when the server is gone, even in the middle of a slow file: never an orphan."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


FLUSH_BEFORE_BYTES = 4 << 20  # a file this large may hold the interpreter lock a while


class Answers:
    """Answers batched into frames (`[[i, answer], ...]`), each of which wakes the server's
    threads (they share an interpreter lock with its requests). None waits longer than
    `flush_s`, even while the next file is slow: a thread sends what is done, so when a
    worker dies or hangs, every answer before the file it was on has reached the server."""

    def __init__(self, out: BinaryIO, flush_s: float) -> None:
        self.out, self.flush_s = out, flush_s
        self.done: list[list[Any]] = []
        self.since = 0.0
        self.lock = threading.Lock()
        self.finished = threading.Event()

    def add(self, i: int, answer: Any, last: bool) -> None:
        with self.lock:
            if not self.done:
                self.since = time.monotonic()
            self.done.append([i, answer])
            if last or self.flush_s <= 0:
                self.flush()

    def flush(self) -> None:
        if self.done:
            write_frame(self.out, self.done)
            self.done = []

    def keep_flushing(self) -> None:
        while not self.finished.wait(self.flush_s / 2):
            with self.lock:
                if self.done and time.monotonic() - self.since >= self.flush_s:
                    self.flush()


def answer_batch(worker: Worker, req: dict[str, Any], out: BinaryIO) -> None:
    """Answer each item of a request; `flushMs` is how long an answer may wait for others
    (0: each goes on its own)."""
    answers = Answers(out, req.get("flushMs", 0) / 1000)
    if answers.flush_s > 0:
        threading.Thread(target=answers.keep_flushing, daemon=True).start()
    items = req["items"]
    try:
        for i, item in enumerate(items):
            # a long read may hold the lock the flusher needs (a known search text is not read)
            if not (req["op"] == "search" and item in worker.texts) and _size(item) >= FLUSH_BEFORE_BYTES:
                with answers.lock:
                    answers.flush()
            answers.add(i, worker.run(req, item), i == len(items) - 1)
    finally:
        answers.finished.set()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


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
        answer_batch(worker, req, stdout)


if __name__ == "__main__":
    main()
