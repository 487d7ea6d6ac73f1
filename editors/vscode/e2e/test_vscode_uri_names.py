"""A session file whose name is not UTF-8 (b"caf\\xe9.jsonl", copied from a Latin-1 disk) in a real VS Code:
added while the server runs (in a new folder made and filled at once, as a copy makes it) and listed without
a restart, with its path shown (U+FFFD for that byte), its tree opened, a label written to it, another
writer's append shown, and Open Session File showing its text in a tab named as shown. Runs after the other
files, or alone (it points the extension at pi-server itself); it removes the file it adds."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from conftest import World
from workbench import TIMEOUT, Workbench

FIRST = "Un café, s'il vous plaît."


def _server_running(wb: Workbench, world: World) -> None:
    """The settings as a user who found pi-server on PATH has them, the server (re)started on them."""
    world.write_settings({})
    wb.open_pi()
    for attempt in range(3):  # a key pressed while the workbench moves focus can be lost
        wb.dismiss_dialog("Cancel")
        wb.command("Pi Sessions: Restart Server", optional=attempt < 2)
        try:
            wb.wait_rows("Sessions", lambda ls: len(ls) >= 4, timeout=30, what="the sessions")
            return
        except AssertionError:
            continue
    raise AssertionError(f"the server did not start: {wb.notifications()}")


def _cafe_session(world: World) -> bytes:
    """A small session under a name that is not UTF-8; its path as bytes."""
    folder = world.sessions / "--home-demo-cafe--"
    folder.mkdir(exist_ok=True)
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "01a22bc0-0000-7000-8000-00000000cafe", "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/home/demo/cafe"},
        {"type": "message", "id": "c0ffee01", "parentId": None, "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": FIRST}], "timestamp": 1796032801000}},
        {"type": "message", "id": "c0ffee02", "parentId": "c0ffee01", "timestamp": "2026-11-30T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Voilà."}], "api": "anthropic-messages",
                     "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 1796032802000,
                     "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}},
    ]
    with open(raw, "wb") as f:
        f.write("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode())
    return raw


def _last_entry(raw: bytes) -> dict:
    with open(raw, "rb") as f:
        return json.loads(f.read().splitlines()[-1])


def test_a_session_whose_name_is_not_utf8(wb: Workbench, world: World) -> None:
    shown = str(world.sessions / "--home-demo-cafe--" / "caf\ufffd.jsonl")
    _server_running(wb, world)
    wb.clear_notifications()
    raw = _cafe_session(world)
    try:
        # the server announces it (pi/sessionsChanged), the view lists it again: no restart, no refresh
        wb.wait_rows("Sessions", lambda ls: any(FIRST in label for label in ls), timeout=30, what="the café session")
        row = wb.row("Sessions", re.compile(re.escape(FIRST)))
        # the tooltip gives the file's path as a person reads it, not its URI
        row.hover()
        hover = wb.page.locator(".monaco-hover", has_text=FIRST)
        hover.first.wait_for(state="visible", timeout=TIMEOUT)
        tip = hover.first.inner_text()
        assert shown in tip and "%E9" not in tip, tip
        wb.shot("cafe-listed")
        wb.page.keyboard.press("Escape")

        row.click()
        wb.wait_rows("Tree", lambda ls: any(FIRST in label for label in ls), what="its tree")
        wb.context_menu(wb.row("Tree", f"user: {FIRST}"), "Set Label…")
        wb.type_input("café")
        wb.wait_rows("Tree", lambda ls: any(label.startswith(f"[café] user: {FIRST}") for label in ls), what="the label")
        assert _last_entry(raw)["type"] == "label" and _last_entry(raw)["label"] == "café"

        appended = {"type": "message", "id": "c0ffee03", "parentId": _last_entry(raw)["id"], "timestamp": "2026-11-30T10:05:00.000Z",
                    "message": {"role": "user", "content": [{"type": "text", "text": "Et un croissant."}], "timestamp": 1796033100000}}
        with open(raw, "ab") as f:  # another writer (pi)
            f.write((json.dumps(appended) + "\n").encode())
        wb.wait_rows("Tree", lambda ls: any("Et un croissant." in label for label in ls), what="the appended row")
        wb.shot("cafe-tree")

        wb.context_menu(wb.row("Sessions", re.compile(re.escape(FIRST))), "Open Session File")
        tab = wb.page.locator(".tabs-container .tab", has_text="caf\ufffd.jsonl").first
        tab.wait_for(state="visible", timeout=TIMEOUT)
        lines = wb.page.locator(".editor-instance .view-lines").first

        def text() -> str:
            return lines.inner_text().replace("\xa0", " ")  # the editor draws spaces as no-break spaces

        end = time.monotonic() + TIMEOUT / 1000
        while "Et un croissant." not in text() and time.monotonic() < end:
            time.sleep(0.25)
        assert "Et un croissant." in text() and FIRST in text(), text()
        assert not [n for n in wb.notifications() if "rror" in n], wb.notifications()
        wb.shot("cafe-file")
    finally:
        os.unlink(raw)
        Path(world.sessions / "--home-demo-cafe--").rmdir()
        wb.page.keyboard.press("Escape")
