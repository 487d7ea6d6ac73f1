"""Live sessions: pis (with pi-server's extension) saying which session they hold, and the
editors' writes on such a session handed to that pi (docs/protocol.md "Live sessions")."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from pi_server.server import errors, notify, params
from pi_server.server.host import Host
from pi_server.server.livepi import LivePi, LivePis
from pi_server.server.rpc import pi_method

# a pi's own work after its turn ended (a branch summary, a compaction) takes at most this
# long beyond the busy timeout before the daemon stops waiting on it
WORK_MARGIN = 600.0


def pis(ls: Host) -> LivePis:
    return ls.live_pis


def holder(ls: Host, session: str) -> LivePi | None:
    """The live pi holding `session` (None: the session is a file, written by the server)."""
    if not pis(ls).sessions:
        return None
    return pis(ls).holder(ls.registry.resolve(session))


def refuse_live(ls: Host, session: str, what: str) -> None:
    """A write pi's extension API cannot make is refused on a live session, never made behind pi."""
    pi = holder(ls, session)
    if pi is not None:
        raise errors.LiveInPi(f"open in pi (pid {pi.state.get('pid')}): {what}; do it in pi")


async def ask(ls: Host, pi: LivePi, method: str, args: dict[str, Any]) -> dict[str, Any]:
    """Have the pi carry out a write; its answer, or its error as the contract's."""
    timeout = float(ls.settings.busy_timeout)
    call = asyncio.ensure_future(pi.conn.request(method, {**args, "timeout": timeout}))
    gone = asyncio.ensure_future(pi.gone.wait())
    try:
        done, _ = await asyncio.wait({call, gone}, timeout=timeout + WORK_MARGIN, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if call not in done:
        call.cancel()
        why = "let go of the session" if gone in done else "did not answer"
        raise errors.WriteFailed(f"pi (pid {pi.state.get('pid')}) {why} before the write was made")
    try:
        reply = call.result()
    except Exception as e:  # an error answer: pygls's JsonRpcException carries the code
        raise errors.from_code(getattr(e, "code", None), str(getattr(e, "message", e))) from None
    if not isinstance(reply, dict):
        raise errors.WriteFailed(f"pi (pid {pi.state.get('pid')}) answered {type(reply).__name__}, not a result")
    return reply


def announce(ls: Host, session: str) -> None:
    """`pi/sessionUpdated` for a change of what editors see of a live session (or `live: null`)."""
    live = pis(ls).live(session)
    notify.live_changed(ls, session, live["leafId"] if live is not None else None, live)


async def _pin_leaf(ls: Host, session: str, leaf: str | None) -> None:
    """The server reads a live session at pi's leaf (a move by pi's /tree writes nothing), once
    the file holds that entry; the entries pi appends later move it as any append does."""

    def run() -> None:
        live = ls.registry.sessions.get(session)
        if live is not None and (leaf is None or leaf in live.index.by_id):
            live.leaf_id, live.explicit = leaf, True

    await ls.core(run)


def _state(p: params.LiveState) -> dict[str, Any]:
    out = msgspec.to_builtins(p)
    out.pop("session", None)
    return out


@pi_method("pi/live/register", params.LiveState)
async def register(ls: Host, p: params.LiveState) -> Any:
    """A pi holds `session` now (replacing what this connection held before)."""
    path = ls.registry.resolve(p.session)
    for session in pis(ls).register(ls, path, _state(p)):
        announce(ls, session)
    await _pin_leaf(ls, path, p.leafId)
    return {}


@pi_method("pi/live/update", params.LiveState)
async def update(ls: Host, p: params.LiveState) -> Any:
    """The pi's state changed (a turn started or ended, its leaf moved, model or thinking level)."""
    path = ls.registry.resolve(p.session)
    if pis(ls).update(ls, path, _state(p)):
        await _pin_leaf(ls, path, p.leafId)
        announce(ls, path)
    return {}


@pi_method("pi/live/withdraw", params.LiveWithdraw)
async def withdraw(ls: Host, p: params.LiveWithdraw) -> Any:
    """The pi let go of its session (it is shutting down or replacing it)."""
    for session in pis(ls).withdraw(ls):
        announce(ls, session)
    return {}


def let_go(ls: Host) -> None:
    """The connection closed: the session its pi held is a file again."""
    for session in pis(ls).withdraw(ls):
        announce(ls, session)
