"""The one way pi-server talks to Anthropic: key, base URL, SDK client, error wording.

The key comes from ANTHROPIC_API_KEY, else from pi's own auth.json in the
agent dir when it holds an Anthropic API key; it is never logged or returned,
and `redact` takes it out of any message built from an SDK error.

One SDK client (one connection pool) is kept per event loop, key and base URL
and reused by every call; the SDK's own retries (summaries) or none (the
harness, which retries as pi does) are picked per call from that client, and
each call passes its own timeout. A call that is cancelled (an abort) closes
its stream, not the shared client.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import sys
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pi_server.llm.encode import json_bytes
from pi_server.store.discovery import agent_dir

log = logging.getLogger("pi_server")

if TYPE_CHECKING:
    import anthropic

# per loop: an httpx pool cannot outlive the loop it was opened on
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None, int], Any]] = (
    weakref.WeakKeyDictionary()
)


def api_key() -> str | None:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    try:
        with open(os.path.join(agent_dir(), "auth.json")) as f:
            auth = json.load(f)
    except (OSError, ValueError):
        return None
    entry = auth.get("anthropic") if isinstance(auth, dict) else None
    if isinstance(entry, dict) and entry.get("type") == "api_key" and isinstance(entry.get("key"), str):
        return entry["key"]
    return None


def base_url(override: str | None = None) -> str | None:
    """The caller's URL, else ANTHROPIC_BASE_URL, else the SDK's default (None)."""
    return override or os.environ.get("ANTHROPIC_BASE_URL") or None


def redact(message: str, key: str | None) -> str:
    return message.replace(key, "[key]") if key else message


async def client_for(key: str, url: str | None = None, *, max_retries: int = 0) -> anthropic.AsyncAnthropic:
    """The shared SDK client of the running loop for this key and base URL (made on first use,
    off the event loop: making one loads the system's certificates, 0.1 s held)."""
    import anthropic

    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    url = base_url(url)
    found = clients.get((key, url, max_retries))
    if found is None:
        base = clients.get((key, url, 0))
        if base is None:
            made = await asyncio.to_thread(anthropic.AsyncAnthropic, api_key=key, base_url=url, max_retries=0)
            base = clients.setdefault((key, url, 0), made)  # one made meanwhile is the one kept
        # with_options shares the base client's connection pool
        found = clients[(key, url, max_retries)] = base.with_options(max_retries=max_retries)
    return found


async def _loaded() -> None:
    """Import the SDK off the event loop: its first import takes seconds, and every other
    client of the server would wait behind it."""
    if any(name not in sys.modules for name in _SDK_MODULES):
        await asyncio.to_thread(_import_and_warm)


def _import_and_warm() -> None:
    """The SDK's modules imported, and the validators of its stream's events and content
    blocks built: the SDK builds each at the first one it reads, on the event loop (0.1-0.2 s
    held)."""
    for name in _SDK_MODULES:
        importlib.import_module(name)
    try:
        from anthropic._models import construct_type  # what the stream calls for each event and block
        from anthropic.types.beta import BetaRawMessageStreamEvent
        from anthropic.types.beta.parsed_beta_message import ParsedBetaContentBlock

        construct_type(type_=BetaRawMessageStreamEvent, value={"type": "message_stop"})
        construct_type(type_=ParsedBetaContentBlock, value={"type": "text", "text": ""})
    except Exception:  # noqa: BLE001 - a warm-up only: the first event builds them as before
        log.debug("the SDK's stream validators were not built ahead", exc_info=True)


# every SDK module a call imports: one imported on the loop at the first call held it 1.7 s
_SDK_MODULES = ("anthropic", "anthropic.lib.streaming", "anthropic.types.beta")


def _wire(body: dict[str, Any]) -> bytes:
    """The body's JSON as the SDK's own messages calls would send it: `betas` go out as the
    anthropic-beta header, and the request streams. Made in a worker thread (encode.py)."""
    return json_bytes({**{k: v for k, v in body.items() if k != "betas"}, "stream": True})


def _headers(body: dict[str, Any], helper: bool) -> dict[str, str]:
    # the headers the SDK's beta.messages.create (and, `helper`, its stream helper) add
    headers = {"x-stainless-helper-method": "stream", "x-stainless-stream-helper": "beta.messages"} if helper else {}
    if "betas" in body:
        headers["anthropic-beta"] = ",".join(str(b) for b in body["betas"])
    return headers


async def _post(body: dict[str, Any], client: Any, timeout: float, helper: bool = False) -> Any:
    """POST the body, encoded off the event loop, to the beta Messages endpoint; the SDK's
    stream of raw events. The SDK no longer transforms nor encodes the params: for a prompt of
    tens of megabytes that held the event loop, and every other client with it, for a second."""
    from anthropic import AsyncStream
    from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent

    content = await asyncio.to_thread(_wire, body)
    # the query marks the beta endpoint as pi's JS SDK does
    options = {"params": {"beta": "true"}, "headers": _headers(body, helper), "timeout": timeout}
    return await client.post(
        "/v1/messages",
        cast_to=BetaMessage,
        content=content,
        options=options,
        stream=True,
        stream_cls=AsyncStream[BetaRawMessageStreamEvent],
    )


async def stream_text(
    body: dict[str, Any],
    key: str,
    *,
    url: str | None = None,
    timeout: float,
    max_retries: int,
    on_text: Callable[[str], None] | None = None,
) -> Any:
    """Stream `body` with the SDK's message helper; returns the final message."""
    await _loaded()
    from anthropic.lib.streaming import BetaAsyncMessageStreamManager

    client = await client_for(key, url, max_retries=max_retries)
    async with BetaAsyncMessageStreamManager(_post(body, client, timeout, helper=True)) as stream:
        async for text in stream.text_stream:
            if on_text is not None:
                on_text(text)
        return await stream.get_final_message()


@asynccontextmanager
async def stream_events(body: dict[str, Any], key: str, *, timeout: float, max_retries: int) -> AsyncIterator[Any]:
    """The raw server-sent events of `body`; the stream is closed on exit, also on cancellation."""
    await _loaded()
    # the beta endpoint, as pi-ai's: it takes the body's `betas` (interleaved thinking, inline tools)
    stream = await _post(body, await client_for(key, max_retries=max_retries), timeout)
    try:
        yield stream
    finally:
        await stream.close()


def error_text(e: Exception) -> str:
    """The message pi's JS SDK would give (`<status> <body>`), so its retry rules see the same words."""
    import anthropic

    if isinstance(e, anthropic.APIStatusError):
        body = e.body if e.body is not None else e.message
        return f"{e.status_code} {json.dumps(body) if not isinstance(body, str) else body}"
    if isinstance(e, anthropic.APITimeoutError):
        return "Request timed out."
    if isinstance(e, anthropic.APIConnectionError):
        return "Connection error."
    return str(e) or type(e).__name__


def plain_error(e: Exception, timeout: float) -> str | None:
    """A short sentence for an SDK error (None when `e` is not one): status and the API's own message."""
    import anthropic

    if isinstance(e, anthropic.APIStatusError):
        return f"Anthropic API error {e.status_code}: {_detail(e)}"
    if isinstance(e, anthropic.APITimeoutError):
        return f"Anthropic API timed out after {timeout:g} s"
    if isinstance(e, anthropic.APIConnectionError):
        return f"cannot reach the Anthropic API: {e}"
    return None


def _detail(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
    return getattr(e, "message", "") or "request failed"
