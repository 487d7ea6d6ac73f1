// pi's SessionManager as judge for many files in one process (the fuzzer): argv[2] is a JSON
// list of files; prints, per file, pi's entry count and buildSessionContext, or the error.
import { SessionManager } from "@mariozechner/pi-coding-agent";

const out = [];
for (const file of JSON.parse(process.argv[2])) {
  try {
    const sm = SessionManager.open(file);
    const ctx = sm.buildSessionContext();
    out.push({ entries: sm.getEntries().length, messages: ctx.messages, thinkingLevel: ctx.thinkingLevel });
  } catch (e) {
    out.push({ error: String(e && e.message ? e.message : e) });
  }
}
console.log(JSON.stringify(out));
