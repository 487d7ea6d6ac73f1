// Run pi's own tools: argv[2] is the pi package ("@earendil-works" for 1.6.0, "@mariozechner"
// for 0.73.1), argv[3] the cwd, argv[4] a JSON list of [name, args]; prints each result.
const [scope, cwd, callsJson] = process.argv.slice(2);
const { createToolDefinition } = await import(
  `../../node_modules/${scope}/pi-coding-agent/dist/core/tools/index.js`
);

const out = [];
for (const [name, args] of JSON.parse(callsJson)) {
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
