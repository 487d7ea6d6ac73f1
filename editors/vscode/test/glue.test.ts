// The VS Code glue on a stub of the vscode API, connected to the real server.
import assert from "node:assert/strict";
import { appendFileSync, readFileSync } from "node:fs";
import { test } from "node:test";
import * as vscode from "vscode";
import { entryUri, parseEntryUri } from "../src/extension";
import { RestartPolicy } from "../src/restartPolicy";
import { resolveServer } from "../src/serverCommand";
import type { SessionsElement, TreeElement } from "../src/views";
import { activated, allRows } from "./harness";
import { file, until } from "./server";
import * as stub from "./stub/vscode";

const h = activated();
const SHOP = "01a22bae";

const sessionsView = () => stub.treeView<SessionsElement>("piSessions.sessions");
const treeView = () => stub.treeView<TreeElement>("piSessions.tree");
const items = <T>(tv: stub.StubTreeView<T>, el?: T): T[] => tv.provider.getChildren(el);
const item = (tv: stub.StubTreeView<any>, el: unknown): any => tv.provider.getTreeItem(el);
const labelOf = (it: any): string => (typeof it.label === "string" ? it.label : it.label.label);


test("activation lists sessions by project and registers every contributed command", async () => {
  const pkg = JSON.parse(readFileSync(`${__dirname}/../../package.json`, "utf8"));
  const contributed: string[] = pkg.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual(stub.commands.registered().sort(), [...contributed].sort());
  const groups = items(sessionsView());
  assert.deepEqual(groups.map((g) => labelOf(item(sessionsView(), g))), ["/home/demo/notes", "/home/demo/shop"]);
  const shopSessions = items(sessionsView(), groups[1]).map((el) => item(sessionsView(), el));
  assert.deepEqual(shopSessions.map(labelOf), ["Why does `make test` hang on CI?", "orders repository refactor"]);
  assert.match(shopSessions[1].description, /ago · 17 messages$/);
  assert.equal(shopSessions[1].command.command, "piSessions.openSession");
});

test("clicking a session shows its tree, the leaf revealed and marked", async () => {
  const shop = file(h.box, SHOP);
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  assert.equal(h.api.tree.session, shop);
  const rows = allRows();
  assert.equal(rows.length, h.api.tree.rows.length);
  // the leaf is a session_info entry, hidden by the default filter: the cursor goes to its nearest shown ancestor
  const lastActive = rows.filter((el) => el.kind === "row" && el.row.onActivePath).at(-1)!;
  assert.deepEqual(treeView().revealed.at(-1), lastActive);
  assert.ok(!rows.some((el) => el.kind === "row" && el.row.isLeaf));
  await vscode.commands.executeCommand("piSessions.setFilter", "all");
  const leaf = allRows().find((el) => el.kind === "row" && el.row.isLeaf)!;
  assert.equal(leaf.kind === "row" && leaf.row.id, h.api.tree.leafId);
  const leafItem = item(treeView(), leaf);
  // marked by its icon and colour, its text whole like every other row's
  assert.equal(leafItem.description, undefined);
  assert.equal(leafItem.iconPath.id, "circle-filled");
  assert.equal(leafItem.iconPath.color.id, "charts.green");
  assert.ok(leaf.kind === "row" && labelOf(leafItem).endsWith(leaf.row.title), labelOf(leafItem));
  assert.match(leafItem.tooltip.value, /the leaf/);
  assert.equal(allRows().filter((el) => item(treeView(), el).iconPath.id === "circle-filled").length, 1);
  await vscode.commands.executeCommand("piSessions.setFilter", "default");
  assert.equal(treeView().description, "orders repository refactor");
  const labeled = rows.map((el) => item(treeView(), el)).find((it) => labelOf(it).startsWith("[repository] "));
  assert.ok(labeled, "labels are shown");
  assert.match(labeled.contextValue, /labeled/);
});

test("filter picker and search box", async () => {
  stub.answers.picks.push((i) => i.value === "user-only");
  await vscode.commands.executeCommand("piSessions.setFilter");
  assert.equal(stub.recorded.quickPicks.at(-1)!.items.length, 5);
  assert.equal(h.api.tree.filter, "user-only");
  assert.ok(allRows().every((el) => el.kind === "row" && el.row.role === "user"));
  assert.equal(treeView().description, "orders repository refactor · user-only");
  stub.answers.inputs.push("pagination");
  await vscode.commands.executeCommand("piSessions.searchTree");
  const rows = allRows();
  assert.equal(rows.length, 1);
  const it = item(treeView(), rows[0]);
  assert.deepEqual(it.label.highlights, [[labelOf(it).toLowerCase().indexOf("pagination"), labelOf(it).toLowerCase().indexOf("pagination") + 10]]);
  assert.equal(stub.recorded.contexts.get("piSessions.treeSearch"), true);
  await vscode.commands.executeCommand("piSessions.clearTreeSearch");
  await vscode.commands.executeCommand("piSessions.setFilter", "default");
  assert.ok(allRows().length > 1);
});

