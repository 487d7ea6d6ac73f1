"""pi-server's VS Code extension in a real VS Code (code-server in headless chromium), step by step as a
user would go: each step leaves a screenshot in the screenshots folder (editors/vscode/e2e/screenshots)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from conftest import BROKEN_SERVER, World
from workbench import TIMEOUT, Workbench

SHOP = "01a22bae"


def shop_file(world: World) -> str:
    return str(next(world.sessions.rglob(f"*{SHOP}*.jsonl")))


def row_text(row: dict[str, Any]) -> str:
    """The row as pi's /tree writes it: `[label] title`."""
    return f"[{row['label']}] {row['title']}" if row.get("label") else row["title"]


def strip_leaf(labels: list[str]) -> list[str]:
    return [re.sub(r" \(leaf\)$", "", label) for label in labels]


def test_a_server_that_cannot_start_is_one_clear_error_and_restart_recovers(wb: Workbench, world: World) -> None:
    wb.open_pi()
    msg = wb.wait_notification(r"pi-server could not start")
    assert BROKEN_SERVER in msg and "piSessions.server.path" in msg, msg
    assert "there is no file" in msg, msg
    wb.page.wait_for_timeout(3000)  # anything else that would pile up
    shown = wb.notifications()
    assert len(shown) == 1, shown
    assert "Pending response rejected" not in msg
    toast = wb.page.locator(".notification-toast").first
    assert toast.locator("a.monaco-button", has_text="Show Logs").count() == 1
    wb.shot("start-error")
    toast.locator("a.monaco-button", has_text="Show Logs").click()
    # the pi-server output channel, with the command it tried
    wb.page.wait_for_function(
        "() => [...document.querySelectorAll('.view-lines')].some(e => e.textContent.includes('(setting)'))"
    )
    wb.shot("start-error-logs")
    # the user removes the stale setting; pi-server is then found on the login shell's PATH
    # the user removes the stale setting in the settings file; pi-server is then found on the login shell's PATH
    wb.command("Preferences: Open User Settings (JSON)")
    editor = wb.page.locator(".editor-instance .monaco-editor textarea").first
    editor.wait_for(state="attached")
    wb.page.locator(".editor-instance .monaco-editor .view-lines").first.click()
    wb.page.keyboard.press("Control+a")
    wb.page.keyboard.press("Delete")
    wb.page.keyboard.type('{"security.workspace.trust.enabled": false, "chat.disableAIFeatures": true')
    wb.page.keyboard.press("Control+s")
    wb.page.wait_for_timeout(1500)
    wb.dismiss_dialog("Cancel")  # "a setting has changed that requires a reload": not for this one
    wb.command("View: Close All Editors")
    wb.clear_notifications()
    labels: list[str] = []
    for attempt in range(3):  # the reload dialog above can come late and take the palette's keys
        wb.dismiss_dialog("Cancel")
        wb.command("Pi Sessions: Restart Server", optional=attempt < 2)
        try:
            labels = wb.wait_rows("Sessions", lambda ls: len(ls) >= 4, timeout=30, what="the sessions")
            break
        except AssertionError:
            continue
    assert labels, wb.notifications()
    assert "command 'piSessions.restartServer' not found" not in " ".join(wb.notifications())
    wb.command("View: Hide Panel", optional=True)
    wb.command("View: Close Panel", optional=True)
    wb.shot("restarted")
    assert labels


def test_sessions_view_lists_the_sessions_by_project(wb: Workbench, world: World) -> None:
    listed = world.cli("ls")["sessions"]
    labels = wb.wait_rows("Sessions", lambda ls: len(ls) == len(listed) + 2, what="projects and sessions")
    assert "~/../../home/demo/shop" not in labels
    for s in listed:
        title = s.get("name") or s["firstMessage"].splitlines()[0]
        assert any(label.startswith(title[:30]) for label in labels), (title, labels)
    wb.shot("sessions")


def open_shop(wb: Workbench, world: World) -> None:
    name = next(s["name"] for s in world.cli("ls")["sessions"] if SHOP in s["session"])
    wb.row("Sessions", re.compile(f"^{re.escape(name)}")).click()


def server_rows(world: World, file: str, *args: str) -> list[dict[str, Any]]:
    return server_rows_result(world, file, *args)["rows"]


def server_rows_result(world: World, file: str, *args: str) -> dict[str, Any]:
    return world.cli("tree", file, *args)


