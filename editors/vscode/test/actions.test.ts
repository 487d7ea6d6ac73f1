import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, beforeEach, test } from "node:test";
import * as actions from "../src/actions";
import type { Choice, Ui } from "../src/actions";
import { errorMessage, type TreeResult, type TreeRow } from "../src/protocol";
import { cli, file, PYTHON, REPO, type Sandbox, sandbox, type Server, startServer } from "./server";

let box: Sandbox;
let server: Server;
before(async () => {
  box = sandbox();
  // pi 1.6.0 keeps the last 20,000 tokens of a session uncompacted: the samples are smaller
  server = await startServer(box, {}, [], { compaction: { keepRecentTokens: 1 } });
});
after(async () => {
  await server.stop();
  box.dispose();
});

/** A scripted user: answers prompts from queues and records what it was shown. */
class ScriptedUi implements Ui {
  picks: ((items: Choice<any>[]) => unknown)[] = [];
  inputs: (string | undefined)[] = [];
  shown: { text: string; language: string }[] = [];
  resubmitted: string[] = [];
  infos: string[] = [];
  progressTitles: string[] = [];
  clipboard = "";
  opened: string[] = [];
  async pick<T>(items: Choice<T>[]) {
    const f = this.picks.shift();
    return f ? (f(items) as T) : undefined;
  }
  async input() {
    return this.inputs.shift();
  }
  info(m: string) {
    this.infos.push(m);
  }
  progress<R>(title: string, task: (t: any) => Promise<R>) {
    this.progressTitles.push(title);
    return task(server.cancelSource().token);
  }
  async copy(text: string) {
    this.clipboard = text;
  }
  async showText(text: string, language: string) {
    this.shown.push({ text, language });
  }
  async resubmit(text: string) {
    this.resubmitted.push(text);
  }
  async openSession(s: string) {
    this.opened.push(s);
  }
}

const byValue = (v: unknown) => (items: Choice<any>[]) => items.find((i) => i.value === v)?.value;
let ui: ScriptedUi;
beforeEach(() => {
  ui = new ScriptedUi();
});

