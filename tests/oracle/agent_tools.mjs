// Run pi's own read and ls tools: argv[2] is the cwd, argv[3] a JSON list of [name, args]; prints results.
import { createToolDefinition } from "../../node_modules/@mariozechner/pi-coding-agent/dist/core/tools/index.js";

const cwd = process.argv[2];
const calls = JSON.parse(process.argv[3]);
const out = [];
for (const [name, args] of calls) {
  const tool = createToolDefinition(name, cwd);
  try {
    const r = await tool.execute("t", args, undefined, undefined, undefined);
    out.push({ content: r.content, details: r.details ?? null, isError: false });
  } catch (e) {
    // as pi-agent-core's createErrorToolResult
    out.push({ content: [{ type: "text", text: e.message }], details: {}, isError: true });
  }
}
console.log(JSON.stringify(out));
