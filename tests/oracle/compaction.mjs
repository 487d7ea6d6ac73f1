// pi's compaction as the oracle: prepareCompaction for (leaf, keepRecentTokens) cases,
// and the requests pi's compact sends to a loopback fake Anthropic API.
// Usage: node tests/oracle/compaction.mjs SESSION_FILE CASES_JSON
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { getModel } from "@mariozechner/pi-ai";
import { SessionManager, compact } from "@mariozechner/pi-coding-agent";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, "..", "..", "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core", "compaction");
const { prepareCompaction } = await import(pathToFileURL(path.join(dist, "compaction.js")).href);
const { computeFileLists } = await import(pathToFileURL(path.join(dist, "utils.js")).href);

const [file, casesJson] = process.argv.slice(2);
const bodies = [];
const sse = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    bodies.push(body);
    const isPrefix = body.includes("This is the PREFIX of a turn");
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(sse("message_start", { message: { id: "m", type: "message", role: "assistant", model: "m", content: [],
      stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } } }));
    res.write(sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    res.write(sse("content_block_delta", { index: 0, delta: { type: "text_delta",
      text: isPrefix ? "PREFIX SUMMARY" : "HISTORY SUMMARY" } }));
    res.write(sse("content_block_stop", { index: 0 }));
    res.write(sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }));
    res.write(sse("message_stop", {}));
    res.end();
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const model = { ...getModel("anthropic", "claude-sonnet-4-5"), baseUrl: `http://127.0.0.1:${server.address().port}` };
const sm = SessionManager.open(file);
const out = [];
for (const { leaf, keep, thinking } of JSON.parse(casesJson)) {
  const entries = sm.getBranch(leaf);
  const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: keep };
  const prep = prepareCompaction(entries, settings);
  if (!prep) { out.push({ leaf, keep, prep: null }); continue; }
  const files = computeFileLists(prep.fileOps);
  bodies.length = 0;
  let result = null;
  try { result = await compact(prep, model, "sk-test", undefined, undefined, undefined, thinking); }
  catch (e) { result = { error: String(e) }; }
  out.push({ leaf, keep, thinking, prep: { firstKeptEntryId: prep.firstKeptEntryId, messagesToSummarize: prep.messagesToSummarize,
    turnPrefixMessages: prep.turnPrefixMessages, isSplitTurn: prep.isSplitTurn, tokensBefore: prep.tokensBefore,
    previousSummary: prep.previousSummary ?? null, ...files }, bodies: [...bodies].sort(), result });
}
server.close();
process.stdout.write(JSON.stringify(out));
