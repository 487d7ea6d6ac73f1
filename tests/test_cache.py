"""The index cache: reused only for files that did not change, else rebuilt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from test_index import _a_session, _snapshot

from pi_server.store.cache import IndexCache
from pi_server.store.index import SessionIndex


def _setup(oracle: dict[str, Any], tmp_path: Path) -> tuple[Path, bytes, IndexCache]:
    data = _a_session(oracle).read_bytes()
    f = tmp_path / "s.jsonl"
    f.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    return f, data, IndexCache(tmp_path / "state")


def test_unchanged_file_loads_equal(oracle: dict[str, Any], tmp_path: Path) -> None:
    f, _, cache = _setup(oracle, tmp_path)
    idx = SessionIndex.open(str(f))
    cache.save(idx)
    got = cache.load(str(f))
    assert got is not None and _snapshot(got) == _snapshot(idx)
    assert list(got.anc_compaction) == list(idx.anc_compaction) and got.by_id == idx.by_id


def test_grown_file_indexes_only_the_new_bytes(oracle: dict[str, Any], tmp_path: Path, decoded_bytes) -> None:
    f, data, cache = _setup(oracle, tmp_path)
    cache.save(SessionIndex.open(str(f)))
    old = f.stat().st_size
    f.write_bytes(data)
    decoded_bytes.clear()
    got = cache.load(str(f))
    assert got is not None and sum(decoded_bytes) <= len(data) - old
    assert _snapshot(got) == _snapshot(SessionIndex.open(str(f)))


def test_changed_files_and_bad_caches_are_rebuilt(oracle: dict[str, Any], tmp_path: Path) -> None:
    f, data, cache = _setup(oracle, tmp_path)
    cache.save(SessionIndex.open(str(f)))
    # shrunk
    f.write_bytes(f.read_bytes()[:-10].rsplit(b"\n", 1)[0] + b"\n")
    assert cache.load(str(f)) is None
    # rewritten, same size
    cache.save(SessionIndex.open(str(f)))
    text = f.read_bytes()
    f.write_bytes(text.replace(b'"user"', b'"resu"', 1))
    os.utime(f, ns=(1, 1))
    assert cache.load(str(f)) is None
    # replaced by another file (new inode)
    cache.save(SessionIndex.open(str(f)))
    other = tmp_path / "other.jsonl"
    shutil.copy(f, other)
    os.replace(other, f)
    assert cache.load(str(f)) is None
    # corrupt cache file
    cache.save(SessionIndex.open(str(f)))
    for p in cache.dir.iterdir():
        p.write_bytes(b"\x00garbage")
    assert cache.load(str(f)) is None
    # a cache for another path is not used
    cache.save(SessionIndex.open(str(f)))
    g = tmp_path / "g.jsonl"
    shutil.copy(f, g)
    assert cache.load(str(g)) is None


def test_a_rewrite_of_the_first_4_kib_in_place_is_not_trusted(oracle: dict[str, Any], tmp_path: Path) -> None:
    f, _data, cache = _setup(oracle, tmp_path)
    text = f.read_bytes()
    header_end = text.index(b"\n") + 1
    at = text.index(b'"user"', header_end)
    assert at < 4096  # within the first 4 KiB, after the header line, far from the indexed end
    cache.save(SessionIndex.open(str(f)))
    st = f.stat()
    with open(f, "r+b") as fh:  # same size, same inode, same mtime: only the bytes differ
        fh.seek(at)
        fh.write(b'"resu"')
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.load(str(f)) is None


def test_a_cache_of_another_device_or_format_is_not_trusted(oracle: dict[str, Any], tmp_path: Path) -> None:
    import msgspec

    f, _data, cache = _setup(oracle, tmp_path)
    cache.save(SessionIndex.open(str(f)))
    assert cache.load(str(f)) is not None
    cached = cache._file(str(f))
    rec = msgspec.msgpack.decode(cached.read_bytes())
    for change in ({"fingerprint": {**rec["fingerprint"], "dev": rec["fingerprint"]["dev"] + 1}}, {"format": 4}):
        cached.write_bytes(msgspec.msgpack.encode({**rec, **change}))
        assert cache.load(str(f)) is None


def test_the_cache_is_bounded_oldest_dropped_first(oracle: dict[str, Any], tmp_path: Path) -> None:
    f, _data, cache = _setup(oracle, tmp_path)
    paths = []
    for i in range(4):
        g = tmp_path / f"s{i}.jsonl"
        shutil.copy(f, g)
        cache.save(SessionIndex.open(str(g)))
        os.utime(cache._file(str(g)), ns=(i * 10**9, i * 10**9))  # written in this order
        paths.append(str(g))
    one = cache._file(paths[0]).stat().st_size
    cache.prune(limit=2 * one + one // 2)
    assert [cache.load(p) is not None for p in paths] == [False, False, True, True]


def test_a_large_index_is_cached_in_chunks_and_loads_equal(tmp_path: Path) -> None:
    """Ids are packed a chunk at a time (types, roles and parents as codes and positions): decoding
    a million strings in one call held the interpreter lock 0.6 s, every other thread of the server
    waiting."""
    from test_long_calls import _chain

    from pi_server.store.cache import CHUNK
    from pi_server.store.packing import unpack

    f = tmp_path / "s.jsonl"
    _chain(f, 2 * CHUNK + 5)
    cache = IndexCache(tmp_path / "state")
    idx = SessionIndex.open(str(f))
    cache.save(idx)
    rec = unpack(cache._file(str(f)).read_bytes())
    chunks = [unpack(c) for c in rec["ids"]]
    assert [len(c) for c in chunks] == [CHUNK, CHUNK, 5]
    got = cache.load(str(f))
    assert got is not None and _snapshot(got) == _snapshot(idx) and got.by_id == idx.by_id
    assert got.types == idx.types and got.roles == idx.roles and len({id(t) for t in got.types}) == 1
