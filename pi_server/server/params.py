"""Request parameters as msgspec Structs; a bad one is -32602 naming the field (see rpc.parse).

Unknown fields are ignored (msgspec's default). A field whose omission means
"the session's own" (`leafId`, `fromId`) defaults to `UNSET`, so `null` (before
the first entry) and omitted stay distinct.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from msgspec import UNSET, Meta, Struct, UnsetType, ValidationError
from msgspec.structs import fields

__all__ = ["UNSET", "UnsetType"]  # re-exported for the methods that ask "given or omitted?"

Filter = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
Format = Literal["agent", "llm", "anthropic", "openai"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
NonNegative = Annotated[int, Meta(ge=0)]


class Params(Struct):
    """Base of every pi/* method's params and of the options."""


class ListSessions(Params):
    cwd: str | None = None
    query: str | None = None
    limit: NonNegative | None = None


class GetTree(Params):
    session: str
    filter: Filter = "default"
    search: str | None = None
    folded: list[str] = []
    leafId: str | None | UnsetType = UNSET
    offset: NonNegative = 0
    limit: NonNegative | None = None
    sharedGutters: bool = False


class GetEntry(Params):
    session: str
    id: str


class BuildContext(Params):
    session: str
    leafId: str | None | UnsetType = UNSET
    format: Format = "agent"


class SwitchBranch(Params):
    session: str
    targetId: str | None
    summarize: bool = False
    customInstructions: str | None = None
    replaceInstructions: bool = False
    label: str | None = None
    persist: bool = False


class SummarizeBranch(Params):
    session: str
    targetId: str | None
    fromId: str | None | UnsetType = UNSET
    customInstructions: str | None = None
    replaceInstructions: bool = False


class SetLabel(Params):
    session: str
    targetId: str
    label: str | None = None


class SetSessionName(Params):
    session: str
    name: str


class Fork(Params):
    session: str
    leafId: str


class EditContext(Params):
    session: str
    targetId: str
    replacement: dict[str, Any] | None


class GetContextEdits(Params):
    session: str
    leafId: str | None | UnsetType = UNSET


class Compact(Params):
    session: str
    customInstructions: str | None = None


class Image(Params, kw_only=True):  # keyword-only: `data` follows a defaulted field
    type: Literal["image"] = "image"
    data: str
    mimeType: str


class Prompt(Params, kw_only=True):
    session: str | None = None
    cwd: str | None = None
    text: str
    images: list[Image] = []


class Abort(Params):
    session: str


class SetModel(Params):
    session: str
    provider: str
    modelId: str


class SetThinkingLevel(Params):
    session: str
    level: ThinkingLevel


class AgentOptions(Params):
    retryBaseDelayMs: Annotated[float, Meta(ge=0)] | None = None
    maxRetries: NonNegative | None = None


class SummaryOptions(Params):
    model: str | None = None
    maxTokens: int | None = None
    timeout: Annotated[float, Meta(gt=0)] | None = None


class CompactionBudget(Params):
    reserveTokens: NonNegative | None = None
    keepRecentTokens: NonNegative | None = None


class CompactionOptions(CompactionBudget):
    """pi's compaction settings; `modelOverrides["provider/modelId"]` win for that model."""

    modelOverrides: dict[str, CompactionBudget] | None = None


class InitOptions(Params):
    """initializationOptions (all optional)."""

    sessionDirs: list[str] | None = None
    stateDir: str | None = None
    summary: SummaryOptions | None = None
    compaction: CompactionOptions | None = None
    agent: AgentOptions | None = None
    token: str | None = None
    busyTimeout: Annotated[float, Meta(gt=0)] | None = None
    maxLiveEntries: Annotated[int, Meta(ge=1)] | None = None


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")


def field_error(err: ValidationError, model: type | None = None) -> tuple[str, str]:
    """(where, reason) from msgspec's "<reason> - at `$.a[0].b`": where is "a.0.b" ("" for the whole)."""
    m = _AT.match(str(err))
    msg, path = (m["msg"], m["path"] or "") if m else (str(err), "")
    where = [p for p in re.split(r"[.\[\]]+", path.replace("[...]", ".*")) if p]  # [...]: a dict's key
    missing = _MISSING.match(msg)
    if missing:
        return ".".join([*where, missing["name"]]), "field required"
    reason = msg.replace("`", "")
    reason = reason[:1].lower() + reason[1:]
    if model is not None and len(where) == 1 and reason.startswith("invalid enum value"):
        reason += _choices(model, where[0])
    return ".".join(where), reason


def _choices(model: type, name: str) -> str:
    # msgspec names the bad value, not the good ones: list them from the field's Literal
    for f in fields(model):
        if f.encode_name == name:
            args = [a for t in (get_args(f.type) or (f.type,)) for a in get_args(t) or (t,)]
            good = [a for a in args if isinstance(a, str)]
            return f" (one of {', '.join(good)})" if good else ""
    return ""


class LiveState(Params):
    """What a pi holding a session says of itself (pi/live/register, pi/live/update)."""

    session: str
    pid: int
    leafId: str | None = None
    streaming: bool = False
    model: str | None = None
    thinkingLevel: str | None = None


class LiveWithdraw(Params):
    session: str


class Search(Params):
    query: str
    limit: Annotated[int, Meta(ge=0, le=1000)] = 50
    offset: NonNegative = 0
    sessions: list[str] | None = None
    roles: list[str] | None = None
    since: str | None = None