def test_tree_view_shows_pis_rows(wb: Workbench, world: World) -> None:
    open_shop(wb, world)
    expected = [row_text(r) for r in server_rows(world, shop_file(world))]
    labels = wb.wait_rows("Tree", lambda ls: strip_leaf(ls) == expected, what="the server's rows")
    assert len(labels) > 10
    wb.shot("tree")


def test_every_filter_and_a_search_show_exactly_the_servers_rows(wb: Workbench, world: World) -> None:
    shop = shop_file(world)
    for f in ("labeled-only", "user-only", "no-tools", "all", "default"):
        wb.command("Pi Sessions: Tree Filter…")
        wb.pick(f)
        expected = [row_text(r) for r in server_rows(world, shop, "--filter", f)]
        wb.wait_rows("Tree", lambda ls, e=expected: strip_leaf(ls) == e, what=f"the {f} rows")
        wb.shot(f"filter-{f}")
    wb.command("Pi Sessions: Search Tree…")
    wb.type_input("alembic")
    expected = [row_text(r) for r in server_rows(world, shop, "--search", "alembic")]
    assert len(expected) >= 3
    wb.wait_rows("Tree", lambda ls: strip_leaf(ls) == expected, what="the search's rows")
    wb.shot("search-alembic")
    wb.command("Pi Sessions: Clear Tree Search")
    expected = [row_text(r) for r in server_rows(world, shop)]
    wb.wait_rows("Tree", lambda ls: strip_leaf(ls) == expected, what="the whole tree again")


def selected(wb: Workbench) -> str:
    return wb.pane("Tree").locator(".monaco-list-row.selected").first.get_attribute("aria-label") or ""


def test_continue_here_moves_the_leaf_and_the_selection_follows(wb: Workbench, world: World) -> None:
    rows = server_rows(world, shop_file(world))
    target = next(r for r in rows if r.get("role") == "assistant" and not r["onActivePath"] and not r.get("label"))
    text = row_text(target)
    wb.context_menu(wb.row("Tree", text), "Continue Here…")
    wb.pick("Continue here in this session")
    wb.shot("continue-summary-choice")
    wb.pick("No summary")
    wb.wait_rows("Tree", lambda ls: f"{text} (leaf)" in ls, what="the leaf marker on the chosen row")
    wb.page.wait_for_function(
        "t => [...document.querySelectorAll('.monaco-list-row.selected')].some(r => r.getAttribute('aria-label') === t)",
        arg=f"{text} (leaf)",
    )
    assert selected(wb) == f"{text} (leaf)"
    wb.shot("continued-here")


def test_continue_here_fork_opens_the_new_session(wb: Workbench, world: World) -> None:
    before = {str(p) for p in world.sessions.rglob("*.jsonl")}
    rows = server_rows(world, shop_file(world))
    target = next(r for r in rows if r.get("role") == "assistant" and r["onActivePath"] and not r.get("label"))
    wb.context_menu(wb.row("Tree", re.compile(f"^{re.escape(row_text(target))}")), "Continue Here…")
    wb.pick("Fork into a new session")
    # the state the test needs: the fork's file in the store (pi-server writes it whole, in one go)
    new = wait_state(lambda: {str(p) for p in world.sessions.rglob("*.jsonl")} - before, "the forked session's file")
    assert len(new) == 1, new
    forked = new.pop()
    expected = [row_text(r) for r in server_rows(world, forked)]
    wb.wait_rows("Tree", lambda ls: strip_leaf(ls) == expected, what="the forked session's rows")
    assert strip_leaf([selected(wb)]) == [row_text(target)]
    wb.shot("forked")


