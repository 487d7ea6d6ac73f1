// pi-ai 1.6.0's usage and cost of one answer per model (node >= 22.19): completeSimple against
// the given loopback fake Anthropic API, as every turn, branch summary and compaction pass of pi
// streams its answer and prices it (calculateCost).
// Usage: node tests/oracle/cost16.mjs BASE_URL MODELS_JSON
// Prints [{model, stopReason, usage}].
process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

const { completeSimple } = await import("@earendil-works/pi-ai/compat");
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");

const [baseUrl, modelsJson] = process.argv.slice(2);
const out = [];
for (const modelId of JSON.parse(modelsJson)) {
	const model = { ...ANTHROPIC_MODELS[modelId], baseUrl };
	const context = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };
	const answer = await completeSimple(model, context, { apiKey: "sk-ant-test-0123456789abcdef" });
	out.push({ model: modelId, stopReason: answer.stopReason, error: answer.errorMessage ?? null, usage: answer.usage });
}
process.stdout.write(JSON.stringify(out));
