"""pi's settings replay (getSessionContextSettings): the model, thinking level and last
compaction in effect at a point of the tree. Every caller asks here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pi_server.store import entry_types as et
from pi_server.store.index import SessionIndex
from pi_server.store.records import COMPACTION, MODEL, THINKING, setting_kind
from pi_server.tree.paths import path_to


@dataclass(slots=True)
class Settings:
    model: dict[str, Any] | None = None
    thinking_level: Any = "off"
    compaction: dict[str, Any] | None = None  # the last compaction entry on the path


def replay(path: Iterable[dict[str, Any]]) -> Settings:
    """Walk entries root → leaf as pi does: the last of each kind wins."""
    out = Settings()
    for e in path:
        t = e.get("type")
        if t == et.MESSAGE:
            m = e.get("message")
            if type(m) is dict and m.get("role") == "assistant":
                out.model = model_ref(m.get("provider"), m.get("model"))
        elif t == et.THINKING_LEVEL_CHANGE:
            out.thinking_level = e.get("thinkingLevel")
        elif t == et.MODEL_CHANGE:
            out.model = model_ref(e.get("provider"), e.get("modelId"))
        elif t == et.COMPACTION:
            out.compaction = e
    return out


def model_ref(provider: Any, model_id: Any) -> dict[str, Any]:
    """`{provider, modelId}` as pi reports it (absent fields left out, as JSON drops undefined)."""
    m: dict[str, Any] = {}
    if provider is not None:
        m["provider"] = provider
    if model_id is not None:
        m["modelId"] = model_id
    return m


def last_of_each_kind(idx: SessionIndex, path: list[int]) -> tuple[int, int, int]:
    """Indexes into `path` of the last model, thinking and compaction entry (-1: none)."""
    types, roles = idx.types, idx.roles
    last = [-1, -1, -1]
    for i, pos in enumerate(path):
        kind = setting_kind(types[pos], roles[pos])
        if kind:
            last[kind - 1] = i
    return last[MODEL - 1], last[THINKING - 1], last[COMPACTION - 1]


def setting_positions(idx: SessionIndex, leaf: int) -> list[int]:
    """Index positions of the entries that decide the settings at `leaf`, in path order."""
    if not idx.irregular:
        found = {idx.anc_model[leaf], idx.anc_thinking[leaf], idx.anc_compaction[leaf]}
        return sorted(p for p in found if p >= 0)
    path = path_to(idx, leaf)
    return sorted(path[i] for i in last_of_each_kind(idx, path) if i >= 0)


def settings_at(idx: SessionIndex, leaf_id: str | None) -> Settings:
    """The settings at a leaf (None or unknown: pi's defaults), reading only the deciding entries."""
    if leaf_id is None or leaf_id not in idx.by_id:
        return Settings()
    return replay(idx.cached_entries(setting_positions(idx, idx.by_id[leaf_id])))
