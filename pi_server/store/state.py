"""What the server keeps in its state directory: leaf pointers and pending writes.

Every file is written atomically (temp file + rename), so a crash leaves the
previous version, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "pi-server")


def atomic_write(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """Temp file + rename. `durable` also fsyncs (not needed for caches, which are rebuilt if torn)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_json(path: Path, default: Any) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return default  # missing or corrupt: start over, never trust it


class StateDir:
    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._leaves_path = self.root / "leaves.json"
        leaves = _read_json(self._leaves_path, {})
        self._leaves: dict[str, dict[str, Any]] = leaves if isinstance(leaves, dict) else {}

    # leaf pointers: {session: {"leafId": id | None, "size": bytes of the file when set}}

    def leaf(self, session: str) -> dict[str, Any] | None:
        v = self._leaves.get(session)
        return v if isinstance(v, dict) and "leafId" in v else None

    def set_leaf(self, session: str, leaf_id: str | None, size: int) -> None:
        self._leaves[session] = {"leafId": leaf_id, "size": size}
        atomic_write(self._leaves_path, json.dumps(self._leaves, indent=1).encode())

    def forget_leaf(self, session: str) -> None:
        if self._leaves.pop(session, None) is not None:
            atomic_write(self._leaves_path, json.dumps(self._leaves, indent=1).encode())

    # pending writes, one file per session

    def _pending_path(self, session: str) -> Path:
        return self.root / "pending" / (hashlib.sha256(session.encode()).hexdigest()[:24] + ".json")

    def pending(self, session: str) -> list[dict[str, Any]]:
        data = _read_json(self._pending_path(session), {})
        ops = data.get("ops") if isinstance(data, dict) and data.get("session") == session else None
        return ops if isinstance(ops, list) else []

    def set_pending(self, session: str, ops: list[dict[str, Any]]) -> None:
        path = self._pending_path(session)
        if not ops:
            if path.exists():
                path.unlink()
            return
        atomic_write(path, json.dumps({"session": session, "ops": ops}).encode())

    def sessions_with_pending(self) -> list[str]:
        out = []
        folder = self.root / "pending"
        if folder.is_dir():
            for p in folder.glob("*.json"):
                data = _read_json(p, {})
                if isinstance(data, dict) and isinstance(data.get("session"), str) and data.get("ops"):
                    out.append(data["session"])
        return out
