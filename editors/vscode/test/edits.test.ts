// Context edits and the system prompt view from the Tree view, on a stub of the vscode API connected to
// the real server: what the menu offers on a row, what lands in the file, and what pi's context holds then.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as vscode from "vscode";
import type { ContextResult } from "../src/protocol";
import { systemMarkdown } from "../src/systemDocs";
import type { TreeElement } from "../src/views";
import { activated, allRows } from "./harness";
import { file, REPO } from "./server";
import * as stub from "./stub/vscode";

const SHOP = "01a22bae";
// sessions pi 1.6.0 wrote: system messages with prompt sections and tool declarations; context edits of its own
const PI16 = path.join(REPO, "tests", "fixtures", "pi16");
let agentRun: string;
let edited: string;

const h = activated((box) => {
  const dir = path.join(box.sessions, "--home-dev-demo-project--");
  mkdirSync(dir, { recursive: true });
  agentRun = path.join(dir, "2026-11-21T10-00-00-000Z_01a1fd8c-6900-734d-9d07-9d045896025b.jsonl");
  edited = path.join(dir, "2026-11-21T11-00-00-000Z_01a1fd90-d760-7b3f-ac90-d6b67d447efb.jsonl");
  copyFileSync(path.join(PI16, "01-agent-session.jsonl"), agentRun);
  copyFileSync(path.join(PI16, "02-context-edits.jsonl"), edited);
});

const treeView = () => stub.treeView<TreeElement>("piSessions.tree");
const item = (el: TreeElement): any => treeView().provider.getTreeItem(el);
const rowEl = (id: string) => allRows().find((el) => el.kind === "row" && el.row.id === id)!;
const lastLine = (f: string) => JSON.parse(readFileSync(f, "utf8").trimEnd().split("\n").at(-1)!);
const context = (session: string) => h.server.request<ContextResult>("pi/buildContext", { session });

/** The menu items VS Code shows for a row: package.json's `when` regexes on the row's contextValue. */
function menu(el: TreeElement): string[] {
  const pkg = JSON.parse(readFileSync(`${__dirname}/../../package.json`, "utf8"));
  const cv: string = item(el).contextValue;
  return pkg.contributes.menus["view/item/context"]
    .filter((m: { when: string }) => m.when.startsWith("view == piSessions.tree"))
    .filter((m: { when: string }) => new RegExp(m.when.match(/viewItem =~ \/(.*)\/$/)![1]).test(cv))
    .map((m: { command: string }) => m.command);
}

test("omit then restore a user message from its row: pi's context_edit entries, the context without it and with it again", async () => {
  const shop = file(h.box, SHOP);
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  const inContext = (await context(shop)).entryIds;
  const user = allRows().find((el) => el.kind === "row" && el.row.role === "user" && inContext.includes(el.row.id))!;
  assert.ok(user.kind === "row");
  const id = user.row.id;
  assert.ok(menu(user).includes("piSessions.omitFromContext"));
  assert.ok(!menu(user).includes("piSessions.restoreToContext"));

  await vscode.commands.executeCommand("piSessions.omitFromContext", user);
  const omit = lastLine(shop);
  assert.equal(omit.type, "context_edit");
  assert.equal(omit.targetId, id);
  assert.equal(omit.replacement, null);
  assert.equal(h.api.tree.leafId, omit.id);
  assert.ok(!(await context(shop)).entryIds.includes(id), "left out of pi's context at the new leaf");
  const omitted = rowEl(id);
  assert.match(item(omitted).description, /⊘ omitted/);
  assert.equal(item(omitted).iconPath.id, "eye-closed");
  assert.deepEqual(
    menu(omitted).filter((c) => /(From|To)Context$/.test(c)),
    ["piSessions.restoreToContext"],
  );

  await vscode.commands.executeCommand("piSessions.restoreToContext", omitted);
  const restore = lastLine(shop);
  assert.equal(restore.type, "context_edit");
  assert.equal(restore.targetId, id);
  const { entry } = await h.server.request<{ entry: any }>("pi/getEntry", { session: shop, id });
  assert.deepEqual(restore.replacement, { content: entry.message.content });
  const ctx = await context(shop);
  const at = ctx.entryIds.indexOf(id);
  assert.ok(at >= 0, "back in pi's context");
  assert.deepEqual((ctx.messages[at] as any).content, entry.message.content);
  const back = rowEl(id);
  assert.equal(item(back).description, undefined);
  assert.deepEqual(
    menu(back).filter((c) => /(From|To)Context$/.test(c)),
    ["piSessions.omitFromContext"],
  );
  assert.deepEqual(stub.recorded.messages.filter((m) => m.kind === "error"), []);
});

