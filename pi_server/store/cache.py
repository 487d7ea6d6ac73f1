"""The index cache in the state dir: restarts reuse indexes of files that did not change.

Each session's index is stored (msgpack) with the file's fingerprint — device,
inode, size, mtime, a digest of the first 4 KiB and of the last indexed 4 KiB. On load, a file that only grew reuses the
cache and indexes the appended bytes; anything else (shrunk, rewritten,
replaced, a corrupt or foreign cache file) is rebuilt, never trusted.
A small listing file keeps each session's SessionInfo under the same
fingerprint, so `pi/listSessions` after a restart needs one stat per file.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from pi_server.store import slices
from pi_server.store.packing import pack, unpack
from pi_server.store.state import atomic_write

if TYPE_CHECKING:  # imported where used: a listing from the listing cache needs no index
    from pi_server.store.index import SessionIndex

# 2: entry line numbers; 3: a fingerprint of the indexed prefix; 4: 32-bit arrays; 5: device, head;
# 6: types and roles as codes, parents as positions, call ids apart, the saved view, ids in chunks
FORMAT = 6
HEAD = 4096  # bytes at the start of the file whose digest the cache keeps
# the per-session caches kept (bytes of index/ in all): beyond it the least recently written go first
MAX_CACHE_BYTES = 512 << 20
WARM_MAX = 8  # sessions a restarted server reads back into memory (server/offcore.py: warm_up)
_PRUNE_EVERY = 32  # saves between two measures of the folder
_ARRAYS = ("offsets", "lengths", "lines", "anc_model", "anc_thinking", "anc_compaction")
# ids packed in chunks of CHUNK: decoding a million strings at once held the interpreter lock
# 0.6 s (every other thread of the server waited); a chunk at a time lets them in
CHUNK = 32_768
_PLAIN = (
    "message_count",
    "first_message",
    "last_activity_ms",
    "name",
    "size",
    "irregular",
)
_PRIVATE = ("_line_no", "_ordinal", "_pending", "_skipping", "_tail_hash")


def fingerprint(path: str, entry: os.DirEntry[str] | None = None) -> dict[str, int] | None:
    """Size, mtime and inode of the file (symlinks followed); `entry`: its folder's entry for it."""
    try:
        st = os.stat(path) if entry is None else entry.stat()
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "dev": st.st_dev}


def head_hash(fd: int, size: int) -> bytes:
    """A digest of the file's first bytes (at most `HEAD`, never past `size`)."""
    return hashlib.blake2b(os.pread(fd, min(size, HEAD), 0), digest_size=16).digest()


def _unchunk(chunks: list[bytes]) -> list[Any]:
    """A per-entry list from its packed chunks."""
    out: list[Any] = []
    for chunk in chunks:
        values = unpack(chunk)
        if not isinstance(values, list):
            raise ValueError("not a list")
        out += values
    return out