def test_set_label_the_leaf_stays_marked_by_its_icon(wb: Workbench, world: World) -> None:
    leaf = next(label for label in wb.row_labels("Tree") if label.endswith(" (leaf)"))
    text = leaf.removesuffix(" (leaf)")
    wb.context_menu(wb.row("Tree", text), "Set Label…")
    long_label = "checkpoint before the release, with a label long enough to fill the whole side bar"
    wb.type_input(long_label)
    marked = f"[{long_label}] {text} (leaf)"
    wb.wait_rows("Tree", lambda ls: marked in ls, what="the labeled leaf row")
    row = wb.row("Tree", f"[{long_label}] {text}")
    # the leaf's marker is its icon (which no width cuts), its text the row's own, with no suffix
    assert row.locator(".label-description").count() == 0 or row.locator(".label-description").inner_text().strip() == ""
    icon = row.locator(".codicon-circle-filled")
    assert icon.count() == 1
    assert wb.pane("Tree").locator(".codicon-circle-filled").count() == 1
    # the row's whole text, its label shortened as on every row (the side bar's width cuts it, not the extension)
    shown = row.locator(".label-name").inner_text().strip()
    assert shown.startswith("[checkpoint before the") and shown.endswith(f"] {text}"), shown
    # and its colour: the icon is drawn in charts.green, the text in the list's own colour
    green = wb.page.evaluate("getComputedStyle(document.querySelector('.monaco-workbench')).getPropertyValue('--vscode-charts-green')")
    icon_color = icon.evaluate("e => getComputedStyle(e).color")
    assert green.strip() and icon_color != row.locator(".label-name").evaluate("e => getComputedStyle(e).color"), icon_color
    row.screenshot(path=str(wb.shot("labeled-leaf-row").with_name("labeled-leaf-row-zoom.png")))
    pane_box, icon_box = wb.pane("Tree").bounding_box(), icon.bounding_box()
    assert pane_box and icon_box and icon_box["x"] + icon_box["width"] <= pane_box["x"] + pane_box["width"]
    row.hover()
    hover = wb.page.locator(".monaco-hover", has_text="the leaf")
    hover.first.wait_for(state="visible", timeout=TIMEOUT)
    assert f"[{long_label}]" in hover.first.inner_text()
    wb.shot("labeled")
    wb.page.keyboard.press("Escape")


def test_copy_context_puts_the_servers_context_on_the_clipboard(wb: Workbench, world: World) -> None:
    open_shop(wb, world)
    shop = shop_file(world)
    rows = server_rows(world, shop)
    target = next(r for r in rows if r.get("role") == "user")
    wb.context_menu(wb.row("Tree", re.compile(f"^{re.escape(row_text(target))}")), "Copy Context…")
    wb.shot("copy-context-formats")
    wb.pick("LLM messages")
    wb.wait_notification(r"^Copied \d+ messages")
    copied = json.loads(wb.page.evaluate("navigator.clipboard.readText()"))
    expected = world.cli("context", shop, "--leaf", target["id"], "--format", "llm", json_flag=False)["messages"]
    assert copied == expected
    wb.shot("copied-context")


def wait_state(get: Any, what: str) -> Any:
    """The first truthy value of `get()`: a state of the files or the server, looked at until it holds."""
    end = time.monotonic() + TIMEOUT / 1000
    while time.monotonic() < end:
        value = get()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def last_entry(file: str) -> dict[str, Any]:
    return json.loads(Path(file).read_text().splitlines()[-1])


def row_note(wb: Workbench, text: str) -> str:
    """The row's description (what follows its label: "⊘ omitted", "✎ replaced")."""
    d = wb.row("Tree", text).locator(".label-description")
    return d.inner_text().strip() if d.count() else ""


def menu_items(wb: Workbench, row: Any) -> list[str]:
    """The items of the row's context menu (closed again)."""
    wb.page.keyboard.press("Escape")
    row.click(button="right")
    # the row's menu, not the title bar's Application Menu (a menuitem too, always there)
    items = wb.page.locator(".context-view .monaco-menu").get_by_role("menuitem")
    items.first.wait_for(state="visible")
    names = [(i.get_attribute("aria-label") or i.inner_text()).strip() for i in items.all()]
    return names


