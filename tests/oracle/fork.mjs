// pi's own createBranchedSession, for comparing forks: prints the new file's entries as JSON.
// Usage: node tests/oracle/fork.mjs SESSION_FILE LEAF_ID WORK_DIR [1.6]
// With "1.6" (run with node 22) it asks pi 1.6.0, else pi 0.73.1.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";

const [file, leafId, work, version] = process.argv.slice(2);
const pkg = version === "1.6" ? "@earendil-works/pi-coding-agent" : "@mariozechner/pi-coding-agent";
const { SessionManager, buildSessionContext } = await import(pkg);
mkdirSync(work, { recursive: true });
const copy = join(work, basename(file));
copyFileSync(file, copy); // pi may rewrite what it opens
const sm = SessionManager.open(copy, work);
const out = sm.createBranchedSession(leafId);
const lines = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const reopened = SessionManager.open(out, work);
const ctx = buildSessionContext(reopened.getEntries(), reopened.getLeafId());
process.stdout.write(JSON.stringify({ lines, messages: ctx.messages }));
