"""Driving the VS Code workbench in code-server as a person would: the activity bar, the views' rows,
the command palette, quick picks, context menus, notifications and dialogs."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Frame, Locator, Page

# a bound on waiting for a state, never a pause: a busy machine (load 1.5 on 2 cores) can take
# several times the quiet machine's seconds for a step, and a passing run waits no longer for it
TIMEOUT = 120_000


class Workbench:
    def __init__(self, page: Page, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self.count = 0

    def shot(self, name: str) -> Path:
        """A screenshot of the whole window, numbered in the order the steps ran."""
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        return path

    # --- commands and prompts

    def command(self, title: str, optional: bool = False) -> None:
        """Runs a command from the command palette by its full title (`optional`: when the palette offers it)."""
        box = self.page.locator(".quick-input-widget input")
        for attempt in range(6):  # a key pressed while the workbench moves focus (a webview has it) can be lost
            self.page.keyboard.press("Escape")
            self.page.keyboard.press("F1" if attempt % 2 == 0 else "Control+Shift+P")
            try:
                box.wait_for(state="visible", timeout=5000)
                box.fill(f">{title}", timeout=5000)
                break
            except Exception:  # noqa: BLE001
                if attempt >= 2:
                    self.page.locator(".monaco-workbench .part.editor").first.click()
        else:
            raise AssertionError(f"the command palette did not open for {title!r}")
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=title).first
        try:
            row.wait_for(state="visible", timeout=5000 if optional else TIMEOUT)
        except Exception:
            self.page.keyboard.press("Escape")
            if optional:
                return
            raise
        box.press("Enter")

    def pick(self, text: str) -> None:
        """Chooses the quick pick item whose label contains `text`."""
        row = self.page.locator(".quick-input-widget .quick-input-list .monaco-list-row", has_text=text).first
        row.wait_for(state="visible", timeout=TIMEOUT)
        row.click()

    def type_input(self, text: str) -> None:
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=TIMEOUT)
        box.fill(text)
        box.press("Enter")

    def notifications(self) -> list[str]:
        return [t.strip() for t in self.page.locator(".notification-toast .notification-list-item-message").all_inner_texts()]

    def clear_notifications(self) -> None:
        self.command("Notifications: Clear All Notifications", optional=True)
        self.page.keyboard.press("Escape")

    def wait_notification(self, pattern: str, timeout: float = TIMEOUT / 1000) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for n in self.notifications():
                if re.search(pattern, n):
                    return n
            time.sleep(0.25)
        raise AssertionError(f"no notification matching {pattern!r}; shown: {self.notifications()}")

    def dismiss_dialog(self, button: str) -> None:
        """Answers a modal dialog with `button` if one is open."""
        d = self.page.locator(".monaco-dialog-box")
        if d.count() and d.first.is_visible():
            d.first.locator(".monaco-button", has_text=re.compile(f"^{re.escape(button)}$")).click()

    def dialog(self) -> Locator:
        d = self.page.locator(".monaco-dialog-box")
        d.wait_for(state="visible", timeout=TIMEOUT)
        return d

    # --- the side bar

    def open_pi(self) -> None:
        """Shows the Pi Sessions side bar. Its icon is clicked only when the side bar does not show it:
        a click while it is shown hides it (the icon's own link has no aria-expanded to tell)."""
        item = self.page.locator('.activitybar .action-item a[aria-label^="Pi Sessions"]').first
        item.wait_for(state="visible", timeout=TIMEOUT)
        title = self.page.locator(".part.sidebar .title-label h2", has_text="Pi Sessions").first
        if not title.is_visible():
            item.click()
        title.wait_for(state="visible", timeout=TIMEOUT)

    def pane(self, title: str) -> Locator:
        header = self.page.locator(".pane-header .title", has_text=re.compile(f"^{re.escape(title)}$", re.I))
        return self.page.locator(".pane").filter(has=header).first

    def rows(self, title: str) -> Locator:
        return self.pane(title).locator(".monaco-list-row")

    def row_labels(self, title: str, timeout: float = TIMEOUT) -> list[str]:
        """Every row's accessible label, in order, scrolling through the view's virtual list."""
        pane = self.pane(title)
        seen: dict[int, str] = {}
        pane.locator(".monaco-list-row").first.wait_for(state="visible", timeout=timeout)
        box = pane.locator(".monaco-list").first.bounding_box()
        assert box is not None
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 40))
        for _ in range(3):
            self.page.mouse.wheel(0, -10_000)
        stable = 0
        while stable < 2:
            before = len(seen)
            for r in pane.locator(".monaco-list-row").all():
                idx, label = r.get_attribute("data-index"), r.get_attribute("aria-label")
                if idx is not None and label is not None:
                    seen[int(idx)] = label
            self.page.mouse.wheel(0, 300)
            time.sleep(0.2)
            stable = stable + 1 if len(seen) == before else 0
        # the pointer left resting on a row would open that row's hover, which then covers
        # the row below it for the next click: it rests on the empty editor area instead
        view = self.page.viewport_size or {"width": 1500, "height": 1000}
        self.page.mouse.move(view["width"] * 0.6, view["height"] * 0.5)
        return [seen[i] for i in sorted(seen)]

    def row(self, title: str, label: str | re.Pattern[str]) -> Locator:
        pattern = label if isinstance(label, re.Pattern) else re.compile(f"^{re.escape(label)}( \\(leaf\\))?$")
        for r in self.rows(title).all():
            if pattern.search(r.get_attribute("aria-label") or ""):
                return r
        raise AssertionError(f"no row {label!r} in {title}: {self.row_labels(title)}")

    def wait_rows(self, title: str, pred: Any, timeout: float = TIMEOUT / 1000, what: str = "rows") -> list[str]:
        end = time.monotonic() + timeout
        labels: list[str] = []
        while time.monotonic() < end:
            try:
                # each look at the rows keeps within the deadline, so a slow first draw leaves time for the next
                labels = self.row_labels(title, timeout=max(1000.0, (end - time.monotonic()) * 1000))
                if pred(labels):
                    return labels
            except Exception:  # noqa: BLE001 - the list is being redrawn
                pass
            time.sleep(0.5)
        self.shot(f"FAILED-{title}")
        raise AssertionError(f"timed out waiting for {what} in {title}: {labels}; shown: {self.notifications()}")

    def context_menu(self, row: Locator, item: str) -> None:
        """Right-clicks the row and chooses `item`; a click the menu loses while it settles is repeated."""
        self.page.keyboard.press("Escape")
        row.click(button="right")
        entry = self.page.get_by_role("menuitem", name=re.compile(f"^{re.escape(item)}")).first
        entry.wait_for(state="visible", timeout=TIMEOUT)
        menu = self.page.locator(".context-view .monaco-menu")
        for _ in range(5):
            entry.hover()
            entry.click()
            try:
                menu.first.wait_for(state="hidden", timeout=3000)
                return
            except Exception:  # noqa: BLE001
                if not entry.is_visible():
                    return
        raise AssertionError(f"the context menu did not take {item!r}")

    def view_message(self, title: str) -> str:
        m = self.pane(title).locator(".message")
        return m.inner_text() if m.count() else ""

    # --- webviews

    def webview_frame(self, selector: str, timeout: float = TIMEOUT / 1000) -> Frame:
        """The (nested) frame of a webview that holds `selector`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for f in self.page.frames:
                try:
                    if f.query_selector(selector):
                        return f
                except Exception:  # noqa: BLE001 - a frame navigating away
                    continue
            time.sleep(0.25)
        raise AssertionError(f"no webview with {selector}")