def test_omit_and_restore_a_message_from_the_tree_rows_menu(wb: Workbench, world: World) -> None:
    open_shop(wb, world)
    shop = shop_file(world)
    in_context = world.cli("context", shop, json_flag=False)["entryIds"]
    rows = server_rows(world, shop)
    target = next(r for r in reversed(rows) if r.get("role") == "user" and r["id"] in in_context and not r.get("label"))
    text = row_text(target)
    wb.wait_rows("Tree", lambda ls: text in strip_leaf(ls), what="the user message")
    names = menu_items(wb, wb.row("Tree", text))
    assert any(n.startswith("Omit from Context") for n in names), names
    assert not any(n.startswith("Restore to Context") for n in names), names
    wb.shot("context-menu-omit")
    wb.page.keyboard.press("Escape")
    wb.context_menu(wb.row("Tree", text), "Omit from Context")
    wait_state(lambda: last_entry(shop).get("targetId") == target["id"], "the context edit in the file")
    last = last_entry(shop)
    assert last["type"] == "context_edit" and last["targetId"] == target["id"] and last["replacement"] is None, last
    assert target["id"] not in world.cli("context", shop, json_flag=False)["entryIds"]
    wb.page.wait_for_function(
        "t => [...document.querySelectorAll('.monaco-list-row')].some(r => r.getAttribute('aria-label') === t"
        " && (r.querySelector('.label-description')?.textContent ?? '').includes('omitted'))",
        arg=text,
    )
    assert row_note(wb, text) == "⊘ omitted"
    names = menu_items(wb, wb.row("Tree", text))
    assert any(n.startswith("Restore to Context") for n in names), names
    assert not any(n.startswith("Omit from Context") for n in names), names
    wb.shot("context-menu-restore")
    wb.page.keyboard.press("Escape")
    wb.context_menu(wb.row("Tree", text), "Restore to Context")
    wait_state(
        lambda: last_entry(shop).get("targetId") == target["id"] and last_entry(shop).get("replacement") is not None,
        "the restoring context edit in the file",
    )
    restore = last_entry(shop)
    entry = next(json.loads(line) for line in Path(shop).read_text().splitlines() if f'"id":"{target["id"]}"' in line)
    assert restore["type"] == "context_edit" and restore["replacement"] == {"content": entry["message"]["content"]}
    assert target["id"] in world.cli("context", shop, json_flag=False)["entryIds"]
    wb.page.wait_for_function(
        "t => [...document.querySelectorAll('.monaco-list-row')].some(r => r.getAttribute('aria-label') === t"
        " && !(r.querySelector('.label-description')?.textContent ?? '').includes('omitted'))",
        arg=text,
    )
    wb.shot("restored")


def branch_messages(file: str, leaf: str) -> int:
    """Message entries on the path root → leaf, read from the file itself."""
    entries = {e["id"]: e for e in (json.loads(line) for line in Path(file).read_text().splitlines()[1:] if line)}
    count, at = 0, entries.get(leaf)
    while at is not None:
        count += at["type"] == "message"
        at = entries.get(at.get("parentId"))
    return count


def test_the_status_bar_shows_the_branchs_tokens_and_cost(wb: Workbench, world: World) -> None:
    open_shop(wb, world)
    shop = shop_file(world)
    item = wb.page.locator(".statusbar-item", has_text=re.compile(r"tokens · \$\d"))
    item.first.wait_for(state="visible")
    assert re.fullmatch(r"\d[\d.]*[kM]? tokens · \$\d+\.\d+( · \d+% of \d+k)?", item.first.inner_text().strip()), item.first.inner_text()
    wb.clear_notifications()
    item.first.click()
    msg = wb.wait_notification(r"^This branch: \d+ messages")
    leaf = server_rows_result(world, shop)["leafId"]
    assert msg.startswith(f"This branch: {branch_messages(shop, leaf)} messages"), msg
    total = sum(1 for line in Path(shop).read_text().splitlines() if json.loads(line).get("type") == "message")
    assert f"Whole session: {total} messages" in msg, msg
    wb.shot("branch-stats")
    wb.clear_notifications()


def test_system_prompt_and_tools_open_as_a_markdown_document(wb: Workbench, world: World) -> None:
    # a session today's pi wrote: its system message holds the prompt sections and tool declarations
    src = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "pi16" / "01-agent-session.jsonl"
    # into a folder the server already watches (the view groups sessions by their header's cwd)
    dest = world.sessions / "--home-demo-shop--" / "2026-11-21T10-00-00-000Z_01a1fd8c.jsonl"
    dest.write_bytes(src.read_bytes())
    name = next(s["name"] for s in world.cli("ls")["sessions"] if s["session"] == str(dest))
    wb.wait_rows("Sessions", lambda ls: any(lb.startswith(name) for lb in ls), what="the new session")
    wb.row("Sessions", re.compile(f"^{re.escape(name)}")).click()
    expected = [row_text(r) for r in server_rows(world, str(dest))]
    wb.wait_rows("Tree", lambda ls: strip_leaf(ls) == expected, what="its rows")
    wb.command("Pi Sessions: Show System Prompt and Tools")
    tab = wb.page.locator(".tabs-container .tab", has_text="System Prompt and Tools.md")
    tab.first.wait_for(state="visible")
    text = "() => [...document.querySelectorAll('.editor-instance .view-lines')].map(e => e.textContent.replace(/\\u00a0/g, ' ')).join('\\n')"
    wb.page.wait_for_function(f"() => ({text})().includes('# System prompt and tools')")
    shown = wb.page.evaluate(f"({text})()")
    assert "## System prompt" in shown and "You are a coding assistant running inside pi" in shown, shown
    wb.shot("system-prompt")
    wb.command("View: Close All Editors")


