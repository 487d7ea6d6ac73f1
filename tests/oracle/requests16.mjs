// pi 1.6.0's Anthropic requests as the oracle (node >= 22.19), many cases in one run: for each
// (model, thinking level), generateBranchSummary (as navigateTree with `summarize` calls it) and
// compact (as AgentSession.compact calls it) against the given loopback fake Anthropic API, which
// records the bodies; nothing is written to SESSION_FILE. Then, with `turns`, an AgentSession in
// a new session of `turns.cwd` (agent dir `turns.agentDir`) that for each case switches to the
// model (setModel), sets the level (setThinkingLevel) and prompts once, as pi's /model,
// /thinking and a typed prompt do; then /compact, /tree with a summary, each with a prompt.
// Usage: node tests/oracle/requests16.mjs SESSION_FILE BASE_URL SPEC_JSON
//   SPEC: {cases: [[model, level], ...], branch: {from, to}, compaction: {leaf, keep},
//          turns?: {cwd, agentDir, sessionDir, text, tools?}}
// Prints {branch: [{model, thinking, entries, summary}], compaction: [{model, thinking, split, summary}],
//   turns: {file, prompts: [{model, thinking, userId}]}}.
process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

import path from "node:path";
import { pathToFileURL } from "node:url";

const { SessionManager, collectEntriesForBranchSummary, compact, createAgentSession, generateBranchSummary } = await import(
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
if (spec.turns) {
	const { cwd, agentDir, sessionDir, text, tools } = spec.turns;
	const sessionManager = SessionManager.create(cwd, sessionDir);
	const [firstId, firstLevel] = spec.cases[0];
	const { session } = await createAgentSession({ cwd, agentDir, sessionManager, tools,
		model: { ...ANTHROPIC_MODELS[firstId], baseUrl }, thinkingLevel: firstLevel });
	const prompts = [];
	for (const [modelId, thinkingLevel] of spec.cases) {
		await session.setModel({ ...ANTHROPIC_MODELS[modelId], baseUrl });
		session.setThinkingLevel(thinkingLevel);
		await session.prompt(text);
		const users = sessionManager.getEntries().filter((e) => e.type === "message" && e.message.role === "user");
		prompts.push({ model: modelId, thinking: thinkingLevel, effective: session.thinkingLevel,
			userId: users[users.length - 1].id });
	}
	// then /compact and a prompt, and /tree back to the last prompt with a branch summary and a
	// prompt: its request has the summary's user message and the prompt's own one after it
	const users = () => sessionManager.getEntries().filter((e) => e.type === "message" && e.message.role === "user");
	const [modelId, thinkingLevel] = spec.cases[spec.cases.length - 1];
	const last = (tag) => ({ model: modelId, thinking: thinkingLevel, effective: session.thinkingLevel,
		userId: users().at(-1).id, after: tag });
	await session.compact();
	await session.prompt(text);
	prompts.push(last("compaction"));
	await session.navigateTree(users().at(-1).id, { summarize: true });
	await session.prompt(text);
	prompts.push(last("branch_summary"));
	out.turns = { file: sessionManager.getSessionFile(), prompts };
	session.dispose?.();
}
process.stdout.write(JSON.stringify(out));
