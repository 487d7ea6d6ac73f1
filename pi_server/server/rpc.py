"""The method table: each JSON-RPC method is one module-level function, registered here.

`@pi_method(name, Params)` checks that the connection may call it, parses its
params into its msgspec Struct (-32602 naming the field), encodes the result once to JSON bytes,
and lists the method in the `initialize` capabilities. `@lsp_feature` records
the LSP methods pygls types for us. `install` puts both tables on a server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from pi_server.jsutil import non_finite_at
from pi_server.server import activity, errors, offcore, wire
from pi_server.server.params import Params
from pi_server.store.names import from_wire

P = TypeVar("P", bound=Params)
Handler = Callable[[Any, Any], Awaitable[Any]]

PI_METHODS: dict[str, tuple[Handler, type[Params]]] = {}
LSP_FEATURES: dict[str, tuple[Callable[..., Any], Any]] = {}


def pi_method(name: str, params: type[P]) -> Callable[[Callable[[Any, P], Awaitable[Any]]], Any]:
    def wrap(fn: Callable[[Any, P], Awaitable[Any]]) -> Callable[[Any, P], Awaitable[Any]]:
        PI_METHODS[name] = (fn, params)
        return fn

    return wrap


def lsp_feature(name: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        LSP_FEATURES[name] = (fn, options)
        return fn

    return wrap


def parse(model: type[P], raw: Any) -> P:
    """The decoded params (a dict, or None for none) as `model`.

    Numbers and booleans sent as strings ("200", "true") are taken, never the
    other way: a number is not a string, nor `true` a number.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise errors.InvalidParams("invalid params: expected an object")
    bad = non_finite_at(raw)
    if bad is not None:  # `1e400`: read as infinity, which no JSON line or answer can hold
        raise errors.InvalidParams(f"invalid params: {bad}: number out of range (not a finite number)")
    try:
        got = msgspec.convert(raw, model, strict=False)
    except msgspec.ValidationError as e:
        raise errors.invalid_params(e, model) from None
    if isinstance(getattr(got, "session", None), str):
        got.session = from_wire(got.session)  # type: ignore[attr-defined]  # a `file:` URI names the path
    return got


def _guarded(fn: Handler, model: type[Params]) -> Handler:
    async def handler(ls: Any, raw: Any) -> Any:
        if not ls.authorized:
            raise errors.InvalidParams("not initialized with a valid token")
        if ls.registry is None:
            raise errors.Internal("server not initialized")
        p = parse(model, raw)
        session = getattr(p, "session", None)
        activity.begin()
        try:
            if not isinstance(session, str):
                return wire.encode(await fn(ls, p))  # once, to bytes (see wire.py)
            async with offcore.held(ls, session):  # a large session: read off the core worker, kept meanwhile
                result = await fn(ls, p)
            return wire.encode(result)  # once, to bytes (see wire.py)
        finally:
            activity.end()

    handler.__doc__ = fn.__doc__
    return handler


def guarded_methods() -> dict[str, Handler]:
    """Every `pi/*` method as the handler a connection calls with its raw params."""
    return {name: _guarded(fn, model) for name, (fn, model) in PI_METHODS.items()}


def install(server: Any) -> None:
    for name, handler in guarded_methods().items():
        server.feature(name)(handler)
    for name, (fn, options) in LSP_FEATURES.items():
        server.feature(name, options)(fn) if options is not None else server.feature(name)(fn)
