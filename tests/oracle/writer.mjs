// A real concurrent writer: pi's own SessionManager appending to a session while
// pi-server appends beside it. Then pi reopens the file and reports what it sees.
// Usage: node tests/oracle/writer.mjs SESSION_FILE COUNT DELAY_MS
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [file, countArg, delayArg] = process.argv.slice(2);
const count = Number(countArg);
const delay = Number(delayArg);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sm = SessionManager.open(file);
const ids = [];
for (let i = 0; i < count; i++) {
  const text = `turn ${i} ` + "x".repeat(200 + ((i * 7919) % 3000)); // lines of varied size
  ids.push(sm.appendMessage({
    role: "assistant", content: [{ type: "text", text }], api: "anthropic-messages", provider: "anthropic",
    model: "claude-sonnet-4-5", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: Date.now(),
  }));
  if (i % 3 === 0) ids.push(sm.appendCustomEntry("writer-test", { i }));
  await sleep(delay);
}
const reopened = SessionManager.open(file);
process.stdout.write(JSON.stringify({ written: ids, entries: reopened.getEntries().map((e) => e.id) }));
