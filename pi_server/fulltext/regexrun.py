"""A regular expression run in a process of its own (`python -m pi_server.fulltext.regexrun`):
a pattern that backtracks without end holds only this process, which the server kills
when the search's time budget runs out.

Each request is one JSON line `{"pattern", "texts": [str]}`; each answer one JSON line,
a list with, per text, its match spans or null.
"""

from __future__ import annotations

import re
import sys

import orjson


def spans(rx: re.Pattern[str], text: str) -> list[tuple[int, int]] | None:
    found = [(m.start(), m.end()) for m in rx.finditer(text) if m.end() > m.start()]
    return found or ([(0, 0)] if rx.search(text) else None)


def main() -> None:
    for line in sys.stdin.buffer:
        req = orjson.loads(line)
        rx = re.compile(req["pattern"], re.IGNORECASE)
        sys.stdout.buffer.write(orjson.dumps([spans(rx, t) for t in req["texts"]]) + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