test("collapsing a row in the widget is pi's fold on the server", async () => {
  const foldable = allRows().find((el) => el.kind === "row" && el.row.foldable && el.row.visibleParentId !== null)!;
  assert.equal(item(treeView(), foldable).collapsibleState, stub.TreeItemCollapsibleState.Expanded);
  const under = allRows(foldable).length;
  const total = h.api.tree.rows.length;
  treeView().collapse.fire({ element: foldable });
  await until(() => h.api.tree.folded.size === 1 && h.api.tree.rows.length === total - under, 5000, "the fold");
  const row = h.api.tree.row(foldable.kind === "row" ? foldable.row.id : "")!;
  assert.equal(item(treeView(), treeView().provider.element(row)).collapsibleState, stub.TreeItemCollapsibleState.Collapsed);
  treeView().expand.fire({ element: treeView().provider.element(row) });
  await until(() => h.api.tree.folded.size === 0 && h.api.tree.rows.length === total, 5000, "the unfold");
});

test("set a label from the context menu; errors are shown with the server's message", async () => {
  const el = allRows()[1];
  stub.answers.inputs.push("checkpoint");
  await vscode.commands.executeCommand("piSessions.setLabel", el);
  const again = allRows().find((x) => x.kind === "row" && el.kind === "row" && x.row.id === el.row.id)!;
  assert.equal(labelOf(item(treeView(), again)).startsWith("[checkpoint] "), true);

  await vscode.commands.executeCommand("piSessions.openSession", `${h.box.sessions}/../elsewhere.jsonl`);
  const err = stub.recorded.messages.find((m) => m.kind === "error")!;
  assert.match(err.message, /OutsideRoots/);
  assert.doesNotMatch(err.message, /Traceback/);
  await vscode.commands.executeCommand("piSessions.openSession", file(h.box, SHOP));
});

test("continue here asks two steps and reloads the tree", async () => {
  const target = allRows().find((el) => el.kind === "row" && el.row.role === "user" && !el.row.onActivePath)!;
  stub.answers.picks.push(0, 0); // continue here, no summary
  await vscode.commands.executeCommand("piSessions.continueHere", target);
  assert.equal(stub.recorded.quickPicks.length, 2);
  assert.equal(target.kind === "row" && h.api.tree.leafId, target.kind === "row" && target.row.parentId);
  assert.equal(stub.recorded.clipboard, "Go with the ORM.");
  assert.equal(stub.recorded.documents.at(-1)!.content, "Go with the ORM.");
});

test("copy context, open an entry as a read-only document", async () => {
  const el = allRows()[0];
  stub.answers.picks.push((i) => i.value === "openai");
  await vscode.commands.executeCommand("piSessions.copyContext", el);
  const msgs = JSON.parse(stub.recorded.clipboard);
  assert.equal(msgs[0].role, "user");
  await vscode.commands.executeCommand("piSessions.openEntry", el);
  const doc = stub.recorded.documents.at(-1)!;
  assert.equal(doc.uri!.scheme, "pi-entry");
  assert.equal(JSON.parse(doc.content).id, el.kind === "row" ? el.row.id : "");
  assert.deepEqual(parseEntryUri(entryUri("/a b/c.jsonl", "x1")), { session: "/a b/c.jsonl", id: "x1" });
});

test("appends by another writer update the open tree and the sessions list", async () => {
  const shop = file(h.box, SHOP);
  const changes = treeView().changes;
  const entry = {
    type: "message", id: "c0ffee01", parentId: h.api.tree.leafId, timestamp: new Date().toISOString(),
    message: { role: "user", content: [{ type: "text", text: "And a changelog entry." }], timestamp: Date.now() },
  };
  appendFileSync(shop, `${JSON.stringify(entry)}\n`);
  await until(() => h.api.tree.row("c0ffee01") !== undefined, 10_000, "the live row");
  assert.ok(treeView().changes > changes);
  await until(() => h.api.sessions.find(shop)!.leafId === "c0ffee01", 10_000, "the sessions list to follow");
});

