"""Result shapes of the write methods, typed; field names go out in camelCase."""

from __future__ import annotations

import msgspec


class WriteResult(msgspec.Struct, rename="camel"):
    entry_id: str | None
    queued: bool


class SwitchResult(msgspec.Struct, rename="camel", omit_defaults=True):
    leaf_id: str | None
    queued: bool
    editor_text: str | msgspec.UnsetType = msgspec.UNSET
    summary_entry_id: str | None | msgspec.UnsetType = msgspec.UNSET


class CompactResult(msgspec.Struct, rename="camel"):
    entry_id: str | None
    first_kept_entry_id: str | None
    tokens_before: int
    summary: str
    queued: bool


class ForkResult(msgspec.Struct, rename="camel"):
    session: str


class PromptResult(msgspec.Struct, rename="camel"):
    turn_id: str
    session: str


class AbortResult(msgspec.Struct, rename="camel"):
    aborted: bool
