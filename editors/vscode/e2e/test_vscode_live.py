"""A session that a running pi holds, in a real VS Code: pi 1.6.0 in RPC mode with pi-server's pi
extension (editors/pi) answers two prompts in the project, the Sessions list and the Tree mark its
session live, and Continue Here moves pi's own leaf. Runs after test_vscode.py, or alone
(`pytest e2e/test_vscode_live.py`)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import NODE, REPO, World
from fake_anthropic import FakeAnthropic
from workbench import Workbench

PI_CLI = REPO / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
EXTENSION = REPO / "editors" / "pi"


class RpcPi:
    """`pi --mode rpc -e editors/pi` in the project, in the user's environment as VS Code has it (HOME,
    ~/.profile's PATH and Anthropic variables): its connector then finds the editor's daemon."""

    def __init__(self, world: World, fake_url: str) -> None:
        env = {
            "HOME": str(world.home),
            "PATH": f"{world.home / '.local' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            "ANTHROPIC_API_KEY": "sk-e2e",
            "ANTHROPIC_BASE_URL": fake_url,
        }
        self.log = (world.root / "pi-rpc.log").open("ab")
        argv = [str(NODE), str(PI_CLI), "--mode", "rpc", "-e", str(EXTENSION)]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=world.project
        )
        self.replies: dict[str, dict[str, Any]] = {}
        self.ended = 0  # agent_settled events seen: pi will not go on by itself
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.n = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            with self.cond:
                if msg.get("type") == "response":
                    self.replies[msg.get("id")] = msg
                elif msg.get("type") == "agent_settled":
                    self.ended += 1
                self.cond.notify_all()

    def call(self, kind: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        self.n += 1
        rid = f"e2e{self.n}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": rid, "type": kind, **fields}).encode() + b"\n")
        self.proc.stdin.flush()
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.replies, timeout):
                raise AssertionError(f"pi did not answer {kind}")
        reply = self.replies.pop(rid)
        assert reply.get("success"), json.dumps(reply)
        return reply.get("data") or {}

    def prompt(self, text: str, timeout: float = 120.0) -> None:
        """A prompt, waited for until pi's turn has ended."""
        with self.cond:
            before = self.ended
        self.call("prompt", message=text)
        with self.cond:
            if not self.cond.wait_for(lambda: self.ended > before, timeout):
                raise AssertionError(f"pi's turn on {text!r} did not end")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope="session")
def server_found(world: World) -> None:
    """Run alone, the settings still name the missing server the first test of test_vscode.py removes."""
    if "piSessions.server.path" in world.settings_file.read_text():
        world.write_settings({})


@pytest.fixture
def pi(world: World, fake: FakeAnthropic) -> Iterator[RpcPi]:
    # pi takes its Anthropic base URL from models.json (pi-server from ANTHROPIC_BASE_URL, set in ~/.profile)
    models = world.home / ".pi" / "agent" / "models.json"
    models.write_text(json.dumps({"providers": {"anthropic": {"baseUrl": fake.url}}}))
    fake.replies += [("text", "First answer, kept."), ("text", "Second answer, left behind.")]
    p = RpcPi(world, fake.url)
    yield p
    p.close()


def descriptions(wb: Workbench, title: str) -> list[str]:
    return [d.inner_text() for d in wb.pane(title).locator(".monaco-list-row .label-description").all()]


def header_description(wb: Workbench, title: str) -> str:
    d = wb.pane(title).locator(".pane-header .description")
    return d.inner_text() if d.count() else ""


def wait_for(pred: Any, what: str, wb: Workbench, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            wb.shot(f"FAILED-{re.sub(r'[^a-z]+', '-', what)}")
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def test_a_session_pi_holds_is_marked_live_and_continue_here_moves_pis_leaf(
    server_found: None, wb: Workbench, world: World, pi: RpcPi
) -> None:
    pi.prompt("First.")
    pi.prompt("Second.")
    # after the other tests the side bar may be hidden behind an editor or the panel: the view is brought forward
    wb.command("View: Close Panel", optional=True)
    wb.open_pi()
    wb.command("Pi Sessions: Focus on Sessions View", optional=True)
    pid = pi.proc.pid
    wait_for(
        lambda: any(d.startswith("● live in pi · idle") for d in descriptions(wb, "Sessions")), "the live mark", wb
    )
    live_row = wb.pane("Sessions").locator(".monaco-list-row", has_text="● live in pi").first
    assert (live_row.get_attribute("aria-label") or "").startswith("First."), live_row.get_attribute("aria-label")
    live_row.click()
    wait_for(lambda: "● live in pi · idle" in header_description(wb, "Tree"), "the live mark on the Tree", wb)
    wait_for(lambda: f"open in pi (pid {pid})" in wb.view_message("Tree"), "the line naming pi above the rows", wb)
    wb.shot("live-session")

    # Continue Here on the first answer: pi carries it out, its own leaf moves
    first = "assistant: First answer, kept."
    wb.wait_rows("Tree", lambda ls: "assistant: Second answer, left behind. (leaf)" in ls, what="pi's leaf")
    wb.context_menu(wb.row("Tree", first), "Continue Here…")
    wb.pick("Continue here in this session")
    wb.pick("No summary")
    wb.wait_rows("Tree", lambda ls: f"{first} (leaf)" in ls, what="the leaf marker where pi moved")
    leaf = pi.call("get_tree")["leafId"]
    sessions = world.cli("ls")["sessions"]
    live = next(s for s in sessions if s.get("firstMessage") == "First.")
    entry = next(
        json.loads(line) for line in Path(live["session"]).read_text().splitlines() if f'"id":"{leaf}"' in line
    )
    assert entry["message"]["content"][0]["text"] == "First answer, kept.", entry
    assert "● live in pi" in header_description(wb, "Tree")
    wb.shot("live-switched")

    # pi exits: a plain file again
    pi.close()
    wait_for(lambda: "live" not in header_description(wb, "Tree"), "the mark gone with pi", wb)
    wait_for(lambda: not any("live" in d for d in descriptions(wb, "Sessions")), "the list without the mark", wb)
    wb.shot("live-gone")