test("summaries show progress; searching sessions filters the list", async () => {
  const el = allRows().at(-1)!;
  await vscode.commands.executeCommand("piSessions.summarizeBranch", el);
  assert.deepEqual(stub.recorded.progress, ["Summarizing…"]);
  assert.match(stub.recorded.documents.at(-1)!.content, /## Goal/);
  stub.answers.inputs.push("architecture");
  await vscode.commands.executeCommand("piSessions.searchSessions");
  const groups = items(sessionsView());
  assert.deepEqual(groups.map((g) => (g.kind === "group" ? g.group.cwd : "")), ["/home/demo/notes"]);
  assert.equal(sessionsView().description, "“architecture”");
  await vscode.commands.executeCommand("piSessions.clearSessionSearch");
  assert.equal(items(sessionsView()).length, 2);
});

test("restart policy: restarts with a message, gives up after repeated crashes", () => {
  const p = new RestartPolicy(2, 1000);
  assert.equal(p.crashed(0), true);
  assert.match(p.message(true), /restarting/);
  assert.equal(p.crashed(10), true);
  assert.equal(p.crashed(20), false);
  assert.match(p.message(false), /3 times/);
  assert.equal(p.crashed(5000), true, "old crashes are forgotten");
});

test("server command: setting, then PATH, then python -m pi_server", () => {
  assert.deepEqual(resolveServer({ path: "/opt/pi-server", sessionDirs: ["/s"] }, undefined, ""), {
    command: "/opt/pi-server", args: ["--sessions-dir", "/s"], how: "setting",
  });
  assert.equal(resolveServer({}, "/venv/bin/python", "/nonexistent").command, "/venv/bin/python");
  assert.deepEqual(resolveServer({ stateDir: "/st" }, "/venv/bin/python", "/nonexistent").args, ["-m", "pi_server", "--state-dir", "/st"]);
  const bin = `${h.box.root}/bin`;
  require("node:fs").mkdirSync(bin);
  require("node:fs").writeFileSync(`${bin}/pi-server`, "#!/bin/sh\n", { mode: 0o755 });
  assert.deepEqual(resolveServer({}, "/venv/bin/python", bin), { command: `${bin}/pi-server`, args: [], how: "path" });
});

const rowItems = () => allRows().map((el) => ({ el, it: item(treeView(), el) }));

test("continue here: the selection follows the new leaf", async () => {
  await vscode.commands.executeCommand("piSessions.setFilter", "default");
  const target = allRows().find((el) => el.kind === "row" && el.row.role === "assistant" && !el.row.onActivePath)!;
  assert.ok(target, "a row off the active path");
  stub.answers.picks.push(0, 0);
  await vscode.commands.executeCommand("piSessions.continueHere", target);
  const selected = treeView().selection[0];
  assert.equal(selected?.kind === "row" && selected.row.id, target.kind === "row" && target.row.id);
  assert.equal(h.api.tree.leafId, target.kind === "row" && target.row.id);
});

test("after Set Label the leaf is a hidden label entry: the row it resolves to keeps the marker, whatever the label's length", async () => {
  // a session whose last entry ends a turn, so the label is written at once
  const notes = h.box.files.find((f) => f !== file(h.box, SHOP) && readFileSync(f, "utf8").includes('"cwd":"/home/demo/notes"'))!;
  await vscode.commands.executeCommand("piSessions.openSession", notes);
  const leafBefore = rowItems().filter(({ it }) => it.iconPath.id === "circle-filled");
  assert.equal(leafBefore.length, 1);
  const el = leafBefore[0].el;
  stub.answers.inputs.push("a very long label that someone typed to explain at length why this point in the session matters");
  await vscode.commands.executeCommand("piSessions.setLabel", el);
  assert.ok(h.api.tree.leafId && !h.api.tree.row(h.api.tree.leafId), "the leaf (the label entry) is hidden by the default filter");
  const marked = rowItems().filter(({ it }) => it.iconPath.id === "circle-filled");
  assert.deepEqual(marked.map(({ el: m }) => m.kind === "row" && m.row.id), [el.kind === "row" && el.row.id]);
  // the text is the row's own, as on every row; the marker is the icon, which no width cuts
  assert.ok(labelOf(marked[0].it).startsWith("[a very long label"), labelOf(marked[0].it));
  assert.equal(marked[0].it.description, undefined);
  assert.match(marked[0].it.tooltip.value, /the leaf/);
});

test("the title bar's Open Chat opens the chat at the leaf, whatever row is selected; a row's Open Chat asks first", async () => {
  const leaf = h.api.tree.leafId;
  const other = allRows().find((el) => el.kind === "row" && el.row.role === "user")!;
  assert.ok(other.kind === "row" && other.row.id !== leaf);
  treeView().selection = [other];
  await vscode.commands.executeCommand("piSessions.openChat");
  assert.equal(h.api.tree.leafId, leaf, "the title bar's Open Chat did not move the leaf");
  assert.equal(stub.recorded.quickPicks.length, 0);
  stub.answers.picks.push((i) => i.value === false); // keep the leaf
  await vscode.commands.executeCommand("piSessions.openChat", other);
  assert.equal(stub.recorded.quickPicks.length, 1);
  assert.equal(h.api.tree.leafId, leaf);
  stub.answers.picks.push(undefined); // dismissed: nothing happens
  await vscode.commands.executeCommand("piSessions.openChat", other);
  assert.equal(h.api.tree.leafId, leaf);
  assert.equal(stub.recorded.messages.filter((m) => m.kind === "error").length, 0);
});

test("every Tree filter and a search get fresh item ids, so the widget draws rows as the server nests them", async () => {
  const ids = new Set<string>();
  for (const f of ["labeled-only", "default", "all", "default"] as const) {
    await vscode.commands.executeCommand("piSessions.setFilter", f);
    // a live reload still running from an earlier write may land after the command returns
    const first = () => rowItems()[0]?.it.id as string;
    await until(() => !ids.has(first()), 5000, `a new id for ${f}`);
    ids.add(first());
  }
  const before = rowItems()[0].it.id;
  await h.api.tree.reload(); // a live reload keeps ids (and the selection)
  assert.equal(rowItems()[0].it.id, before);
});
