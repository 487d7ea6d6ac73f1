"""The contract's JSON-RPC errors (PROTOCOL §6): a code, a message, `data: {kind}`."""

from __future__ import annotations

from msgspec import ValidationError

from pi_server.server.params import field_error


class PiError(Exception):
    """An error answer, sent by the protocol as the contract's error (code, message, data)."""

    CODE = -32603
    KIND = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = self.CODE
        self.data = {"kind": self.KIND}

    def error(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "data": self.data}


class InvalidParams(PiError):
    CODE = -32602
    KIND = "InvalidParams"


class SessionNotFound(PiError):
    CODE = -32001
    KIND = "SessionNotFound"


class EntryNotFound(PiError):
    CODE = -32002
    KIND = "EntryNotFound"


class OutsideRoots(PiError):
    CODE = -32003
    KIND = "OutsideRoots"


class SummaryFailed(PiError):
    CODE = -32004
    KIND = "SummaryFailed"


class WriteFailed(PiError):
    CODE = -32005
    KIND = "WriteFailed"


class Busy(PiError):
    CODE = -32006
    KIND = "Busy"


class NothingToCompact(PiError):
    """pi 1.6.0's prepareCompaction found nothing to summarize (or the leaf is a compaction)."""

    CODE = -32007
    KIND = "NothingToCompact"


class LiveInPi(PiError):
    """A write pi's extension API cannot make, on a session a live pi holds."""

    CODE = -32008
    KIND = "LiveInPi"


class Internal(PiError):
    CODE = -32603
    KIND = "InternalError"


def invalid_params(err: ValidationError, model: type | None = None) -> InvalidParams:
    where, reason = field_error(err, model)
    return InvalidParams(f"invalid params: {where or 'params'}: {reason}")


def from_code(code: object, message: str) -> PiError:
    """The contract's error for a code another process answered with (a live pi); an unknown
    code is a failed write."""
    for cls in (InvalidParams, SessionNotFound, EntryNotFound, OutsideRoots, SummaryFailed, Busy, NothingToCompact):
        if cls.CODE == code:
            return cls(message)
    return WriteFailed(message)
