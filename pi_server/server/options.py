"""initializationOptions: typed once, every field defaulted, resolved in `initialize`.

A bad option is reported to the user (window/showMessage) and replaced by its
default; it never fails the connection.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pi_server.server import params
from pi_server.store.state import default_state_dir

DEFAULT_SUMMARY_TIMEOUT = 120.0
DEFAULT_BUSY_TIMEOUT = 120.0  # seconds after which a pi turn with no write counts as over
DEFAULT_MAX_LIVE_ENTRIES = 100_000  # entries of served sessions kept in memory
DEFAULT_RESERVE_TOKENS = 16384  # pi's compaction defaults
DEFAULT_KEEP_RECENT_TOKENS = 20000


@dataclass(frozen=True, kw_only=True)
class SummarySettings:
    model: str | None = None
    max_tokens: int | None = None  # accepted; pi decides the budget
    timeout: float = DEFAULT_SUMMARY_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class CompactionSettings:
    """pi 1.6.0's getCompactionSettings(model): a model override, else the setting, else pi's default."""

    reserve_tokens: int | None = None
    keep_recent_tokens: int | None = None
    model_overrides: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    def for_model(self, provider: str, model_id: str) -> tuple[int, int]:
        """(reserveTokens, keepRecentTokens) for `provider/model_id`."""
        reserve, keep = self.model_overrides.get(f"{provider}/{model_id}", (None, None))
        reserve = reserve if reserve is not None else self.reserve_tokens
        keep = keep if keep is not None else self.keep_recent_tokens
        return (
            reserve if reserve is not None else DEFAULT_RESERVE_TOKENS,
            keep if keep is not None else DEFAULT_KEEP_RECENT_TOKENS,
        )


@dataclass(frozen=True, kw_only=True)
class AgentSettings:
    retry_base_delay_ms: float | None = None
    max_retries: int | None = None


@dataclass(frozen=True, kw_only=True)
class Options:
    session_dirs: list[str] | None = None
    state_dir: str = field(default_factory=default_state_dir)
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    max_live_entries: int = DEFAULT_MAX_LIVE_ENTRIES
    token: str | None = None
    summary: SummarySettings = field(default_factory=SummarySettings)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)


def resolve(raw: Any, flags: Any) -> tuple[Options, list[str]]:
    """Options from the client's initializationOptions over the server's flags; returns (options, problems)."""
    problems: list[str] = []
    init = _validated(raw if isinstance(raw, dict) else {}, problems)
    s, a = init.summary or params.SummaryOptions(), init.agent or params.AgentOptions()
    opts = Options(
        session_dirs=init.sessionDirs or flags.session_dirs or None,
        state_dir=os.path.expanduser(init.stateDir or flags.state_dir or default_state_dir()),
        busy_timeout=init.busyTimeout or flags.busy_timeout,
        max_live_entries=init.maxLiveEntries or flags.max_live_entries,
        token=init.token,
        summary=SummarySettings(
            model=s.model, max_tokens=s.maxTokens, timeout=float(s.timeout or DEFAULT_SUMMARY_TIMEOUT)
        ),
        compaction=_compaction(init.compaction),
        agent=AgentSettings(retry_base_delay_ms=a.retryBaseDelayMs, max_retries=a.maxRetries),
    )
    return opts, problems


def _compaction(c: params.CompactionOptions | None) -> CompactionSettings:
    if c is None:
        return CompactionSettings()
    overrides = {k: (v.reserveTokens, v.keepRecentTokens) for k, v in (c.modelOverrides or {}).items()}
    return CompactionSettings(
        reserve_tokens=c.reserveTokens, keep_recent_tokens=c.keepRecentTokens, model_overrides=overrides
    )


def _validated(raw: dict[str, Any], problems: list[str]) -> params.InitOptions:
    """Drop each field that does not validate (noting why), keep the rest."""
    data = dict(raw)
    for _ in range(len(data) + 1):
        try:
            return msgspec.convert(data, params.InitOptions, strict=False)
        except msgspec.ValidationError as e:
            where, reason = params.field_error(e, params.InitOptions)
            problems.append(f"initializationOptions.{where}: {reason}; using the default")
            top = where.split(".")[0]
            if top not in data:
                break
            data.pop(top)
    return params.InitOptions()
