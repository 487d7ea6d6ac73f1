"""A session that a running pi holds, in a real VS Code: pi 1.6.0 in RPC mode with pi-server's pi
extension (editors/pi) answers two prompts in the project, the Sessions list and the Tree mark its
session live, and Continue Here moves pi's own leaf. Runs after test_vscode.py, or alone
(`pytest e2e/test_vscode_live.py`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import NODE, REPO, World
from fake_anthropic import FakeAnthropic
from live_pi import EXTENSION, Pi
from workbench import Workbench

PI_CLI = REPO / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"


def rpc_pi(world: World, fake_url: str) -> Pi:
    """`pi --mode rpc -e editors/pi` in the project, in the user's environment as VS Code has it (HOME,
    ~/.profile's PATH and Anthropic variables): its connector then finds the editor's daemon."""
    env = {
        **world.daemon_env(),
        "HOME": str(world.home),
        "PATH": f"{world.home / '.local' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "ANTHROPIC_API_KEY": "sk-e2e",
        "ANTHROPIC_BASE_URL": fake_url,
    }
    log = world.root / "pi-rpc.log"
    return Pi(str(NODE), env, world.project, log, cli=PI_CLI, extensions=(EXTENSION,), inherit_env=False)


@pytest.fixture(scope="session")
def server_found(world: World) -> None:
    """Run alone, the settings still name the missing server the first test of test_vscode.py removes."""
    if "piSessions.server.path" in world.settings_file.read_text():
        world.write_settings({})


@pytest.fixture
def pi(world: World, fake: FakeAnthropic) -> Iterator[Pi]:
    # pi takes its Anthropic base URL from models.json (pi-server from ANTHROPIC_BASE_URL, set in ~/.profile)
    models = world.home / ".pi" / "agent" / "models.json"
    models.write_text(json.dumps({"providers": {"anthropic": {"baseUrl": fake.url}}}))
    fake.replies += [("text", "First answer, kept."), ("text", "Second answer, left behind.")]
    p = rpc_pi(world, fake.url)
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
    server_found: None, wb: Workbench, world: World, pi: Pi
) -> None:
    pi.prompt("First.", timeout=120)
    pi.prompt("Second.", timeout=120)
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
    leaf = pi.call("get_tree", timeout=60)["leafId"]
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
