import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { liveDetails, liveLine, oneLine, relativeTime, rowLine, sessionTitle, shortPath } from "../src/format";
import { FILTERS, type TreeResult } from "../src/protocol";
import { cli, file, type Sandbox, sandbox } from "./server";

let box: Sandbox;
before(() => {
  box = sandbox();
});
after(() => box.dispose());

test("rows are drawn exactly as pi-server tree (pi's /tree) draws them, for every filter and a fold", () => {
  for (const f of box.files) {
    for (const filter of FILTERS) {
      const res: TreeResult = cli(box, ["tree", f, "--filter", filter, "--json"]);
      const text: string = cli(box, ["tree", f, "--filter", filter]);
      const lines = text.split("\n").filter((l) => l && !l.startsWith("("));
      assert.deepEqual(res.rows.map(rowLine), lines, `${f} ${filter}`);
      const foldable = res.rows.filter((r) => r.foldable);
      if (foldable.length) {
        const id = foldable[foldable.length - 1].id;
        const folded: TreeResult = cli(box, ["tree", f, "--filter", filter, "--fold", id, "--json"]);
        const ftext: string = cli(box, ["tree", f, "--filter", filter, "--fold", id]);
        assert.deepEqual(folded.rows.map(rowLine), ftext.split("\n").filter((l) => l && !l.startsWith("(")));
      }
    }
  }
});

test("relative times read as people say them", () => {
  const now = Date.parse("2026-12-02T12:00:00Z");
  assert.equal(relativeTime("2026-12-02T11:59:50Z", now), "just now");
  assert.equal(relativeTime("2026-12-02T11:55:00Z", now), "5m ago");
  assert.equal(relativeTime("2026-12-02T09:00:00Z", now), "3h ago");
  assert.equal(relativeTime("2026-11-29T12:00:00Z", now), "3d ago");
  assert.equal(relativeTime("2026-10-01T12:00:00Z", now), "2mo ago");
  assert.equal(relativeTime("2024-10-01T12:00:00Z", now), "2y ago");
  assert.equal(relativeTime("not a date", now), "");
});

test("session titles: the name, else the first message on one line", () => {
  const base = { session: "/s.jsonl", id: "x", cwd: "/p", created: "", modified: "", messageCount: 1, entryCount: 1, leafId: null };
  assert.equal(sessionTitle({ ...base, name: "refactor", firstMessage: "hi" }), "refactor");
  assert.equal(sessionTitle({ ...base, firstMessage: "fix\n  the   build" }), "fix the build");
  assert.equal(sessionTitle({ ...base, firstMessage: "" }), "(no messages)");
  assert.equal(oneLine("x".repeat(100), 10), `${"x".repeat(9)}…`);
  assert.equal(shortPath("/home/u/src", "/home/u"), "~/src");
  assert.equal(shortPath("/home/user2", "/home/u"), "/home/user2");
  assert.ok(file(box, "01a22bae").endsWith(".jsonl"));
});

test("a live session's mark and its details", () => {
  const live = { pid: 4242, leafId: "a1", streaming: false, model: "anthropic/claude-sonnet-4-5", thinkingLevel: "high" };
  assert.equal(liveLine(live), "● live in pi · idle");
  assert.equal(liveLine({ ...live, streaming: true }), "● live in pi · streaming");
  assert.equal(liveDetails(live), "open in pi (pid 4242) · idle · anthropic/claude-sonnet-4-5 · thinking high");
  assert.equal(liveDetails({ ...live, streaming: true, model: null, thinkingLevel: null }), "open in pi (pid 4242) · streaming a turn");
});
