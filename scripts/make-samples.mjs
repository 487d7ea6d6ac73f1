// Regenerates pi_server/samples/: small sessions written by pi's own
// SessionManager (branches, a compaction, a branch summary, labels, a name),
// shipped so pi-server has something real to show on a machine without pi.
// Usage: node scripts/make-samples.mjs
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const out = new URL("../pi_server/samples/", import.meta.url).pathname;
rmSync(out, { recursive: true, force: true });
let clock = Date.parse("2026-11-30T09:00:00.000Z");
const realNow = Date.now;
Date.now = () => clock; // fixed, readable timestamps
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...a) { super(...(a.length ? a : [clock])); }
  static now() { return clock; }
};
const tick = (s = 7) => { clock += s * 1000; };

const usage = { input: 1200, output: 180, cacheRead: 0, cacheWrite: 0, totalTokens: 1380,
  cost: { input: 0.0036, output: 0.0027, cacheRead: 0, cacheWrite: 0, total: 0.0063 } };
const user = (text) => { tick(); return { role: "user", content: [{ type: "text", text }], timestamp: clock }; };
const assistant = (content, stopReason = "stop") => { tick(4); return {
  role: "assistant", content, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
  usage, stopReason, timestamp: clock }; };
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const result = (id, toolName, text, isError = false) => { tick(1); return {
  role: "toolResult", toolCallId: id, toolName, content: [{ type: "text", text }], isError, timestamp: clock }; };

function session(cwd, build) {
  const dir = join(out, `--${cwd.replace(/^\//, "").replace(/[/\\:]/g, "-")}--`);
  mkdirSync(dir, { recursive: true });
  const sm = SessionManager.create(cwd, dir);
  build(sm);
  return sm.getSessionFile();
}

// 1. A refactor with a dead end, summarized, and a compaction.
session("/home/demo/shop", (sm) => {
  sm.appendModelChange("anthropic", "claude-sonnet-4-5");
  sm.appendThinkingLevelChange("medium");
  const ask = sm.appendMessage(user("The orders module mixes SQL with HTTP handlers. Refactor the data layer into a repository."));
  sm.appendMessage(assistant([{ type: "thinking", thinking: "Look at the module first.", thinkingSignature: "sig-1" },
    call("t1", "read", { path: "/home/demo/shop/src/orders.py" })], "toolUse"));
  sm.appendMessage(result("t1", "read", "def list_orders(request):\n    rows = db.execute('SELECT * FROM orders')\n    return json(rows)\n"));
  sm.appendMessage(assistant([{ type: "text", text: "Two options: a repository class per aggregate, or an ORM. I'll try SQLAlchemy first." }]));
  sm.appendMessage(user("Go with the ORM."));
  sm.appendMessage(assistant([call("t2", "bash", { command: "pip install sqlalchemy==1.3 && pytest -q" })], "toolUse"));
  sm.appendMessage(result("t2", "bash", "ERROR: sqlalchemy 1.3 conflicts with the pinned alembic 1.13", true));
  const dead = sm.appendMessage(assistant([{ type: "text", text: "The ORM route is blocked by the alembic pin; this needs a dependency upgrade first." }]));
  sm.appendLabelChange(dead, "orm-dead-end");
  // back to the question, with what the dead end taught
  sm.branchWithSummary(ask, "## Goal\nMove SQL out of the HTTP handlers.\n\n## Learned\n- SQLAlchemy 1.3 conflicts with the pinned alembic 1.13; an ORM needs an upgrade first.\n\n<modified-files>\n</modified-files>",
    { readFiles: ["/home/demo/shop/src/orders.py"], modifiedFiles: [] });
  sm.appendMessage(assistant([call("t3", "write", { path: "/home/demo/shop/src/repository.py", content: "class OrderRepository: ..." })], "toolUse"));
  sm.appendMessage(result("t3", "write", "Wrote 1 file"));
  const kept = sm.appendMessage(assistant([{ type: "text", text: "Added OrderRepository; the handlers now call it instead of db.execute." }]));
  sm.appendMessage(user("Run the tests."));
  sm.appendMessage(assistant([call("t4", "bash", { command: "pytest -q" })], "toolUse"));
  sm.appendMessage(result("t4", "bash", "12 passed in 0.41s"));
  sm.appendMessage(assistant([{ type: "text", text: "All 12 tests pass." }]));
  sm.appendLabelChange(kept, "repository");
  tick(60);
  sm.appendCompaction("## Goal\nRefactor the orders data layer.\n\n## Done\n- OrderRepository in src/repository.py\n- Tests pass (12)\n", kept, 18400,
    { readFiles: ["/home/demo/shop/src/orders.py"], modifiedFiles: ["/home/demo/shop/src/repository.py"] });
  sm.appendMessage(user("Now add pagination to list_orders."));
  sm.appendMessage(assistant([{ type: "text", text: "Added `limit`/`offset` parameters with a default page size of 50." }]));
  sm.appendSessionInfo("orders repository refactor");
});

// 2. A short question with two answers tried side by side.
session("/home/demo/shop", (sm) => {
  const q = sm.appendMessage(user("Why does `make test` hang on CI?"));
  sm.appendMessage(assistant([{ type: "text", text: "Probably the database container never reports healthy. Check the healthcheck command." }]));
  sm.branch(q);
  sm.appendMessage(assistant([{ type: "text", text: "The test runner waits on stdin; CI has none. Run pytest with `-p no:cacheprovider < /dev/null`." }]));
  sm.appendMessage(user("That was it, thanks."));
  sm.appendMessage(assistant([{ type: "text", text: "Glad it works." }]));
});

// 3. Another project, forked from nothing, with an aborted turn.
session("/home/demo/notes", (sm) => {
  sm.appendMessage(user("Summarize docs/architecture.md in five bullet points."));
  sm.appendMessage(assistant([call("n1", "read", { path: "/home/demo/notes/docs/architecture.md" })], "toolUse"));
  sm.appendMessage(result("n1", "read", "# Architecture\nThe app has three layers: ..."));
  sm.appendMessage(assistant([], "aborted"));
  sm.appendMessage(user("Sorry, go on."));
  sm.appendMessage(assistant([{ type: "text", text: "- Three layers\n- A message bus between them\n- SQLite storage\n- A plugin API\n- A CLI front end" }]));
});

Date.now = realNow;
for (const d of readdirSync(out)) console.log(d, readdirSync(join(out, d)).length, "files");