const SHOP = "01a22bae";
async function rows(session: string, filter = "default"): Promise<TreeResult> {
  return server.request<TreeResult>("pi/getTree", { session, filter });
}
function lines(session: string): any[] {
  return readFileSync(session, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

test("continue here on a user message: the leaf moves to its parent and the text comes back", async () => {
  const shop = file(box, SHOP);
  const before = await rows(shop);
  const user = before.rows.find((r) => r.role === "user" && !r.onActivePath)!;
  ui.picks.push(byValue("continue"), byValue("none"));
  const res = await actions.continueAt(server, ui, shop, user);
  assert.ok(res && typeof res === "object");
  assert.equal(res.leafId, user.parentId);
  assert.deepEqual(ui.resubmitted, ["Go with the ORM."]);
  assert.equal((await rows(shop)).leafId, user.parentId);
  assert.equal(lines(shop).length, readFileSync(shop, "utf8").split("\n").filter(Boolean).length);
});

test("continue here with a summary: pi's branch_summary entry lands under the target", async () => {
  const shop = file(box, SHOP);
  const t = await rows(shop);
  // a target below the leaf leaves nothing behind, and pi 1.6.0 then writes no summary
  const parents = new Map<string, string | null>(lines(shop).map((e) => [e.id, e.parentId]));
  const below = (id: string | null): boolean => id !== null && (id === t.leafId || below(parents.get(id) ?? null));
  const target = t.rows.find((r) => r.role === "assistant" && !r.onActivePath && !below(r.id))!;
  ui.picks.push(byValue("continue"), byValue("instructions"));
  ui.inputs.push("focus on the tests");
  const count = lines(shop).length;
  const res = (await actions.continueAt(server, ui, shop, target)) as { summaryEntryId: string; leafId: string };
  assert.deepEqual(ui.progressTitles, ["Summarizing the branch…"]);
  const written = lines(shop);
  assert.equal(written.length, count + 1);
  const entry = written[written.length - 1];
  assert.equal(entry.type, "branch_summary");
  assert.equal(entry.id, res.summaryEntryId);
  assert.equal(entry.parentId, target.id);
  assert.equal(res.leafId, entry.id);
});

test("a cancelled prompt sends nothing", async () => {
  const shop = file(box, SHOP);
  const count = lines(shop).length;
  const t = await rows(shop);
  ui.picks.push(byValue("continue"), () => undefined);
  assert.equal(await actions.continueAt(server, ui, shop, t.rows[2]), undefined);
  ui.picks.push(byValue("continue"), byValue("instructions"));
  ui.inputs.push(undefined);
  assert.equal(await actions.continueAt(server, ui, shop, t.rows[2]), undefined);
  assert.equal(lines(shop).length, count);
});

test("fork into a new session from a user message: the path to its parent, the text back for editing", async () => {
  const shop = file(box, SHOP);
  const t = await rows(shop);
  const user = t.rows.find((r) => r.role === "user" && r.parentId !== null)!;
  ui.picks.push(byValue("fork"));
  const forked = (await actions.continueAt(server, ui, shop, user)) as string;
  assert.deepEqual(ui.opened, [forked]);
  assert.equal(ui.resubmitted.length, 1);
  const entries = lines(forked);
  assert.equal(entries[0].type, "session");
  assert.equal(entries[0].parentSession, shop);
  assert.equal(entries[entries.length - 1].id, user.parentId);
});

test("labels: set, then clear with an empty answer", async () => {
  const shop = file(box, SHOP);
  const row = (await rows(shop)).rows[1];
  ui.inputs.push("  keep  ");
  await actions.setLabel(server, ui, shop, row);
  assert.equal((await rows(shop)).rows.find((r) => r.id === row.id)!.label, "keep");
  ui.inputs.push("");
  await actions.setLabel(server, ui, shop, (await rows(shop)).rows.find((r) => r.id === row.id)!);
  assert.equal((await rows(shop)).rows.find((r) => r.id === row.id)!.label, undefined);
  const last = lines(shop).at(-1);
  assert.equal(last.type, "label");
  assert.equal(last.targetId, row.id);
});

test("rename, persist for pi, compact", async () => {
  const notes = file(box, "01a22bb1");
  ui.inputs.push("architecture notes");
  await actions.rename(server, ui, notes, undefined);
  const listed = await server.request<{ sessions: any[] }>("pi/listSessions", {});
  assert.equal(listed.sessions.find((s) => s.session === notes).name, "architecture notes");

  const t = await rows(notes, "all");
  const target = t.rows.find((r) => r.role === "assistant")!;
  await actions.persist(server, ui, notes, target.id);
  const marker = lines(notes).at(-1);
  assert.equal(marker.type, "custom");
  assert.equal(marker.customType, "pi-server/leaf");
  assert.equal(marker.parentId, target.id);

  ui.inputs.push("");
  const res = await actions.compact(server, ui, notes);
  assert.ok(res);
  const entry = lines(notes).at(-1);
  assert.equal(entry.type, "compaction");
  assert.equal(entry.id, res.entryId);
  assert.match(ui.infos.at(-1)!, /Compacted/);
});

test("copy context: the JSON the command line prints, in each format", async () => {
  const shop = file(box, SHOP);
  const t = await rows(shop);
  const at = t.rows.find((r: TreeRow) => r.role === "assistant")!;
  for (const format of ["agent", "llm", "anthropic", "openai"] as const) {
    const text = await actions.copyContext(server, ui, shop, at.id, format);
    const want = JSON.parse(
      execFileSync(PYTHON, ["-m", "pi_server", "context", shop, "--leaf", at.id, "--format", format], { cwd: REPO, encoding: "utf8" }),
    );
    assert.equal(text, ui.clipboard);
    assert.deepEqual(JSON.parse(ui.clipboard), format === "anthropic" ? want.request : want.messages, format);
  }
  ui.picks.push(byValue("llm"));
  await actions.copyContext(server, ui, shop, undefined);
  assert.ok(Array.isArray(JSON.parse(ui.clipboard)));
});

test("summarize a branch without writing; open an entry as JSON", async () => {
  const shop = file(box, SHOP);
  const count = lines(shop).length;
  const t = await rows(shop);
  const res = await actions.summarize(server, ui, shop, t.rows.at(-1)!);
  assert.equal(res.source, "extractive");
  assert.equal(ui.shown.at(-1)!.text, res.summary);
  assert.equal(lines(shop).length, count);
  const json = await actions.entryJson(server, shop, t.rows[0].id);
  assert.deepEqual(JSON.parse(json), lines(shop).find((e) => e.id === t.rows[0].id));
});

test("server errors carry the server's message and kind", async () => {
  const shop = file(box, SHOP);
  await assert.rejects(server.request("pi/getEntry", { session: shop, id: "nope" }), (err) => {
    assert.match(errorMessage(err), /nope.*\(EntryNotFound\)/);
    return true;
  });
  await assert.rejects(server.request("pi/getTree", { session: "/etc/passwd" }), (err) => /OutsideRoots/.test(errorMessage(err)));
  assert.ok(cli(box, ["ls", "--json"]).sessions.length >= 3);
});
