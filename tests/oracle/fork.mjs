// pi's own createBranchedSession, for comparing forks: prints the new file's entries as JSON.
// Usage: node tests/oracle/fork.mjs SESSION_FILE LEAF_ID WORK_DIR
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { SessionManager, buildSessionContext } from "@mariozechner/pi-coding-agent";

const [file, leafId, work] = process.argv.slice(2);
mkdirSync(work, { recursive: true });
const copy = join(work, basename(file));
copyFileSync(file, copy); // pi may rewrite what it opens
const sm = SessionManager.open(copy, work);
const out = sm.createBranchedSession(leafId);
const lines = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const reopened = SessionManager.open(out, work);
const ctx = buildSessionContext(reopened.getEntries(), reopened.getLeafId());
process.stdout.write(JSON.stringify({ lines, messages: ctx.messages }));
