"""What the live layer refuses, mapped by the server to the contract's error codes."""

from __future__ import annotations


class SessionNotFound(Exception):
    pass


class EntryNotFound(Exception):
    pass


class OutsideRoots(Exception):
    pass


class Refused(Exception):
    """A write pi itself would refuse (the message is pi's reason)."""
