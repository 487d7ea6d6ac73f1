"""The pygls server behind the lean stdio loop: LSP features over the loop's own core.

Loaded on the first message the lean loop does not serve itself (see
`server/lean.py`). It shares the host's registry, worker, tasks and stop
event, so an open document and the `pi/*` methods see one state; its
`initialize` adopts that state instead of opening another registry, and
what it writes goes out through the host's output (its `initialize` reply
through `quickstart.Filter`, which drops or records it).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pi_server.live.registry import Registry
from pi_server.server import quickstart
from pi_server.server.app import create_server
from pi_server.server.base import PiServer
from pi_server.server.options import Options

log = logging.getLogger("pi_server")


class HostOutput:
    """pygls's writer: whole framed messages, through the host's lock."""

    def __init__(self, host: Any) -> None:
        self.host = host

    def write(self, data: bytes) -> None:
        self.host.write(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class Adopted(PiServer):
    def __init__(self, host: Any) -> None:
        super().__init__(host.options)
        self.host = host
        self.worker.shutdown(wait=False)  # never started: the host's worker runs the core
        self.worker = host.worker
        self.registry = host.registry
        self.tasks = host.tasks
        self.stop = host.stop
        self.protocol.set_writer(quickstart.Filter(host.early, HostOutput(host)))  # type: ignore[arg-type]

    def feed(self, body: bytes) -> None:
        """One message, as pygls's own reading loop hands it to the protocol."""
        try:
            message = json.loads(body, object_hook=self.protocol.structure_message)
            self.protocol.handle_message(message)
        except Exception:
            log.exception("unable to handle a message")

    def open_registry(self, opts: Options) -> Registry:
        assert self.host.registry is not None
        return self.host.registry

    def start_background(self) -> None:
        pass  # the host runs it

    def notify(self, method: str, payload: dict[str, Any]) -> None:
        self.host.notify(method, payload)

    def window_show_message(self, params: Any) -> None:
        pass  # the host showed the option problems at its `initialize`


def adopt(host: Any) -> Adopted:
    server = create_server(host.options, lambda _o: Adopted(host))
    assert isinstance(server, Adopted)
    return server
