// pi 1.6.0's answers for one session file and leaf, as JSON on stdout (run with node >= 22.19).
// Usage: node tests/oracle/context16.mjs SESSION_FILE [OPTIONS_JSON]
//   OPTIONS_JSON: {"leaf": id | null | "__default__", "filters": [...], "search": "",
//                  "models": ["claude-sonnet-4-5", "claude-opus-5"], "openai": true}
// Prints {leafId, agent, llm, tokens, thinkingLevel, model, system, anthropic: {model: {body|error}},
//         openai, tree: {filter: rows}, sessionInfo}: buildSessionContext, convertToLlm, the sum of
// estimateTokens, getCurrentSystemMessage of the context, the bodies pi-ai 1.6.0 builds (captured
// in onPayload, nothing is sent), the /tree rows of each filter and SessionManager.list's entry.
import path from "node:path";

process.env.HOME = process.env.HOME || "/home/oracle";
delete process.env.PI_CACHE_RETENTION;

const { SessionManager, buildSessionContext, convertToLlm, estimateTokens, TreeSelectorComponent, initTheme } =
	await import("@earendil-works/pi-coding-agent");
const { getCurrentSystemMessage } = await import("@earendil-works/pi-ai");
const anthropic = (await import("@earendil-works/pi-ai/api/anthropic-messages")).streamSimple;
const openai = (await import("@earendil-works/pi-ai/api/openai-completions")).streamSimple;
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");
const { OPENAI_MODELS } = await import("@earendil-works/pi-ai/providers/openai.models");

initTheme("dark", false);
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI
const ANSI = /[\u001b\u009b][[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g;
const strip = (s) => s.replace(ANSI, "");
const BASE_URL = "http://127.0.0.1:9";

async function capture(stream, model, messages, reasoning) {
	let body;
	const opts = { apiKey: "test-key", onPayload: (p) => { body = JSON.parse(JSON.stringify(p)); throw new Error("captured"); } };
	if (reasoning) opts.reasoning = reasoning;
	try {
		await stream({ ...model, baseUrl: BASE_URL }, { messages }, opts).result();
	} catch (err) {
		if (body === undefined) return { error: String(err?.message ?? err) };
	}
	return body === undefined ? { error: "no payload" } : { body };
}

function treeRows(sm, leaf, filter, search) {
	const tl = new TreeSelectorComponent(sm.getTree(), leaf, 40, () => {}, () => {}, () => {}, undefined, filter).getTreeList();
	tl.searchQuery = search;
	tl.applyFilter();
	return tl.filteredNodes.map((fn) => ({
		id: fn.node.entry.id,
		indent: tl.multipleRoots ? Math.max(0, fn.indent - 1) : fn.indent,
		connector: fn.showConnector && !fn.isVirtualRootChild ? (fn.isLast ? "└─" : "├─") : "",
		gutters: fn.gutters.map((g) => ({ position: g.position, show: g.show })),
		title: strip(tl.getEntryDisplayText(fn.node, false)),
	}));
}

const [file, optsJson] = process.argv.slice(2);
const opts = { leaf: "__default__", filters: ["default", "no-tools", "user-only", "labeled-only", "all"], search: "",
	models: ["claude-sonnet-4-5", "claude-opus-5"], openai: true, ...(optsJson ? JSON.parse(optsJson) : {}) };
const sm = SessionManager.open(file);
const entries = sm.getEntries();
const leafArg = opts.leaf === "__default__" ? undefined : opts.leaf;
const ctx = buildSessionContext(entries, leafArg);
const llm = convertToLlm(ctx.messages);
const reasoning = ctx.thinkingLevel !== "off" ? ctx.thinkingLevel : undefined;
const out = {
	leafId: leafArg ?? sm.getLeafId(),
	agent: ctx.messages,
	llm,
	tokens: ctx.messages.reduce((s, m) => s + estimateTokens(m), 0),
	thinkingLevel: ctx.thinkingLevel,
	model: ctx.model,
	system: getCurrentSystemMessage(ctx.messages) ?? null,
	anthropic: {},
	tree: {},
};
for (const id of opts.models) out.anthropic[id] = await capture(anthropic, ANTHROPIC_MODELS[id], llm, reasoning);
if (opts.openai) out.openai = await capture(openai, { ...OPENAI_MODELS["gpt-4o"], api: "openai-completions" }, llm, reasoning);
const treeLeaf = leafArg === undefined ? sm.getLeafId() : leafArg;
for (const f of opts.filters) out.tree[f] = treeRows(sm, treeLeaf, f, opts.search);
const info = (await SessionManager.list(sm.getCwd(), path.dirname(path.resolve(file)))).find((s) => path.resolve(s.path) === path.resolve(file));
out.sessionInfo = info ? { ...info, created: info.created.toISOString(), modified: info.modified.toISOString() } : null;
process.stdout.write(JSON.stringify(out));
