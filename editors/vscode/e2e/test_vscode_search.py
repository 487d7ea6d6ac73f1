"""Search All Sessions… in a real VS Code: typed into the quick pick, the server's hits shown with the
match highlighted, and a chosen hit opening its session's tree at the row with the entry shown.
Runs after test_vscode.py, or alone (it points the extension at pi-server itself)."""

from __future__ import annotations

import re

from conftest import World
from workbench import TIMEOUT, Workbench

HIT = "9ef4e3a8"  # "Probably the database container never reports healthy. Check the healthcheck command."


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


def test_search_all_sessions_as_you_type_and_open_the_hit(wb: Workbench, world: World) -> None:
    _server_running(wb, world)
    wb.clear_notifications()
    hits = world.cli("search", "healthcheck")["hits"]
    assert any(h["entryId"] == HIT for h in hits), hits

    wb.command("Pi Sessions: Search All Sessions…")
    box = wb.page.locator(".quick-input-widget input")
    box.wait_for(state="visible", timeout=TIMEOUT)
    box.press_sequentially("healthcheck", delay=40)  # key by key: each keystroke a new, debounced query
    rows = wb.page.locator(".quick-input-widget .quick-input-list .monaco-list-row")
    row = rows.filter(has_text="Why does `make test` hang on CI?").first
    row.wait_for(state="visible", timeout=TIMEOUT)
    wb.page.wait_for_function(
        "n => document.querySelectorAll('.quick-input-widget .quick-input-list .monaco-list-row').length === n",
        arg=len(hits),
        timeout=TIMEOUT,
    )
    wb.shot("search-all-typed")
    # the snippet is the detail line, the match highlighted by the editor's own matcher (it may take
    # a first letter from an earlier word, "healthy", as its fuzzy matching does)
    assert "Check the healthcheck command" in row.inner_text()
    marks = [m.lower() for m in row.locator(".highlight").all_inner_texts()]
    assert "".join(marks).endswith("ealthcheck"), marks
    title = wb.page.locator(".quick-input-widget .quick-input-title").inner_text()
    assert re.search(rf"{len(hits)} of {len(hits)} hits?", title), title

    row.click()
    # its session's tree, the hit's row revealed and selected, the entry open beside it
    # the tree shown before (another session's, its leaf selected) stays until the hit's session is in
    selected = wb.pane("Tree").locator(".monaco-list-row.selected", has_text="Probably the database container").first
    selected.wait_for(state="visible", timeout=TIMEOUT)
    label = selected.get_attribute("aria-label") or ""
    assert label.startswith("assistant: Probably the database container"), label
    tab = wb.page.locator(".tabs-container .tab", has_text=f"{HIT}.json").first
    tab.wait_for(state="visible", timeout=TIMEOUT)
    wb.page.locator(".editor-instance .view-lines", has_text=HIT).first.wait_for(state="visible", timeout=TIMEOUT)
    header = wb.pane("Tree").locator(".pane-header").inner_text()
    assert "Why does `make test` hang on CI?" in header, header
    wb.shot("search-all-opened")
