// pi 1.6.0's Anthropic requests as the oracle (node >= 22.19), many cases in one run: for each
// (model, thinking level), generateBranchSummary (as navigateTree with `summarize` calls it) and
// compact (as AgentSession.compact calls it) against the given loopback fake Anthropic API, which
// records the bodies. Nothing is written to the session file.
// Usage: node tests/oracle/requests16.mjs SESSION_FILE BASE_URL SPEC_JSON
//   SPEC: {cases: [[model, level], ...], branch: {from, to}, compaction: {leaf, keep}}
// Prints {branch: [{model, thinking, entries, summary}], compaction: [{model, thinking, split, summary}]}.
process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

import path from "node:path";
import { pathToFileURL } from "node:url";

const { SessionManager, collectEntriesForBranchSummary, compact, generateBranchSummary } = await import(
	"@earendil-works/pi-coding-agent"
);
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");
const dist = path.join(path.dirname(new URL(import.meta.resolve("@earendil-works/pi-coding-agent")).pathname),
	"core", "compaction");
const { prepareCompaction } = await import(pathToFileURL(path.join(dist, "compaction.js")).href);

const KEY = "sk-ant-test-0123456789abcdef";
const [file, baseUrl, specJson] = process.argv.slice(2);
const spec = JSON.parse(specJson);
const sm = SessionManager.open(file);
const out = { branch: [], compaction: [] };

sm.branch(spec.branch.from);
const { entries } = collectEntriesForBranchSummary(sm, spec.branch.from, spec.branch.to);
for (const [modelId, thinkingLevel] of spec.cases) {
	const model = { ...ANTHROPIC_MODELS[modelId], baseUrl };
	const result = await generateBranchSummary(entries, { model, apiKey: KEY, thinkingLevel, reserveTokens: 16384 });
	out.branch.push({ model: modelId, thinking: thinkingLevel, entries: entries.length, summary: result.summary ?? null,
		error: result.error ?? null });
}

sm.branch(spec.compaction.leaf);
const prep = prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384,
	keepRecentTokens: spec.compaction.keep });
for (const [modelId, thinkingLevel] of spec.cases) {
	const model = { ...ANTHROPIC_MODELS[modelId], baseUrl };
	const result = await compact(prep, model, KEY, undefined, undefined, undefined, thinkingLevel);
	out.compaction.push({ model: modelId, thinking: thinkingLevel, split: prep.isSplitTurn, summary: result.summary });
}
process.stdout.write(JSON.stringify(out));
