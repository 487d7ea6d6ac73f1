// pi 1.6.0's SessionManager held open, driven line by line on stdin (one JSON answer a line):
//   open FILE    load the session as pi does when it resumes it
//   append TEXT  pi's next entry: a session name, appended with pi's own appendSessionInfo
//                (not a user message: that would leave the session busy, and writes queued)
//   ids FILE     the entry ids pi reads from the file now (a fresh load)
// Usage: node tests/oracle/pi_session.mjs   (node 22)
import { dirname } from "node:path";
import { createInterface } from "node:readline";

const { SessionManager } = await import("@earendil-works/pi-coding-agent");
let sm;
for await (const line of createInterface({ input: process.stdin })) {
  const space = line.indexOf(" ");
  const [cmd, arg] = space < 0 ? [line, ""] : [line.slice(0, space), line.slice(space + 1)];
  let out;
  try {
    if (cmd === "open") {
      sm = SessionManager.open(arg, dirname(arg));
      out = { leafId: sm.getLeafId() };
    } else if (cmd === "append") {
      out = { id: sm.appendSessionInfo(arg) };
    } else if (cmd === "ids") {
      out = { ids: SessionManager.open(arg, dirname(arg)).getEntries().map((e) => e.id) };
    } else {
      out = { error: `unknown command ${cmd}` };
    }
  } catch (e) {
    out = { error: String(e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
