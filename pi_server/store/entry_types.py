"""The `type` of each line of a pi session file: the header's and those of pi 1.6.0's
SessionEntry union (session-manager's SessionMessageEntry, ThinkingLevelChangeEntry, ...)."""

from __future__ import annotations

SESSION = "session"  # the header
MESSAGE = "message"
THINKING_LEVEL_CHANGE = "thinking_level_change"
MODEL_CHANGE = "model_change"
USAGE = "usage"
COMPACTION = "compaction"
BRANCH_SUMMARY = "branch_summary"
CUSTOM = "custom"
CUSTOM_MESSAGE = "custom_message"
CONTEXT_EDIT = "context_edit"
LABEL = "label"
SESSION_INFO = "session_info"

ENTRY_TYPES = frozenset(
    (
        MESSAGE,
        THINKING_LEVEL_CHANGE,
        MODEL_CHANGE,
        USAGE,
        COMPACTION,
        BRANCH_SUMMARY,
        CUSTOM,
        CUSTOM_MESSAGE,
        CONTEXT_EDIT,
        LABEL,
        SESSION_INFO,
    )
)
