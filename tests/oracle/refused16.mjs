// pi-ai 1.6.0 on requests with tools that ask for constrained sampling (node >= 22.19): for each
// (model, tools) case, completeSimple against the given loopback fake Anthropic API with one
// system message declaring the tools and one user message; a tool that requires strict
// sampling it cannot have makes pi-ai refuse the request before sending it.
// Usage: node tests/oracle/refused16.mjs BASE_URL CASES_JSON   (a case: {model, tools})
// Prints [{model, stopReason, error}].
process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

const { completeSimple } = await import("@earendil-works/pi-ai/compat");
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");

const [baseUrl, casesJson] = process.argv.slice(2);
const out = [];
for (const { model: modelId, tools } of JSON.parse(casesJson)) {
	const model = { ...ANTHROPIC_MODELS[modelId], baseUrl };
	const messages = [
		{ role: "system", content: "You help.", toolsAdded: tools, timestamp: 0 },
		{ role: "user", content: "hi", timestamp: 0 },
	];
	const answer = await completeSimple(model, { messages }, { apiKey: "sk-ant-test-0123456789abcdef" });
	out.push({ model: modelId, stopReason: answer.stopReason, error: answer.errorMessage ?? null });
}
process.stdout.write(JSON.stringify(out));