def chat_text(wb: Workbench) -> str:
    return wb.webview_frame("#log").locator("#log").inner_text()


def wait_chat(wb: Workbench, pred: Any, what: str, timeout: float = TIMEOUT / 1000) -> str:
    end = wb.page.evaluate("Date.now()") + timeout * 1000
    text = ""
    while wb.page.evaluate("Date.now()") < end:
        text = chat_text(wb)
        if pred(text):
            return text
        wb.page.wait_for_timeout(250)
    wb.shot("FAILED-chat")
    raise AssertionError(f"timed out waiting for {what}: {text!r}; shown: {wb.notifications()}")


def send(wb: Workbench, text: str) -> None:
    """Sends a prompt as a user does: once the turn before has ended (Send shown again, Stop hidden);
    a prompt while a turn runs is refused by the server as Busy."""
    frame = wb.webview_frame("#t")
    frame.locator("#send").wait_for(state="visible", timeout=TIMEOUT)
    frame.locator("#t").fill(text)
    frame.locator("#t").press("Enter")


def test_chat_streams_a_reply_asks_before_a_tool_and_stops(wb: Workbench, world: World, fake: Any) -> None:
    from fake_anthropic import sse_blocks

    wb.clear_notifications()
    wb.command("Pi Sessions: New Chat…")
    wb.type_input(str(world.project))
    fake.chunk_delay = 0.05
    fake.replies.append(("sse", sse_blocks([{"type": "text", "text": "Hello! I can see notes.md in this folder."}])))
    send(wb, "Say hello")
    wait_chat(wb, lambda t: "I can see notes.md in this folder." in t, "the streamed reply")
    tab = wb.page.locator(".tabs-container .tab", has_text="pi: Say hello")
    tab.first.wait_for(state="visible")
    wb.shot("chat-reply")

    write = {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {"path": "hello.txt", "content": "hello"}}
    fake.replies += [("sse", sse_blocks([write], stop="tool_use")), ("text", "Wrote hello.txt.")]
    send(wb, "Write hello.txt")
    dialog = wb.dialog()
    assert "pi wants to write" in dialog.inner_text()
    wb.shot("chat-tool-permission")
    dialog.locator(".monaco-button", has_text=re.compile("^Allow$")).click()
    wait_chat(wb, lambda t: "Wrote hello.txt." in t, "the turn after the tool")
    assert (world.project / "hello.txt").read_text() == "hello"
    wb.shot("chat-tool-done")

    fake.chunk_delay = 0.4
    story = "Once upon a time there was a session tree that grew and grew, branch after branch. " * 4
    fake.replies.append(("sse", sse_blocks([{"type": "text", "text": story}])))
    send(wb, "Tell me a long story")
    wait_chat(wb, lambda t: "Once upon" in t, "the story to stream")
    wb.webview_frame("#abort").locator("#abort").click()
    wait_chat(wb, lambda t: "aborted" in t.lower(), "the stop")
    fake.chunk_delay = 0.0
    wb.shot("chat-stopped")


def test_a_requested_restart_is_no_error(wb: Workbench, world: World) -> None:
    wb.clear_notifications()
    wb.command("Pi Sessions: Restart Server")
    wb.wait_rows("Sessions", lambda ls: len(ls) >= 5, what="the sessions after the restart")
    wb.command("View: Close All Editors")  # the chat
    wb.command("Pi Sessions: Show Server Log")
    wb.page.wait_for_timeout(2000)
    wb.shot("server-log")
    # the editor draws spaces as no-break spaces
    log = "() => [...document.querySelectorAll('.view-lines')].map(e => e.textContent.replace(/\\u00a0/g, ' ')).join('\\n')"
    wb.page.wait_for_function(f"() => ({log})().includes('exited with code 0')")
    wb.page.wait_for_timeout(3000)  # the old process's exit is logged after the new one starts
    text = wb.page.evaluate(f"({log})()")
    assert not re.search(r"\[Error[^\]]*\] Server process exited with code 0", text), text
    assert [n for n in wb.notifications() if "pi-server" in n] == []
    wb.shot("restarted-by-request")