test("a row off the active path: no omit item, and the command shows the server's reason", async () => {
  const shop = file(h.box, SHOP);
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  const off = allRows().find((el) => el.kind === "row" && el.row.role === "assistant" && !el.row.onActivePath)!;
  assert.ok(!menu(off).includes("piSessions.omitFromContext"));
  const lines = readFileSync(shop, "utf8").length;
  await vscode.commands.executeCommand("piSessions.omitFromContext", off);
  const err = stub.recorded.messages.find((m) => m.kind === "error");
  assert.ok(err, "an error is shown");
  const direct = await h.server
    .request("pi/editContext", { session: shop, targetId: off.kind === "row" && off.row.id, replacement: null })
    .then(() => "")
    .catch((e: Error) => e.message);
  assert.ok(direct && err.message.startsWith(direct), `${err.message} / ${direct}`);
  assert.equal(readFileSync(shop, "utf8").length, lines, "nothing written");
});

test("a session pi 1.6.0 wrote: its own replacement shows on the row, and restoring puts the original back", async () => {
  // the first branch: pi replaced a user message (a redacted secret) and omitted a custom message
  await h.server.request("pi/switchBranch", { session: edited, targetId: "cb846a44" });
  await vscode.commands.executeCommand("piSessions.openSession", edited);
  const { edits } = await h.server.request<{ edits: { targetId: string; replacement: unknown }[] }>("pi/getContextEdits", { session: edited });
  assert.deepEqual(edits.map((e) => e.targetId).sort(), ["6a142054", "940eeff8", "da38c55c", "e3045239"]);
  assert.match(item(rowEl("e3045239")).description, /⊘ omitted/);
  const replaced = rowEl("940eeff8");
  assert.match(item(replaced).description, /✎ replaced/);
  assert.deepEqual(
    menu(replaced).filter((c) => /(From|To)Context$/.test(c)),
    ["piSessions.omitFromContext", "piSessions.restoreToContext"],
  );
  const { entry } = await h.server.request<{ entry: any }>("pi/getEntry", { session: edited, id: "940eeff8" });
  const sent = (ctx: ContextResult) => (ctx.messages[ctx.entryIds.indexOf("940eeff8")] as any).content;
  assert.equal(sent(await context(edited)), "Secret token is [redacted]; list the files.");
  await vscode.commands.executeCommand("piSessions.restoreToContext", replaced);
  assert.deepEqual(sent(await context(edited)), entry.message.content);
  assert.equal(item(rowEl("940eeff8")).description, undefined, "a restore counts as no edit");
  assert.match(item(rowEl("e3045239")).description, /⊘ omitted/, "the other edits stay");
});

test("the system prompt and tools at the leaf open as a read-only markdown document", async () => {
  await vscode.commands.executeCommand("piSessions.openSession", agentRun);
  // no row given (the title bar): the selected row, which follows the leaf
  await vscode.commands.executeCommand("piSessions.showSystemPrompt");
  const doc = stub.recorded.documents.at(-1)!;
  assert.equal(doc.uri!.scheme, "pi-system");
  assert.equal(doc.language, "markdown");
  const selected = treeView().selection[0];
  assert.ok(selected?.kind === "row");
  const ctx = await h.server.request<ContextResult>("pi/buildContext", { session: agentRun, leafId: selected.row.id });
  assert.ok(ctx.system);
  assert.equal(doc.content, systemMarkdown(ctx));
  assert.ok(doc.content.includes(ctx.system.text));
  assert.match(doc.content, new RegExp(`## Tools \\(${ctx.system.tools.length}\\)`));
  for (const t of ctx.system.tools) assert.ok(doc.content.includes(`### ${t.name}\n\n${t.description}`), t.name);
});

test("a file from before pi 1.6.0 has no system prompt on its path, and the document says so", async () => {
  const shop = file(h.box, SHOP);
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  await vscode.commands.executeCommand("piSessions.showSystemPrompt", rowEl(h.api.tree.rows[1].id));
  const doc = stub.recorded.documents.at(-1)!;
  assert.match(doc.content, /No system prompt is recorded on this path/);
  assert.match(doc.content, new RegExp(`At entry \`${h.api.tree.rows[1].id}\``));
});
