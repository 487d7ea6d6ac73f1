// A session that a running pi holds, as the views show it: a second connection to the same daemon plays
// the pi extension's side of docs/protocol.md ("Live sessions"): it registers the session, reports pi's
// state and leaf, and answers the writes the daemon hands to pi.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as vscode from "vscode";
import type { LiveInfo, SessionInfo, TreeResult } from "../src/protocol";
import type { SessionsElement, TreeElement } from "../src/views";
import { activated, allRows } from "./harness";
import { cli, file, type Server, startServer, until } from "./server";
import * as stub from "./stub/vscode";

const h = activated();
const SHOP = "01a22bae";
let pi: Server;
let shop: string;
/** The rows pi's tree would show (the file's, read by the command line before pi moves anything). */
let rows: TreeResult["rows"];
let fileLeaf: string;

const sessionsView = () => stub.treeView<SessionsElement>("piSessions.sessions");
const treeView = () => stub.treeView<TreeElement>("piSessions.tree");
const item = (tv: stub.StubTreeView<any>, el: unknown): any => tv.provider.getTreeItem(el);

/** The Sessions view's item for a session file. */
function sessionItem(session: string): any {
  const walk = (el?: SessionsElement): SessionsElement[] =>
    sessionsView().provider.getChildren(el).flatMap((c: SessionsElement) => [c, ...walk(c)]);
  const el = walk().find((e) => e.kind === "session" && e.node.info.session === session);
  return el && item(sessionsView(), el);
}

/** The Tree view's row that carries the leaf marker. */
function leafMarked(): string | undefined {
  const el = allRows().find((e) => item(treeView(), e).iconPath.id === "circle-filled");
  return el?.kind === "row" ? el.row.id : undefined;
}

const state = (over: Partial<LiveInfo> = {}): LiveInfo & { session: string } => ({
  session: shop,
  pid: pi.proc.pid!,
  leafId: fileLeaf,
  streaming: false,
  model: "anthropic/claude-sonnet-4-5",
  thinkingLevel: "off",
  ...over,
});

before(async () => {
  shop = file(h.box, SHOP);
  const tree: TreeResult = cli(h.box, ["tree", shop, "--filter", "all", "--json"]);
  rows = tree.rows;
  fileLeaf = tree.leafId!;
  pi = await startServer(h.box); // its connector reaches the editor's daemon: same folders, same runtime dir
  await vscode.commands.executeCommand("piSessions.openSession", shop);
});
after(async () => {
  await pi.stop();
});

test("a registered session is marked live in the Sessions list and the Tree header, with pi's pid and state", async () => {
  assert.equal(h.api.tree.live, undefined);
  assert.doesNotMatch(sessionItem(shop).description, /live/);
  await pi.request("pi/live/register", state());
  await until(() => /^● live in pi · idle · /.test(sessionItem(shop)?.description ?? ""), 5_000, "the live mark in the list");
  const tip: string = sessionItem(shop).tooltip.value;
  assert.match(tip, new RegExp(`pid ${pi.proc.pid}`));
  assert.match(tip, /idle/);
  assert.match(tip, /anthropic\/claude-sonnet-4-5/);
  assert.equal(sessionItem(shop).iconPath.id, "broadcast");
  await until(() => (treeView().description ?? "").includes("● live in pi · idle"), 5_000, "the live mark in the tree header");
  assert.match(treeView().message ?? "", new RegExp(`open in pi \\(pid ${pi.proc.pid}\\) · idle`));
  // the server's own answers say the same
  const listed = (await h.server.request<{ sessions: SessionInfo[] }>("pi/listSessions", {})).sessions.find((s) => s.session === shop)!;
  assert.equal(listed.live?.pid, pi.proc.pid);
});

test("pi starting a turn shows as streaming, and idle again after it", async () => {
  await pi.notify("pi/live/update", state({ streaming: true }));
  await until(() => (treeView().description ?? "").includes("● live in pi · streaming"), 5_000, "streaming in the header");
  await until(() => /^● live in pi · streaming/.test(sessionItem(shop).description), 5_000, "streaming in the list");
  assert.match(sessionItem(shop).tooltip.value, /streaming a turn/);
  await pi.notify("pi/live/update", state({ streaming: false }));
  await until(() => (treeView().description ?? "").includes("● live in pi · idle"), 5_000, "idle in the header");
});

test("pi moving its own leaf moves the sidebar's leaf within 200 ms of the notification", async (t) => {
  const target = rows.find((r) => r.role === "user" && !r.onActivePath)!;
  let heard = 0;
  const sub = h.server.onNotification("pi/sessionUpdated", (p) => {
    if (p.session === shop && p.live?.leafId === target.id && !heard) heard = performance.now();
  });
  try {
    await pi.notify("pi/live/update", state({ leafId: target.id }));
    await until(() => leafMarked() === target.id, 5_000, "the leaf marker on pi's new leaf");
    const moved = performance.now() - heard;
    assert.ok(heard > 0, "the notification carried pi's leaf");
    t.diagnostic(`the sidebar followed pi's leaf ${moved.toFixed(0)} ms after the notification`);
    assert.ok(moved < 200, `the sidebar followed ${moved.toFixed(0)} ms after the notification`);
    assert.equal(h.api.tree.leafId, target.id);
    const selected = treeView().selection[0];
    assert.equal(selected?.kind === "row" && selected.row.id, target.id, "the selection follows pi's leaf");
  } finally {
    sub.dispose();
  }
});

test("Continue Here on a live session is carried out by pi: the daemon hands it to pi, and the sidebar follows pi's leaf", async () => {
  const asked: any[] = [];
  const back = rows.filter((r) => r.onActivePath && r.role === "assistant").at(-1)!;
  pi.onRequest!("pi/live/switchBranch", async (params) => {
    asked.push(params);
    await pi.notify("pi/live/update", state({ leafId: params.targetId }));
    return { leafId: params.targetId, queued: false };
  });
  const el = allRows().find((e) => e.kind === "row" && e.row.id === back.id)!;
  stub.answers.picks.push(0, 0); // continue here, no summary
  await vscode.commands.executeCommand("piSessions.continueHere", el);
  assert.equal(asked.length, 1);
  assert.equal(asked[0].targetId, back.id);
  await until(() => leafMarked() === back.id, 5_000, "the leaf marker where pi moved");
  assert.equal(stub.recorded.messages.filter((m) => m.kind === "error").length, 0);
});

test("pi letting go makes it a plain file again, in the list and the header", async () => {
  await pi.notify("pi/live/withdraw", { session: shop });
  await until(() => h.api.tree.live === undefined, 5_000, "the tree without pi");
  await until(() => !/live/.test(sessionItem(shop).description), 5_000, "the list without the mark");
  assert.ok(!(treeView().description ?? "").includes("live"));
  assert.equal(treeView().message, undefined);
  assert.notEqual(sessionItem(shop).iconPath.id, "broadcast");
});
