// "Search All Sessions…" on a stub of the vscode API, asking the real server's pi/search.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as vscode from "vscode";
import type { SearchHit } from "../src/protocol";
import { type HitItem, hitItem, resultTitle, snippetLine } from "../src/search";
import type { TreeElement } from "../src/views";
import { activated } from "./harness";
import { file, until } from "./server";
import * as stub from "./stub/vscode";

// a small page, so a hit far down the tree is found by loading further windows
const h = activated(() => (stub.workspace.settings["piSessions.tree.pageSize"] = 4));
const SHOP = "01a22bae";
const CI = "01a22bb0";

const treeView = () => stub.treeView<TreeElement>("piSessions.tree");
const picker = () => stub.recorded.livePicks.at(-1) as stub.StubQuickPick<HitItem>;
const hitsOf = (qp: stub.StubQuickPick<HitItem>) => qp.items.filter((i) => i.hit).map((i) => i.hit!);

/** Opens the picker and types `query`; the command's promise settles when a hit is opened or it is dismissed. */
async function typed(query: string): Promise<{ qp: stub.StubQuickPick<HitItem>; done: Promise<unknown> }> {
  const done = Promise.resolve(vscode.commands.executeCommand("piSessions.searchAll"));
  const qp = picker();
  assert.ok(qp.shown);
  qp.type(query);
  await until(() => qp.items.length > 0 && !qp.busy, 10_000, `hits for ${query}`);
  return { qp, done };
}

test("a hit reads as time, session and snippet, the match in view and left to the editor to highlight", () => {
  const hit: SearchHit = {
    session: "/s/a.jsonl",
    entryId: "e1",
    type: "message",
    role: "assistant",
    timestamp: "2026-11-30T09:02:19.000Z",
    snippet: `${"x".repeat(100)} check the healthcheck\ncommand`,
    ranges: [[111, 122]],
    firstMessage: "Why does it hang?",
  };
  const it = hitItem(hit);
  assert.match(it.label, /^\$\(sparkle\) \d{4}-\d\d-\d\d \d\d:\d\d$/);
  assert.equal(it.description, "Why does it hang?");
  assert.equal(it.detail, `…${"x".repeat(29)} check the healthcheck command`); // 40 characters before the match
  assert.ok(it.alwaysShow);
  assert.equal(hitItem({ ...hit, sessionName: "CI hang" }).description, "CI hang");
  assert.equal(snippetLine({ ...hit, ranges: [] }).slice(0, 3), "xxx");
});

test("the title gives hits shown of the total, marked when counting stopped before the end", () => {
  const hit = { session: "/s/a.jsonl", entryId: "e1", type: "message", timestamp: "", snippet: "", ranges: [], firstMessage: "" };
  const res = { hits: [hit, hit], total: 302, indexedFiles: 9, pendingFiles: 0 };
  assert.match(resultTitle(res), /: 2 of 302 hits$/);
  assert.match(resultTitle({ ...res, totalAtLeast: true }), /: 2 of 302\+ hits$/);
  assert.match(resultTitle({ ...res, pendingFiles: 3, incomplete: true }), /2 of 302 hits · indexing, 3 files to go · incomplete/);
  assert.match(resultTitle({ ...res, hits: [], total: 0 }), /: no hits$/);
  assert.match(resultTitle({ ...res, hits: [hit], total: 1 }), /: 1 of 1 hit$/);
});

test("typing searches every session; choosing a hit opens its tree at the row, selected, with the entry shown", async () => {
  const { qp, done } = await typed("healthcheck");
  assert.ok(qp.matchOnDetail && !qp.matchOnDescription);
  const hits = hitsOf(qp);
  const hit = hits.find((x) => x.entryId === "9ef4e3a8");
  assert.ok(hit, JSON.stringify(hits));
  assert.equal(hit.session, file(h.box, CI));
  const item = qp.items.find((i) => i.hit === hit)!;
  assert.match(item.detail!, /healthcheck/i);
  assert.equal(item.description, "Why does `make test` hang on CI?");
  assert.match(qp.title!, /of \d+\+? hits?/);
  qp.accept(item);
  await done;
  assert.ok(qp.disposed);
  assert.equal(h.api.tree.session, file(h.box, CI));
  const shown = treeView().revealed.at(-1);
  assert.ok(shown?.kind === "row" && shown.row.id === "9ef4e3a8");
  assert.deepEqual(treeView().selection, [shown]);
  const doc = stub.recorded.documents.at(-1)!;
  assert.equal(doc.uri?.scheme, "pi-entry");
  assert.equal(JSON.parse(doc.content).id, "9ef4e3a8");
});

