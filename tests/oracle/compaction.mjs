// pi 1.6.0's compaction as the oracle (run with node >= 22.19): for (leaf, keepRecentTokens,
// thinking) cases, prepareCompaction on the path, compact against the given loopback fake
// Anthropic API, then appendCompaction on a copy of the file, as AgentSession.compact does.
// Usage: node tests/oracle/compaction.mjs SESSION_FILE BASE_URL CASES_JSON
//   a case: {leaf, keep, thinking, custom?, model?} (model: an Anthropic model id, default claude-sonnet-4-5)
// Prints [{leaf, keep, thinking, custom, prep: {...} | null, result, entry}].
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

const { SessionManager, compact } = await import("@earendil-works/pi-coding-agent");
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");
const dist = path.join(path.dirname(new URL(import.meta.resolve("@earendil-works/pi-coding-agent")).pathname),
	"core", "compaction");
const { prepareCompaction } = await import(pathToFileURL(path.join(dist, "compaction.js")).href);
const { computeFileLists } = await import(pathToFileURL(path.join(dist, "utils.js")).href);

const [file, baseUrl, casesJson] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi16-compact-"));
const out = [];
let n = 0;
for (const { leaf, keep, thinking, custom, model: modelId } of JSON.parse(casesJson)) {
	const model = { ...ANTHROPIC_MODELS[modelId ?? "claude-sonnet-4-5"], baseUrl };
	const copy = path.join(tmp, `${n++}.jsonl`);
	fs.copyFileSync(file, copy);
	const sm = SessionManager.open(copy);
	sm.branch(leaf);
	const prep = prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
	if (!prep) {
		out.push({ leaf, keep, thinking, custom, model: modelId, prep: null });
		continue;
	}
	const rec = { leaf, keep, thinking, custom, model: modelId, prep: { firstKeptEntryId: prep.firstKeptEntryId,
		messagesToSummarize: prep.messagesToSummarize, turnPrefixMessages: prep.turnPrefixMessages,
		isSplitTurn: prep.isSplitTurn, tokensBefore: prep.tokensBefore, previousSummary: prep.previousSummary ?? null,
		...computeFileLists(prep.fileOps) } };
	try {
		const result = await compact(prep, model, "sk-ant-test-0123456789abcdef", undefined, custom, undefined, thinking);
		rec.result = result;
		const id = sm.appendCompaction(result.summary, result.firstKeptEntryId, result.tokensBefore, result.details, false,
			result.usage);
		rec.entry = JSON.parse(JSON.stringify(sm.getEntry(id)));
	} catch (e) {
		rec.result = { error: String(e?.message ?? e) };
	}
	out.push(rec);
}
fs.rmSync(tmp, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out));