class IndexCache:
    def __init__(self, state_root: str | Path) -> None:
        self.dir = Path(state_root) / "index"
        self.listing_path = Path(state_root) / "listing.msgpack"
        self._listing: dict[str, Any] | None = None
        self._warm: list[str] = []  # the sessions the daemon had in memory when it stopped (most recent first)
        self._listing_dirty = False  # changed since read or written: a save writes it
        self._saves = 0

    def _file(self, path: str) -> Path:
        return self.dir / (hashlib.sha256(os.fsencode(path)).hexdigest()[:32] + ".msgpack")

    # ---------------------------------------------------------------- per-session index

    def save(self, idx: SessionIndex, view: dict[str, bytes] | None = None) -> None:
        """Write the index (`view`: what the layers above keep with it, tree/saved.py)."""
        if idx.header is None:
            return
        fp = fingerprint(idx.path)
        if fp is None:
            return
        try:
            from pi_server.store.scan import open_regular

            fd = open_regular(idx.path)
            try:
                head = head_hash(fd, idx.size)
            finally:
                os.close(fd)
        except OSError:
            return
        rec: dict[str, Any] = {"format": FORMAT, "path": idx.path, "fingerprint": fp, "indexedSize": idx.size}
        rec["head"] = head
        for name in _PLAIN + _PRIVATE:
            rec[name] = getattr(idx, name)
        rec["ids"] = [pack(idx.ids[i : i + CHUNK]) for i in range(0, len(idx.ids), CHUNK)]
        for name in _ARRAYS:
            rec[name] = getattr(idx, name).tobytes()
        rec.update(_pack_columns(idx))
        if view is not None:
            rec["view"] = view
        rec["flags"] = bytes(idx.flags)
        rec["labels"] = {k: list(v) for k, v in idx.labels.items()}
        rec["tool_dups"] = idx.tool_dups
        rec["diagnostics"] = [[d.line, d.offset, d.length, d.severity, d.code, d.message] for d in idx.diagnostics]
        h = idx.header
        rec["header"] = {
            "id": h.id,
            "version": h.version,
            "timestamp": h.timestamp,
            "cwd": h.cwd,
            "parent_session": h.parent_session,
            "raw": h.raw,
        }
        rec["header_bytes"] = idx._header_bytes
        rec["v1_by_ordinal"] = {str(k): v for k, v in idx._v1_by_ordinal.items()}
        try:
            atomic_write(self._file(idx.path), pack(rec), durable=False)
        except (OSError, TypeError, ValueError, msgspec.EncodeError):
            return  # a cache is an optimisation: never fail a request over it
        if self._saves % _PRUNE_EVERY == 0:
            self.prune()
        self._saves += 1

    def prune(self, limit: int | None = None) -> None:
        """Drop the least recently written session caches beyond `limit` bytes in all."""
        limit = MAX_CACHE_BYTES if limit is None else limit
        try:
            files = [(e.stat().st_mtime_ns, e.stat().st_size, e.path) for e in os.scandir(self.dir) if e.is_file()]
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= limit:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass

    def load(self, path: str, roots: tuple[str, ...] = ()) -> SessionIndex | None:
        """The cached index, brought up to date, or None when it cannot be trusted. `roots`:
        the folders the file must be read within (store/beneath.py)."""
        try:
            rec = unpack(self._file(path).read_bytes())
            return self._restore(path, rec, roots)
        except Exception:  # missing, corrupt, foreign: rebuild
            return None

    def _restore(self, path: str, rec: dict[str, Any], roots: tuple[str, ...] = ()) -> SessionIndex | None:
        if rec.get("format") != FORMAT or rec.get("path") != path:
            return None
        fp, old = fingerprint(path), rec["fingerprint"]
        if fp is None or fp["ino"] != old["ino"] or fp["dev"] != old["dev"] or fp["size"] < old["size"]:
            return None
        if fp["size"] == old["size"] and fp["mtime_ns"] != old["mtime_ns"]:
            return None  # same size, touched: maybe rewritten in place
        from pi_server.store.index import SessionIndex
        from pi_server.store.records import Diagnostic, Header
        from pi_server.store.scan import TAIL, open_regular

        fd = open_regular(path, roots)
        size = rec["indexedSize"]
        try:
            if os.pread(fd, len(rec["header_bytes"]), 0) != rec["header_bytes"]:
                return None
            if size > TAIL and head_hash(fd, size) != rec["head"]:
                return None  # its first 4 KiB were rewritten (a shorter prefix: the tail digest covers it all)
            if size and os.pread(fd, 1, size - 1) != b"\n" and not rec["_skipping"]:
                return None
        finally:
            os.close(fd)
        idx = SessionIndex(path, roots=roots)
        for name in _PLAIN + _PRIVATE:
            setattr(idx, name, rec[name])
        idx.ids = _unchunk(rec["ids"])
        for name in _ARRAYS:
            arr = array(getattr(idx, name).typecode)
            arr.frombytes(rec[name])
            setattr(idx, name, arr)
        n = len(idx.ids)
        if any(len(getattr(idx, a)) != n for a in _ARRAYS) or len(rec["flags"]) != n or not _unpack_columns(idx, rec):
            return None
        idx.flags = bytearray(rec["flags"])
        idx.labels = {k: (v[0], v[1]) for k, v in rec["labels"].items()}
        idx.tool_dups = rec["tool_dups"]
        idx.diagnostics = [Diagnostic(*d) for d in rec["diagnostics"]]
        idx.header = Header(**rec["header"])
        idx._header_bytes = rec["header_bytes"]
        idx._v1_by_ordinal = {int(k): v for k, v in rec["v1_by_ordinal"].items()}
        idx.generation = 1
        idx.refresh()  # only the bytes appended since (all of it if the indexed prefix changed)
        if idx.generation == 1 and isinstance(rec.get("view"), dict):
            idx.saved_view = rec["view"]  # the file is as it was saved: so are its tree and view
        return idx

    # ---------------------------------------------------------------- listing

    def listing(self) -> dict[str, Any]:
        if self._listing is None:
            try:
                data = unpack(self.listing_path.read_bytes())
                ok = isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("sessions"), dict)
                self._listing = data["sessions"] if ok else {}
                warm = data.get("warm") if ok else None
                if isinstance(warm, list):
                    self._warm = [p for p in warm[:WARM_MAX] if isinstance(p, str)]
            except Exception:
                self._listing = {}
        return self._listing

    def cached_info(self, path: str, fp: dict[str, int]) -> dict[str, Any] | None:
        """The SessionInfo kept for the file as it is now (same fingerprint), else None. What
        another writer (or a torn write) left that is not one is ignored: the file is described again."""
        rec = self.listing().get(path)
        if not isinstance(rec, dict) or rec.get("fingerprint") != fp:
            return None
        info = rec.get("info")
        if not isinstance(info, dict) or info.get("session") != path or not isinstance(info.get("modified"), str):
            return None
        if not isinstance(info.get("entryCount"), int) or not isinstance(info.get("_size"), int):
            return None
        return info

    def remember_info(self, path: str, fp: dict[str, int], info: dict[str, Any]) -> None:
        listing = self.listing()
        rec = {"fingerprint": fp, "info": info}
        if listing.get(path) != rec:
            listing[path] = rec
            self._listing_dirty = True

    def warm(self) -> list[str]:
        """The sessions the last daemon had in memory when it stopped, most recently used first."""
        self.listing()
        return list(self._warm)

    def save_listing(self, keep: set[str] | None = None, warm: list[str] | None = None) -> None:
        """Write the listing file (temp file + rename: servers sharing the state dir never read
        half of one) when it changed: files described since, or gone (not in `keep`), or the
        sessions in memory (`warm`, most recently used first)."""
        sessions = self.listing()
        if warm is not None and warm[:WARM_MAX] != self._warm:
            self._warm, self._listing_dirty = warm[:WARM_MAX], True
        if keep is not None:
            for path in [p for p in sessions if p not in keep]:
                del sessions[path]
                self._listing_dirty = True
        if not self._listing_dirty:
            return
        try:
            atomic_write(self.listing_path, pack({"format": FORMAT, "sessions": sessions, "warm": self._warm}), durable=False)
            self._listing_dirty = False
        except (OSError, ValueError, msgspec.EncodeError):
            pass


