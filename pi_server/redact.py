"""Secrets never reach a log: a filter that blanks them in every record.

The API key can surface in third-party log lines (httpcore's "Illegal header
value b'sk-…\\n'" when the key holds a newline, logged by the SDK at DEBUG),
so the filter sits on the handlers, where every logger's records pass, and on
the loggers that handle the key.
"""

from __future__ import annotations

import logging
import os

SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY")
MASK = "[redacted]"
LOGGERS = ("pi_server", "anthropic", "httpx", "httpcore", "httpx2", "httpcore2")


def _variants(secret: str) -> set[str]:
    """The secret as it may be printed: whole, repr-escaped, and each whitespace-split piece."""
    out = {secret, secret.strip(), repr(secret)[1:-1], repr(secret.encode())[2:-1]}
    out.update(part for part in secret.split() if len(part) >= 8)
    return {s for s in out if len(s) >= 8}


class RedactSecrets(logging.Filter):
    def __init__(self, extra: list[str | None] | None = None) -> None:
        super().__init__()
        found = [os.environ.get(k, "") for k in SECRET_ENV] + list(extra or [])
        # longest first, so a whole key is masked before a piece of it
        self.needles = sorted({v for s in found if s for v in _variants(s)}, key=len, reverse=True)

    def _clean(self, text: str) -> str:
        for n in self.needles:
            text = text.replace(n, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.needles:
            return True
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        record.msg, record.args = self._clean(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True


def install(extra: list[str | None] | None = None) -> RedactSecrets:
    """Put one filter on every root handler and on the loggers that see the key
    (the environment's keys, and `extra`: e.g. one read from pi's auth.json)."""
    f = RedactSecrets(extra)
    for h in logging.getLogger().handlers:
        h.addFilter(f)
    for name in LOGGERS:
        logging.getLogger(name).addFilter(f)
    return f
