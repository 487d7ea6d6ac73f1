import assert from "node:assert/strict";
import { appendFileSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import type { TreeResult, TreeRow } from "../src/protocol";
import { expandGutters } from "../src/format";
import { groupSessions, SessionsModel } from "../src/sessionsModel";
import { TreeModel } from "../src/treeModel";
import { cli, file, type Sandbox, sandbox, type Server, startServer, until } from "./server";

let box: Sandbox;
let server: Server;
before(async () => {
  box = sandbox();
  server = await startServer(box);
});
after(async () => {
  await server.stop();
  box.dispose();
});

const SHOP = "01a22bae"; // the sample with two branches, labels, a compaction and a branch summary

/** Every row under `row` in the widget, at any depth. */
function descendants(model: TreeModel, row?: TreeRow): string[] {
  return model.children(row).flatMap((r) => [r.id, ...descendants(model, r)]);
}

test("sessions: grouped by project, newest first, searched by the server", async () => {
  const model = new SessionsModel(server);
  await model.load();
  assert.deepEqual(
    model.groups.map((g) => [g.cwd, g.sessions.length]),
    [
      ["/home/demo/notes", 1],
      ["/home/demo/shop", 2],
    ],
  );
  const listed = cli(box, ["ls", "--json"]).sessions.map((s: { session: string }) => s.session);
  assert.deepEqual(model.sessions.map((s) => s.session), listed);
  model.query = "alembic";
  await model.load();
  assert.deepEqual(model.sessions.map((s) => s.session), [file(box, SHOP)]);
});

test("sessions: a fork nests under the session it came from", async () => {
  const shop = file(box, SHOP);
  const tree: TreeResult = cli(box, ["tree", shop, "--json"]);
  const { session: forked } = await server.request<{ session: string }>("pi/fork", { session: shop, leafId: tree.rows[3].id });
  const model = new SessionsModel(server);
  await until(() => {
    void model.load();
    return model.find(forked) !== undefined;
  }, 10_000, "the fork to be listed");
  await model.load();
  const group = model.groups.find((g) => g.cwd === "/home/demo/shop")!;
  const parent = group.sessions.find((n) => n.info.session === shop)!;
  assert.deepEqual(parent.forks.map((n) => n.info.session), [forked]);
  assert.ok(!group.sessions.some((n) => n.info.session === forked), "not listed twice");
  assert.equal(JSON.parse(readFileSync(forked, "utf8").split("\n")[0]).parentSession, shop);
});

test("sessions: headers naming each other do not nest forever", () => {
  const s = (session: string, parentSession: string) => ({
    session, parentSession, id: session, cwd: "/p", created: "", modified: session, messageCount: 0, entryCount: 0, firstMessage: "", leafId: null,
  });
  const groups = groupSessions([s("a", "b"), s("b", "a")]);
  assert.equal(groups.length, 1);
  const count = (ns: { forks: any[] }[]): number => ns.reduce((n, x) => n + 1 + count(x.forks), 0);
  assert.equal(count(groups[0].sessions), 2);
});

test("tree: the server's rows, nested so that collapsing a row hides what pi's fold hides", async () => {
  const shop = file(box, SHOP);
  const model = new TreeModel(server);
  await model.open(shop);
  for (const filter of ["default", "all", "no-tools"] as const) {
    await model.setFilter(filter);
    const want: TreeResult = cli(box, ["tree", shop, "--filter", filter, "--json"]);
    assert.deepEqual(model.rows.map((r) => r.id), want.rows.map((r) => r.id));
    assert.equal(descendants(model).length, model.rows.length, "every row is reachable in the widget");
    for (const row of model.rows.filter((r) => r.foldable)) {
      const folded: TreeResult = cli(box, ["tree", shop, "--filter", filter, "--fold", row.id, "--json"]);
      const hidden = new Set(want.rows.map((r) => r.id));
      for (const r of folded.rows) hidden.delete(r.id);
      assert.deepEqual(new Set(descendants(model, row)), hidden, `fold ${row.id} (${filter})`);
    }
  }
  await model.setFilter("default");
  const foldable = model.rows.filter((r) => r.foldable);
  await model.setFolded(foldable[1].id, true);
  const row = model.row(foldable[1].id)!;
  assert.equal(row.folded, true);
  assert.deepEqual(model.children(row), []);
  await model.setFolded(foldable[1].id, false);
  assert.ok(model.children(model.row(foldable[1].id)).length > 0);
});

test("tree: gutters shared per window expand to each row's own gutters", async () => {
  const shop = file(box, SHOP);
  for (const filter of ["default", "all", "no-tools", "user-only"]) {
    for (const [offset, limit] of [[0, 1000], [3, 5]]) {
      const params = { session: shop, filter, offset, limit };
      const plain: TreeResult = await server.request<TreeResult>("pi/getTree", params);
      const shared: TreeResult = await server.request<TreeResult>("pi/getTree", { ...params, sharedGutters: true });
      assert.ok(shared.gutterNodes && shared.rows.every((r) => r.gutter !== undefined && !("gutters" in r)));
      assert.ok(plain.rows.some((r) => r.gutters.length > 0) || filter === "user-only");
      assert.deepEqual(expandGutters(shared), plain, `${filter} ${offset}`);
    }
  }
});

test("tree: windows load on demand and add up to the whole tree", async () => {
  const shop = file(box, SHOP);
  const model = new TreeModel(server, 4);
  await model.open(shop);
  await model.setFilter("all");
  assert.equal(model.rows.length, 4);
  assert.ok(model.hasMore);
  while (model.hasMore) await model.loadMore();
  const want: TreeResult = cli(box, ["tree", shop, "--filter", "all", "--json"]);
  assert.deepEqual(model.rows, want.rows);
  await model.setSearch("alembic");
  const searched: TreeResult = cli(box, ["tree", shop, "--search", "alembic", "--filter", "all", "--json"]);
  assert.deepEqual(model.rows.map((r) => r.id), searched.rows.map((r) => r.id));
  assert.ok(searched.rows.length > 0 && searched.rows.length < want.rows.length);
});

test("tree: an entry appended to the file shows after pi/sessionUpdated", async () => {
  const notes = file(box, "01a22bb1");
  const model = new TreeModel(server);
  await model.open(notes);
  server.onNotification("pi/sessionUpdated", (p) => {
    if (p.session === notes) void model.reload();
  });
  const last = model.leafId!;
  const entry = {
    type: "message", id: "feedf00d", parentId: last, timestamp: new Date().toISOString(),
    message: { role: "user", content: [{ type: "text", text: "One more bullet, please." }], timestamp: Date.now() },
  };
  appendFileSync(notes, `${JSON.stringify(entry)}\n`);
  await until(() => model.rows.some((r) => r.id === "feedf00d"), 10_000, "the appended row");
  assert.equal(model.leafId, "feedf00d");
  assert.equal(model.row("feedf00d")!.title, "user: One more bullet, please.");
});

test("tree: a reload overtaken by a newer one resolves once the newest answer is shown", async () => {
  const shop = file(box, SHOP);
  const model = new TreeModel(server);
  await model.open(shop);
  const switched = cli(box, ["tree", shop, "--json"]).rows.find((r: TreeRow) => r.role === "user" && !r.onActivePath)!;
  // three requests in this order: the first reload's answer is stale when it comes
  const first = model.reload();
  const switching = server.request("pi/switchBranch", { session: shop, targetId: switched.id });
  const second = model.reload();
  await first; // done only when the newer answer (after the switch) is in
  assert.equal(model.leafId, switched.parentId);
  await Promise.all([switching, second]);
  assert.equal(model.leafId, switched.parentId);
});
