// pi 1.6.0's branch summaries as the oracle (run with node >= 22.19): for pairs (old leaf, target)
// of a session, what pi's navigateTree does with `summarize`: collectEntriesForBranchSummary,
// generateBranchSummary against the given loopback fake Anthropic API (thinking = the level of
// the session at the old leaf), then branchWithSummary on a copy of the file.
// Usage: node tests/oracle/branch_summary.mjs SESSION_FILE BASE_URL PAIRS_JSON
//   a pair: {from, to, custom?, replace?, model?} (model: an Anthropic model id, default claude-sonnet-4-5)
// Prints [{from, to, entryIds, commonAncestorId, serialized, tokens, messages, thinking, result, entry, leaf}].
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

const { SessionManager, buildSessionContext, collectEntriesForBranchSummary, convertToLlm, generateBranchSummary,
	prepareBranchEntries, serializeConversation } = await import("@earendil-works/pi-coding-agent");
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");

const [file, baseUrl, pairsJson] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi16-branch-"));
const out = [];
let n = 0;
for (const { from, to, custom, replace, model: modelId } of JSON.parse(pairsJson)) {
	const model = { ...ANTHROPIC_MODELS[modelId ?? "claude-sonnet-4-5"], baseUrl };
	const copy = path.join(tmp, `${n++}.jsonl`);
	fs.copyFileSync(file, copy);
	const sm = SessionManager.open(copy);
	sm.branch(from);
	const { entries, commonAncestorId } = collectEntriesForBranchSummary(sm, from, to);
	const prepared = prepareBranchEntries(entries, model.contextWindow - 16384);
	const thinking = buildSessionContext(sm.getEntries(), from).thinkingLevel;
	const rec = { from, to, custom, replace, model: modelId, entryIds: entries.map((e) => e.id), commonAncestorId, thinking,
		serialized: serializeConversation(convertToLlm(prepared.messages)), tokens: prepared.totalTokens,
		messages: prepared.messages.length, result: null, entry: null };
	if (entries.length > 0) {
		const result = await generateBranchSummary(entries, { model, apiKey: "sk-ant-test-0123456789abcdef",
			thinkingLevel: thinking, customInstructions: custom, replaceInstructions: replace, reserveTokens: 16384 });
		rec.result = result;
		if (result.summary) {
			// navigateTree's new leaf: a user or custom message hands its parent
			const target = sm.getEntry(to);
			const toParent = (target.type === "message" && target.message.role === "user") || target.type === "custom_message";
			const newLeaf = toParent ? target.parentId : to;
			const details = { readFiles: result.readFiles || [], modifiedFiles: result.modifiedFiles || [] };
			const id = sm.branchWithSummary(newLeaf, result.summary, details, false, result.usage);
			rec.entry = JSON.parse(JSON.stringify(sm.getEntry(id)));
			rec.leaf = newLeaf;
		}
	}
	out.push(rec);
}
fs.rmSync(tmp, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out));
