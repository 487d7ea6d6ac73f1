// pi's branch summaries as the oracle: for pairs (old leaf, target) of a session, pi's
// collectEntriesForBranchSummary / prepareBranchEntries / serializeConversation, and the
// request pi's generateBranchSummary sends to a loopback fake Anthropic API.
// Usage: node tests/oracle/branch_summary.mjs SESSION_FILE PAIRS_JSON
import http from "node:http";
import { getModel } from "@mariozechner/pi-ai";
import {
  SessionManager, collectEntriesForBranchSummary, convertToLlm, generateBranchSummary,
  prepareBranchEntries, serializeConversation,
} from "@mariozechner/pi-coding-agent";

const [file, pairsJson] = process.argv.slice(2);
const pairs = JSON.parse(pairsJson);
const bodies = [];
const sse = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    bodies.push({ path: req.url, body });
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(sse("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model: "m",
      content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
    res.write(sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    res.write(sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "## Goal\nA canned summary." } }));
    res.write(sse("content_block_stop", { index: 0 }));
    res.write(sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } }));
    res.write(sse("message_stop", {}));
    res.end();
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;
const model = { ...getModel("anthropic", "claude-sonnet-4-5"), baseUrl: `http://127.0.0.1:${port}` };
const sm = SessionManager.open(file);
const out = [];
for (const { from, to, custom, replace } of pairs) {
  const { entries, commonAncestorId } = collectEntriesForBranchSummary(sm, from, to);
  const prepared = prepareBranchEntries(entries, model.contextWindow - 16384);
  const text = serializeConversation(convertToLlm(prepared.messages));
  bodies.length = 0;
  const result = await generateBranchSummary(entries, { model, apiKey: "sk-test-key", customInstructions: custom,
    replaceInstructions: replace });
  out.push({ from, to, custom, replace, entryIds: entries.map((e) => e.id), commonAncestorId, serialized: text,
    tokens: prepared.totalTokens, messages: prepared.messages.length, request: bodies[0] ?? null, result });
}
server.close();
process.stdout.write(JSON.stringify(out));
