"""One prompt run by the server: pi's agent loop (pi-agent-core agent-loop.js) over a frozen snapshot.

The snapshot (context messages, model, thinking level, tools, system prompt) is
taken when the prompt starts; every model call of the run sends only it plus the
messages of this run. Each message is appended to the file as it completes (the
user message at once), so a crash loses at most the message in flight.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pi_server.agent.stream import call_model, empty_message, strip_scratch
from pi_server.agent.tools import LOCAL_TOOLS, ToolError, error_result, resolve_in_cwd, run_tool
from pi_server.jsutil import js_finite
from pi_server.llm.anthropic import request_body
from pi_server.llm.models import ModelInfo

# pi's AgentSession._isRetryableError
_RETRYABLE = re.compile(
    r"overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|"
    r"server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|"
    r"websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|"
    r"socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay",
    re.IGNORECASE,
)
ABORTED = "Request was aborted"


@dataclass
class Snapshot:
    messages: list[dict[str, Any]]  # convertToLlm of the leaf's context
    model: ModelInfo
    thinking: str
    tools: list[str]
    system: dict[str, Any] | None  # the system message recorded before the user message (None: unchanged)
    cwd: str


@dataclass
class RetrySettings:
    max_retries: int = 3
    base_delay_ms: float = 2000


@dataclass
class Hooks:
    """What the turn needs from the server, kept abstract so the loop has one job."""

    emit: Callable[[dict[str, Any]], None]
    append: Callable[[dict[str, Any]], Awaitable[str]]  # writes a message entry, returns its id
    turn_end: Callable[[], Awaitable[None]]  # flush queued writes, save point
    execute_remote: Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]
    omit: Callable[[str], Awaitable[None]]  # appends a context_edit leaving an entry out of later contexts


@dataclass
class Turn:
    turn_id: str
    snap: Snapshot
    key: str | None
    hooks: Hooks
    retry: RetrySettings = field(default_factory=RetrySettings)
    written: bool = False  # the system and user messages are already in the file (a new session's first write)
    aborted: asyncio.Event = field(default_factory=asyncio.Event)
    pending_settings: list[dict[str, Any]] = field(default_factory=list)  # model/thinking asked for mid-turn
    messages: list[dict[str, Any]] = field(default_factory=list)  # this run's messages
    last_id: str | None = None  # entry id of the last assistant message written

    def body(self) -> dict[str, Any]:
        """The request body built from the transcript: its system messages carry the prompt and tools."""
        llm = self.snap.messages + self.messages
        body, _ = request_body(llm, [""] * len(llm), self.snap.model, self.snap.thinking)
        return body

    async def _abortable(self, coro: Awaitable[Any]) -> tuple[bool, Any]:
        """Run coro unless an abort comes first: (finished, result)."""
        task = asyncio.ensure_future(coro)
        stop = asyncio.ensure_future(self.aborted.wait())
        done, _ = await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            stop.cancel()
            return True, task.result()
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        return False, None

    async def _message(self, msg: dict[str, Any], *, write: bool = True) -> None:
        self.hooks.emit({"type": "message_start", "message": msg})
        if write:
            await self.hooks.append(msg)
        self.hooks.emit({"type": "message_end", "message": msg})

    async def _assistant(self) -> dict[str, Any]:
        out = empty_message(self.snap.model.id)
        started = False
        t0 = time.monotonic()

        async def on(ev: dict[str, Any]) -> None:
            nonlocal started
            if ev["type"] == "start":
                started = True
                self.hooks.emit({"type": "message_start", "message": dict(out)})
            elif ev["type"] not in ("done", "error"):
                self.hooks.emit({"type": "message_update", "assistantMessageEvent": ev, "message": dict(out)})

        if self.key is None:
            out["stopReason"], out["errorMessage"] = "error", "No API key found for anthropic"
        else:
            finished, _ = await self._abortable(call_model(self.body, self.key, out, on))
            if not finished:
                strip_scratch(out)
                out["stopReason"], out["errorMessage"] = "aborted", ABORTED
        if not started:
            self.hooks.emit({"type": "message_start", "message": dict(out)})
        out["durationMs"] = round((time.monotonic() - t0) * 1000)
        out["thinkingLevel"] = self.snap.thinking  # pi-agent-core records the requested level
        self.last_id = await self.hooks.append(out)
        self.hooks.emit({"type": "message_end", "message": out})
        return out

    async def _tool(self, call: dict[str, Any]) -> dict[str, Any]:
        name, args = call.get("name"), call.get("arguments") or {}
        t0 = time.monotonic()
        self.hooks.emit({"type": "tool_execution_start", "toolCallId": call.get("id"), "toolName": name, "args": args})
        if name not in self.snap.tools:
            result, is_error = error_result(f"Tool {name} not found"), True
        elif name in LOCAL_TOOLS:
            finished, res = await self._abortable(run_tool(name, args, self.snap.cwd))
            result, is_error = res if finished else (error_result("Operation aborted"), True)
        else:
            result, is_error = await self._remote(call)
        self.hooks.emit(
            {
                "type": "tool_execution_end",
                "toolCallId": call.get("id"),
                "toolName": name,
                "result": result,
                "isError": is_error,
            }
        )
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call.get("id"),
            "toolName": name,
            "content": result.get("content") or [],
        }
        if result.get("details") is not None:
            msg["details"] = result["details"]
        msg["isError"] = is_error
        msg["durationMs"] = round((time.monotonic() - t0) * 1000)
        msg["timestamp"] = int(time.time() * 1000)
        await self._message(msg)
        return msg

    async def _remote(self, call: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        args = call.get("arguments") or {}
        try:
            if isinstance(args.get("path"), str):
                resolve_in_cwd(args["path"], self.snap.cwd)  # refused before the client sees it
            finished, reply = await self._abortable(
                self.hooks.execute_remote(call.get("id") or "", call.get("name") or "", args)
            )
        except ToolError as e:
            return error_result(str(e)), True
        except Exception as e:  # the client refused or failed: the model sees why
            return error_result(str(getattr(e, "message", None) or e) or "tool failed"), True
        if not finished:
            return error_result("Operation aborted"), True
        if not isinstance(reply, dict) or not isinstance(reply.get("content"), list):
            return error_result("the client's tool result has no content"), True
        reply = js_finite(reply)  # a client's `1e400`: null, as pi would write it
        result = {"content": reply["content"]}
        if reply.get("details") is not None:
            result["details"] = reply["details"]
        return result, bool(reply.get("isError"))

    async def _loop(self) -> dict[str, Any]:
        """pi's runLoop: model call, tool round trips, until the model stops asking for tools."""
        first = True
        while True:
            if not first:
                self.hooks.emit({"type": "turn_start"})
            first = False
            msg = await self._assistant()
            self.messages.append(msg)
            if msg["stopReason"] in ("error", "aborted"):
                self.hooks.emit({"type": "turn_end", "message": msg, "toolResults": []})
                await self.hooks.turn_end()
                return msg
            calls = [b for b in msg["content"] if b.get("type") == "toolCall"]
            results = []
            for call in calls:
                if self.aborted.is_set():
                    break
                results.append(await self._tool(call))
                self.messages.append(results[-1])
            self.hooks.emit({"type": "turn_end", "message": msg, "toolResults": results})
            await self.hooks.turn_end()
            if not calls or self.aborted.is_set():
                return msg

    async def run(self, user: dict[str, Any]) -> None:
        """pi's agent loop plus AgentSession's auto-retry on overload, rate limits and 5xx."""
        self.hooks.emit({"type": "agent_start"})
        self.hooks.emit({"type": "turn_start"})
        if self.snap.system is not None:  # pi's system patch goes before the user message
            await self._message(self.snap.system, write=not self.written)
            self.messages.append(self.snap.system)
        await self._message(user, write=not self.written)
        self.messages.append(user)
        attempt = 0
        while True:
            last = await self._loop()
            self.hooks.emit({"type": "agent_end", "messages": list(self.messages)})
            if attempt and last["stopReason"] != "error":
                self.hooks.emit({"type": "auto_retry_end", "success": True, "attempt": attempt})
            if not (last["stopReason"] == "error" and _RETRYABLE.search(last.get("errorMessage") or "")):
                return
            attempt += 1
            if attempt > self.retry.max_retries:
                self.hooks.emit(
                    {
                        "type": "auto_retry_end",
                        "success": False,
                        "attempt": attempt - 1,
                        "finalError": last.get("errorMessage"),
                    }
                )
                return
            delay = self.retry.base_delay_ms * 2 ** (attempt - 1)
            self.hooks.emit(
                {
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": self.retry.max_retries,
                    "delayMs": delay,
                    "errorMessage": last.get("errorMessage") or "Unknown error",
                }
            )
            self.messages.pop()  # the failed message stays in the file, not in the context (as pi)
            if self.last_id is not None:
                await self.hooks.omit(self.last_id)  # pi's _omitRecoveryAttempt: a context_edit for it
            finished, _ = await self._abortable(asyncio.sleep(delay / 1000))
            if not finished:
                self.hooks.emit(
                    {"type": "auto_retry_end", "success": False, "attempt": attempt, "finalError": "Retry cancelled"}
                )
                return
            self.hooks.emit({"type": "agent_start"})
            self.hooks.emit({"type": "turn_start"})


