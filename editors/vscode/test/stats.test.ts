// The branch's tokens and cost: pi/getSessionStats of the real server, shown in the status bar while a tree is
// open and said by Show Branch Stats; on a stub of the vscode API.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as vscode from "vscode";
import { compactNumber, type SessionStats, type Stats, statsLine, statsMessage } from "../src/stats";
import type { TreeElement } from "../src/views";
import { activated, allRows } from "./harness";
import { file } from "./server";
import * as stub from "./stub/vscode";

const h = activated();
const SHOP = "01a22bae";

const item = () => stub.statusItems.get("piSessions.stats")!;
const stats = (session: string) => h.server.request<SessionStats>("pi/getSessionStats", { session });

test("numbers read short: tokens in k and M, cost in dollars, the context share when known", () => {
  assert.deepEqual([950, 1234, 12_345, 2_500_000].map(compactNumber), ["950", "1.2k", "12k", "2.5M"]);
  const s: Stats = {
    userMessages: 2, assistantMessages: 3, toolCalls: 1, toolResults: 1, totalMessages: 6,
    tokens: { input: 1000, output: 234, cacheRead: 0, cacheWrite: 0, total: 1234 },
    cost: 0.4219,
    contextUsage: { tokens: 90_000, contextWindow: 200_000, percent: 45 },
  };
  assert.equal(statsLine(s), "1.2k tokens · $0.42 · 45% of 200k");
  assert.equal(statsLine({ ...s, contextUsage: { tokens: null, contextWindow: 200_000, percent: null } }), "1.2k tokens · $0.42");
  assert.equal(statsLine({ ...s, cost: 0.0012, contextUsage: undefined }), "1.2k tokens · $0.0012");
});

test("with a session's tree open, the status bar shows its branch's tokens and cost; Show Branch Stats says branch and file", async () => {
  const shop = file(h.box, SHOP);
  assert.ok(!item().visible, "no tree, no stats");
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  const s = await stats(shop);
  assert.ok(s.branch.totalMessages < s.totalMessages, "the branch is part of the file");
  assert.ok(item().visible);
  assert.equal(item().text, `$(graph) ${statsLine(s.branch)}`);
  assert.equal(item().tooltip, statsMessage(s));
  assert.equal(item().command, "piSessions.showStats");
  await vscode.commands.executeCommand("piSessions.showStats");
  const shown = stub.recorded.messages.at(-1)!;
  assert.equal(shown.kind, "info");
  assert.equal(shown.message, statsMessage(s));
  assert.match(shown.message, new RegExp(`^This branch: ${s.branch.totalMessages} messages .* Whole session: ${s.totalMessages} messages`));
});

test("after a switch to another branch the status bar shows that branch's numbers", async () => {
  const shop = file(h.box, SHOP);
  await vscode.commands.executeCommand("piSessions.openSession", shop);
  const before = item().text;
  const target = allRows().find((el) => el.kind === "row" && el.row.role === "assistant" && !el.row.onActivePath)!;
  stub.answers.picks.push(0, 0); // continue here, no summary
  await vscode.commands.executeCommand("piSessions.continueHere", target);
  const s = await stats(shop);
  assert.equal(item().text, `$(graph) ${statsLine(s.branch)}`);
  assert.notEqual(item().text, before);
});
