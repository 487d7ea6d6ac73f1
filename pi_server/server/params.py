"""Request parameters, validated with pydantic; a bad one is -32602 naming the field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Filter = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
Format = Literal["agent", "llm", "anthropic", "openai"]


class Params(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ListSessions(Params):
    cwd: str | None = None
    query: str | None = None
    limit: int | None = Field(default=None, ge=0)


class GetTree(Params):
    session: str
    filter: Filter = "default"
    search: str | None = None
    folded: list[str] = Field(default_factory=list)
    leafId: str | None = None
    offset: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=0)


class GetEntry(Params):
    session: str
    id: str


class BuildContext(Params):
    session: str
    leafId: str | None = None
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
    fromId: str | None = None
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
    leafId: str | None = None


class Compact(Params):
    session: str
    customInstructions: str | None = None


ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


class Image(Params):
    type: Literal["image"] = "image"
    data: str
    mimeType: str


class Prompt(Params):
    session: str | None = None
    cwd: str | None = None
    text: str
    images: list[Image] = Field(default_factory=list)


class Abort(Params):
    session: str


class SetModel(Params):
    session: str
    provider: str
    modelId: str


class SetThinkingLevel(Params):
    session: str
    level: ThinkingLevel


class AgentOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    retryBaseDelayMs: float | None = Field(default=None, ge=0)
    maxRetries: int | None = Field(default=None, ge=0)


class SummaryOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    maxTokens: int | None = None
    timeout: float | None = Field(default=None, gt=0)


class CompactionBudget(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reserveTokens: int | None = Field(default=None, ge=0)
    keepRecentTokens: int | None = Field(default=None, ge=0)


class CompactionOptions(CompactionBudget):
    """pi's compaction settings; `modelOverrides["provider/modelId"]` win for that model."""

    modelOverrides: dict[str, CompactionBudget] | None = None


class InitOptions(BaseModel):
    """initializationOptions (all optional)."""

    model_config = ConfigDict(extra="ignore")
    sessionDirs: list[str] | None = None
    stateDir: str | None = None
    summary: SummaryOptions | None = None
    compaction: CompactionOptions | None = None
    agent: AgentOptions | None = None
    token: str | None = None
    busyTimeout: float | None = Field(default=None, gt=0)
    maxLiveEntries: int | None = Field(default=None, ge=1)