# ---------------------------------------------------------------- columns
# The index's string columns are where a restore spends its time: 100,000 ids, as many
# parents, types and roles, tens of thousands of tool call ids, and a map from id to
# position. Types and roles are a few distinct strings: kept as codes into a table (each
# string once in memory too). Parents are kept as positions where every parent is an
# entry's id. The map from id to position and the call ids are built on first use (the
# first window after a restart needs neither: SessionIndex.position, tree/saved.py).


def _codes(values: list[Any]) -> tuple[list[Any], bytes]:
    table: dict[Any, int] = {}
    codes = bytes(table.setdefault(v, len(table)) for v in values) if len(set(values)) <= 256 else None
    if codes is None:  # more than 256 distinct: the column as it is
        return list(values), b""
    return list(table), codes


def positions(ids: list[str]) -> dict[str, int]:
    """The map from id to position (a duplicate id: its last entry), built a slice at a time:
    one `dict(zip(...))` over a million ids holds the interpreter lock for 0.3 s and more,
    every other thread (the one answering requests among them) waiting."""
    out: dict[str, int] = {}
    update = out.update
    for part in slices.spans(len(ids)):
        update(zip(ids[part], range(len(ids))[part], strict=True))
    return out


def _pack_columns(idx: SessionIndex) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("types", "roles"):
        table, codes = _codes(getattr(idx, name))
        out[name] = {"table": table, "codes": codes}
    get = idx.by_id.get
    ppos = [-1 if p is None else get(p, -2) for p in idx.parents]
    if -2 in ppos:  # a parent that is no entry's id: kept as it is
        out["parents"] = {"ids": idx.parents}
    else:  # shifted by one: 0 is None
        out["parents"] = {"positions": array("I", [p + 1 for p in ppos]).tobytes()}
    out["call_pos"] = pack(idx.call_pos)
    return out


def _unpack_columns(idx: SessionIndex, rec: dict[str, Any]) -> bool:
    """Set the columns of `_pack_columns` (the map from id to position and the call ids to be
    built on first use); False when they do not fit the index."""
    from pi_server.store.decode import canon

    ids = idx.ids
    n = len(ids)
    for name in ("types", "roles"):
        table, codes = rec[name]["table"], rec[name]["codes"]
        if not codes:
            column = table
        elif len(codes) != n or codes.translate(None, bytes(range(len(table)))):  # a code past the table
            return False
        else:
            shared = [canon(v) for v in table]  # the strings every index shares
            column = slices.mapped(shared.__getitem__, codes)
        if len(column) != n:
            return False
        setattr(idx, name, column)
    parents = rec["parents"]
    if "ids" in parents:
        idx.parents = parents["ids"]
    else:
        ppos = array("I")
        ppos.frombytes(parents["positions"])
        idx.parents = slices.mapped([None, *ids].__getitem__, ppos)  # IndexError: not this index's
    if len(idx.parents) != n:
        return False
    call_pos = rec["call_pos"]
    del idx.by_id, idx.call_pos
    idx._lazy["by_id"] = lambda: positions(ids)
    idx._lazy["call_pos"] = lambda: unpack(call_pos)
    return True
