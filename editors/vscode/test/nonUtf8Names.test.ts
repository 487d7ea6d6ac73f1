// A session file whose name is not UTF-8 (b"caf\xe9.jsonl", a Latin-1 name): the server sends it as its
// file: URI with a displayPath; the views show that, every request sends the URI back, and it opens.
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, renameSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as vscode from "vscode";
import { displayName, displayPath } from "../src/format";
import type { SessionsElement } from "../src/views";
import { activated, allRows } from "./harness";
import { file, until } from "./server";
import * as stub from "./stub/vscode";

const SHOP = "01a22bae";
let latin1: Buffer; // the file's path as bytes: no JS string names it
const h = activated((box) => {
  const shop = file(box, SHOP);
  latin1 = Buffer.concat([Buffer.from(`${path.dirname(shop)}/caf`), Buffer.from([0xe9]), Buffer.from(".jsonl")]);
  renameSync(shop, latin1);
});

const sessionsView = () => stub.treeView<SessionsElement>("piSessions.sessions");
const treeView = () => stub.treeView("piSessions.tree");
const item = (tv: stub.StubTreeView<any>, el: unknown): any => tv.provider.getTreeItem(el);
const labelOf = (it: any): string => (typeof it.label === "string" ? it.label : it.label.label);
const cafe = () => `${path.dirname(file(h.box, "01a22bb0"))}/caf\uFFFD.jsonl`;

function listed(): { el: SessionsElement; it: any } {
  const tv = sessionsView();
  const els: SessionsElement[] = tv.provider.getChildren().flatMap((g: SessionsElement) => tv.provider.getChildren(g));
  const el = els.find((e) => e.kind === "session" && e.node.info.displayPath !== undefined);
  assert.ok(el, "the file is listed");
  return { el, it: item(sessionsView(), el) };
}
const sessionOf = (el: SessionsElement) => (el.kind === "session" ? el.node.info.session : "");

test("listed with its display path; the client reads the URI as the server does", () => {
  const { el, it } = listed();
  const info = el.kind === "session" ? el.node.info : undefined;
  assert.equal(info?.session, `file://${path.dirname(cafe())}/caf%E9.jsonl`);
  assert.equal(info?.displayPath, cafe());
  assert.equal(displayPath(info!.session), info!.displayPath, "decoded here as the server shows it");
  assert.equal(displayName(info!.session), "caf\uFFFD.jsonl");
  assert.equal(labelOf(it), "orders repository refactor");
  assert.ok(it.tooltip.value.includes(cafe()), it.tooltip.value);
  assert.ok(!it.tooltip.value.includes("%E9"), "the URI is not what a person reads");
  assert.equal(it.resourceUri.scheme, "file");
  assert.deepEqual(it.command.arguments, [info!.session]);
});

test("its tree opens; a label on it is written to that file", async () => {
  const session = sessionOf(listed().el);
  await vscode.commands.executeCommand("piSessions.openSession", session);
  assert.equal(h.api.tree.session, session);
  assert.ok(allRows().length > 5);
  assert.equal(treeView().description, "orders repository refactor");
  const row = allRows().find((el) => el.kind === "row" && el.row.role === "user")!;
  stub.answers.inputs.push("café checkpoint");
  await vscode.commands.executeCommand("piSessions.setLabel", row);
  const last = JSON.parse(readFileSync(latin1, "utf8").trimEnd().split("\n").at(-1)!);
  assert.equal(last.type, "label");
  assert.equal(last.label, "café checkpoint");
  assert.ok(allRows().some((el) => labelOf(item(treeView(), el)).startsWith("[café checkpoint] ")));
  assert.deepEqual(stub.recorded.messages.filter((m) => m.kind === "error"), []);
});

test("a branch switch on it moves its leaf", async () => {
  await vscode.commands.executeCommand("piSessions.setFilter", "default");
  const target = allRows().find((el) => el.kind === "row" && el.row.role === "assistant" && !el.row.onActivePath)!;
  assert.ok(target, "a row off the active path");
  stub.answers.picks.push(0, 0); // continue here, no summary
  await vscode.commands.executeCommand("piSessions.continueHere", target);
  assert.equal(h.api.tree.leafId, target.kind === "row" && target.row.id);
  assert.deepEqual(stub.recorded.messages.filter((m) => m.kind === "error"), []);
});

test("an append by another writer reaches its open tree (pi/sessionUpdated by its URI)", async () => {
  const entry = {
    type: "message", id: "cafe0001", parentId: h.api.tree.leafId, timestamp: new Date().toISOString(),
    message: { role: "user", content: [{ type: "text", text: "Un café, s'il vous plaît." }], timestamp: Date.now() },
  };
  appendFileSync(latin1, `${JSON.stringify(entry)}\n`);
  await until(() => h.api.tree.row("cafe0001") !== undefined, 10_000, "the live row");
  const note = h.server.notes.find((n) => n.method === "pi/sessionUpdated" && n.params.appended.includes("cafe0001"));
  assert.equal(note?.params.session, h.api.tree.session);
});

test("while a search hides it from the list, the Tree view names it by its file name as shown", async () => {
  stub.answers.inputs.push("architecture");
  await vscode.commands.executeCommand("piSessions.searchSessions");
  assert.equal(h.api.sessions.find(h.api.tree.session!), undefined);
  assert.equal(treeView().description, "caf\uFFFD.jsonl");
  await vscode.commands.executeCommand("piSessions.clearSessionSearch");
  assert.equal(treeView().description, "orders repository refactor");
});

test("Open Session File shows its bytes read-only, named as shown", async () => {
  const { el } = listed();
  await vscode.commands.executeCommand("piSessions.openSessionFile", el);
  const doc = stub.recorded.documents.at(-1)!;
  assert.equal(doc.uri!.scheme, "pi-session-file");
  assert.equal(path.basename(doc.uri!.path), "caf\uFFFD.jsonl");
  assert.equal(doc.content, readFileSync(latin1, "utf8"));
  assert.deepEqual(stub.recorded.messages.filter((m) => m.kind === "error"), []);
});
