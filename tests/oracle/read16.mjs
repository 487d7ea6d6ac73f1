// Run pi 1.6.0's own read tool: argv[2] is the cwd, argv[3] a JSON list of args; prints each result.
import { createToolDefinition } from "../../node_modules/@earendil-works/pi-coding-agent/dist/core/tools/index.js";

const cwd = process.argv[2];
const calls = JSON.parse(process.argv[3]);
const tool = createToolDefinition("read", cwd);
const out = [];
for (const args of calls) {
  try {
    const r = await tool.execute("t", args, undefined, undefined, undefined);
    out.push({ content: r.content, details: r.details ?? null, isError: false });
  } catch (e) {
    // as pi-agent-core's createErrorToolResult
    out.push({ content: [{ type: "text", text: e.message }], details: {}, isError: true });
  }
}
console.log(JSON.stringify(out));
