"""What the index records besides its arrays: the header, diagnostics, flag bits, setting kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_server.store import entry_types as et

CURRENT_VERSION = 3

# flag bits
F_ASSISTANT_TEXT = 1  # assistant message with non-blank text
F_ERRORISH = 2  # assistant stopReason set and not stop/toolUse
F_HAS_CONTENT = 4  # message has a "content" key (pi's isMessageWithContent)


MODEL, THINKING, COMPACTION = 1, 2, 3


def setting_kind(etype: str, role: str | None) -> int:
    """What an entry contributes to pi's settings replay: the model, the thinking level, a compaction."""
    if etype == et.MESSAGE:
        return MODEL if role == "assistant" else 0
    if etype == et.MODEL_CHANGE:
        return MODEL
    if etype == et.THINKING_LEVEL_CHANGE:
        return THINKING
    if etype == et.COMPACTION:
        return COMPACTION
    return 0


class NotASession(Exception):
    """The file does not start with a pi session header."""


@dataclass(slots=True)
class Diagnostic:
    line: int  # 0-based physical line
    offset: int
    length: int
    severity: str  # "error" | "warning" | "info"
    code: str
    message: str



@dataclass(slots=True)
class Header:
    id: str
    version: int
    timestamp: Any
    cwd: str
    parent_session: str | None
    raw: dict[str, Any]