test("a hit past the first window of rows is loaded and revealed", async () => {
  const { qp, done } = await typed("pagination");
  const hit = hitsOf(qp).find((x) => x.entryId === "cbbdd4d3")!;
  assert.ok(hit);
  qp.accept(qp.items.find((i) => i.hit === hit)!);
  await done;
  assert.equal(h.api.tree.session, file(h.box, SHOP));
  assert.ok(h.api.tree.rows.length > 4, "more than one window loaded");
  const shown = treeView().revealed.at(-1);
  assert.ok(shown?.kind === "row" && shown.row.id === "cbbdd4d3");
  assert.equal(h.api.tree.filter, "default");
});

test("a hit the shown filter hides (a label) is revealed under the filter 'all'", async () => {
  const { qp, done } = await typed("orm-dead-end");
  const hit = hitsOf(qp).find((x) => x.entryId === "560e7b0b");
  assert.ok(hit, JSON.stringify(hitsOf(qp)));
  qp.accept(qp.items.find((i) => i.hit === hit)!);
  await done;
  assert.equal(h.api.tree.filter, "all");
  const shown = treeView().revealed.at(-1);
  assert.ok(shown?.kind === "row" && shown.row.id === "560e7b0b");
  await vscode.commands.executeCommand("piSessions.setFilter", "default");
});

test("a tool call has no row of its own: its result's row is revealed", async () => {
  const { qp, done } = await typed("pytest");
  const hit = hitsOf(qp).find((x) => x.entryId === "3e210a28");
  assert.ok(hit, JSON.stringify(hitsOf(qp)));
  qp.accept(qp.items.find((i) => i.hit === hit)!);
  await done;
  const shown = treeView().revealed.at(-1);
  assert.ok(shown?.kind === "row" && shown.row.id === "6b297a01" && shown.row.parentId === "3e210a28");
  assert.equal(JSON.parse(stub.recorded.documents.at(-1)!.content).id, "3e210a28"); // the call itself is shown
});

test("only the last of quickly typed queries fills the picker; a stale answer never lands", async () => {
  const { qp, done } = await typed("healthcheck");
  qp.type("pagination");
  qp.type("pytest");
  await until(() => !qp.busy && hitsOf(qp).some((x) => x.entryId === "3e210a28"), 10_000, "the pytest hits");
  // the earlier queries' answers, had they arrived late, would hold other entries
  await new Promise((r) => setTimeout(r, 400));
  assert.ok(hitsOf(qp).every((x) => x.entryId !== "9ef4e3a8" && x.entryId !== "cbbdd4d3"), JSON.stringify(hitsOf(qp)));
  qp.type("");
  await until(() => qp.items.length === 0, 5_000, "an empty picker");
  qp.hide();
  await done;
  assert.ok(qp.disposed);
});

test("a query the server cannot read is said in the picker, and nothing is opened", async () => {
  const before = h.api.tree.session;
  const { qp, done } = await typed("re:(unclosed");
  assert.equal(qp.items.length, 1);
  assert.match(qp.items[0].label, /^\$\(error\) query: .*(pattern|regular|re:)/i); // the server names the problem
  assert.equal(qp.items[0].hit, undefined);
  qp.accept(qp.items[0]); // choosing the message does nothing
  assert.ok(qp.shown);
  qp.hide();
  await done;
  assert.equal(h.api.tree.session, before);
  assert.deepEqual(stub.recorded.messages, []);
});
