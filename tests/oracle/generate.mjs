#!/usr/bin/env node
// Test-oracle generator for pi-server.
//
// Uses the pinned pi package (node_modules/@mariozechner/pi-coding-agent) to
//   1. generate random-but-seeded session files with pi's own SessionManager,
//      plus two hand-written edge-case files,
//   2. record what pi computes for every file (contexts, LLM payloads, tree,
//      tree-selector outlines, session list info) as <name>.expected.json,
//   3. do the same for migrated copies of tests/fixtures/pi/*.jsonl.
//
// Usage: node tests/oracle/generate.mjs OUTDIR [--seed N] [--count K] [--pi 1.6 [--old DIR]]
// See tests/oracle/README.md for the output schema.
//
// With `--pi 1.6` the oracle is pi 1.6.0 (@earendil-works/pi-coding-agent, node >= 22.19):
// the generated sessions also hold the entries only 1.6.0 writes (system messages,
// context edits, usage entries, retain-none compactions...), the files written by
// pi 1.6.0 in tests/fixtures/pi16 are cases too, and `--old DIR` adds the sessions of
// a 0.73.1 oracle run (its OUTDIR) read by 1.6.0.

import crypto from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

// ---------------------------------------------------------------------------
// Environment: fixed HOME (formatToolCall shortens paths under HOME to "~"),
// no env-driven provider behaviour. Must happen before pi is imported.
// ---------------------------------------------------------------------------
const HOME = "/home/oracle";
process.env.HOME = HOME;
delete process.env.USERPROFILE;
delete process.env.PI_CACHE_RETENTION;

const FAKE_BASE_URL = "http://127.0.0.1:9";
const API_KEY = "test-key";
const FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "pi");
const MISSING_LEAF = "__missing__";
const RENDER_WIDTH = 100000;

const PI16 = process.argv.includes("--pi") && process.argv[process.argv.indexOf("--pi") + 1] === "1.6";
const PI_PACKAGE = PI16 ? "@earendil-works/pi-coding-agent" : "@mariozechner/pi-coding-agent";
const PI_AI_PACKAGE = PI16 ? "@earendil-works/pi-ai" : "@mariozechner/pi-ai";
const ORACLE_DIR = path.dirname(fileURLToPath(import.meta.url));
const PI16_FIXTURES_DIR = path.resolve(ORACLE_DIR, "..", "fixtures", "pi16");

const pi = await import(PI_PACKAGE);
const { SessionManager, buildSessionContext, convertToLlm, estimateTokens, TreeSelectorComponent, initTheme } = pi;
let streamSimpleAnthropic;
let streamSimpleOpenAICompletions;
let getModel;
// 0.73.1's context builder, to flag the contexts where 1.6.0 builds another one
let buildSessionContext073 = null;
if (PI16) {
	streamSimpleAnthropic = (await import("@earendil-works/pi-ai/api/anthropic-messages")).streamSimple;
	streamSimpleOpenAICompletions = (await import("@earendil-works/pi-ai/api/openai-completions")).streamSimple;
	const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");
	const { OPENAI_MODELS } = await import("@earendil-works/pi-ai/providers/openai.models");
	const catalogs = { anthropic: ANTHROPIC_MODELS, openai: OPENAI_MODELS };
	getModel = (provider, id) => catalogs[provider]?.[id];
	buildSessionContext073 = (await import("@mariozechner/pi-coding-agent")).buildSessionContext;
} else {
	streamSimpleAnthropic = (await import("@mariozechner/pi-ai/anthropic")).streamSimpleAnthropic;
	streamSimpleOpenAICompletions = (await import("@mariozechner/pi-ai/openai-completions")).streamSimpleOpenAICompletions;
	getModel = (await import("@mariozechner/pi-ai")).getModel;
}
// pi 1.6.0: one Anthropic model without mid-conversation system messages, one with them
const ANTHROPIC_KINDS = ["claude-sonnet-4-5", "claude-opus-5"];

let stripAnsi;
try {
	stripAnsi = (await import("strip-ansi")).default;
} catch {
	// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI
	const re = /[\u001b\u009b][[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g;
	stripAnsi = (s) => s.replace(re, "");
}

initTheme("dark", false);

function readPkgVersion(name) {
	try {
		const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
		const p = path.join(root, "node_modules", name, "package.json");
		return JSON.parse(fs.readFileSync(p, "utf8")).version;
	} catch {
		return null;
	}
}

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------
function parseArgs(argv) {
	const out = { outdir: null, seed: 1, count: 12, old: null };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "--pi") i++;
		else if (a === "--old") out.old = path.resolve(argv[++i]);
		else if (a === "--seed") out.seed = Number(argv[++i]);
		else if (a.startsWith("--seed=")) out.seed = Number(a.slice(7));
		else if (a === "--count") out.count = Number(argv[++i]);
		else if (a.startsWith("--count=")) out.count = Number(a.slice(8));
		else if (!out.outdir) out.outdir = a;
		else throw new Error(`unexpected argument: ${a}`);
	}
	if (!out.outdir) throw new Error("usage: node tests/oracle/generate.mjs OUTDIR [--seed N] [--count K]");
	if (!Number.isInteger(out.seed)) throw new Error("--seed must be an integer");
	if (!Number.isInteger(out.count) || out.count < 0) throw new Error("--count must be a non-negative integer");
	out.outdir = path.resolve(out.outdir);
	return out;
}

// ---------------------------------------------------------------------------
// Seeded PRNG
// ---------------------------------------------------------------------------
function mulberry32(a) {
	return () => {
		a |= 0;
		a = (a + 0x6d2b79f5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
function mixSeed(seed, stream) {
	let h = (Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul((stream + 1) | 0, 0x85ebca77)) >>> 0;
	h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
	h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
	return (h ^ (h >>> 16)) >>> 0;
}
class Rng {
	constructor(seed) {
		this.f = mulberry32(seed >>> 0);
	}
	next() {
		return this.f();
	}
	int(a, b) {
		return a + Math.floor(this.f() * (b - a + 1));
	}
	chance(p) {
		return this.f() < p;
	}
	pick(arr) {
		return arr[Math.floor(this.f() * arr.length)];
	}
	weighted(pairs) {
		const total = pairs.reduce((s, [, w]) => s + w, 0);
		let r = this.f() * total;
		for (const [v, w] of pairs) {
			r -= w;
			if (r < 0) return v;
		}
		return pairs[pairs.length - 1][0];
	}
	shuffle(arr) {
		const a = [...arr];
		for (let i = a.length - 1; i > 0; i--) {
			const j = Math.floor(this.f() * (i + 1));
			[a[i], a[j]] = [a[j], a[i]];
		}
		return a;
	}
	hex(n) {
		let s = "";
		for (let i = 0; i < n; i++) s += "0123456789abcdef"[Math.floor(this.f() * 16)];
		return s;
	}
	alnum(n) {
		const cs = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		let s = "";
		for (let i = 0; i < n; i++) s += cs[Math.floor(this.f() * cs.length)];
		return s;
	}
	uuid() {
		const h = this.hex(32).split("");
		h[12] = "4";
		h[16] = "89ab"[Math.floor(this.f() * 4)];
		const s = h.join("");
		return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
	}
}

// Make pi's entry ids (randomUUID().slice(0, 8)) reproducible during generation.
const realRandomUUID = crypto.randomUUID;
function seedEntryIds(rng) {
	crypto.randomUUID = () => rng.uuid();
	syncBuiltinESMExports();
}
function unseedEntryIds() {
	crypto.randomUUID = realRandomUUID;
	syncBuiltinESMExports();
}

// ---------------------------------------------------------------------------
// Content generators
// ---------------------------------------------------------------------------
const PNG_1x1 =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_2x2 =
	"iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAFklEQVR42mP8z8DwnwEImBigAMYAAEXUAv8f6pUZAAAAAElFTkSuQmCC";

const WORDS = [
	"alpha", "bravo", "refactor", "session", "parser", "tree", "branch", "compile", "render", "widget",
	"config", "deploy", "cache", "token", "stream", "queue", "lambda", "vector", "matrix", "kernel",
	"socket", "router", "schema", "buffer", "thread", "mutex", "python", "server", "oracle", "fixture",
	"naïve", "café", "Straße", "日本語", "ΣΟΦΙΑ", "Ünïcödé", "zürich", "fjörd", "привет", "مرحبا",
	"emoji🚀", "build", "test", "lint", "merge", "rebase", "commit", "summary", "label", "folder",
];
const SPECIALS = ["\n", "\t", "\u2028", "\u2029", "\u0085", "🎉", "👩‍💻", "🧪", "\u00a0", "\r\n", "  ", "\u200b", "😀", "\n\n"];
// Whitespace-ish strings where JS and Python disagree about trim()/strip():
// JS trim() strips NBSP/U+2028/U+FEFF but NOT U+0085 or U+001C..U+001F.
const TRICKY_BLANKS = ["", " ", "\n\t ", "\u0085", "\u00a0\u2028", "\u001f", "\ufeff", "\u200b"];

const cov = new Set();
function mark(key) {
	cov.add(key);
}
function choose(rng, cat, values) {
	const uncovered = values.filter((v) => !cov.has(`${cat}:${v}`));
	const v = uncovered.length > 0 && rng.chance(0.6) ? rng.pick(uncovered) : rng.pick(values);
	mark(`${cat}:${v}`);
	return v;
}

function sentence(rng, n) {
	const parts = [];
	for (let i = 0; i < n; i++) {
		parts.push(rng.pick(WORDS));
		if (rng.chance(0.08)) parts.push(rng.pick(SPECIALS));
	}
	let s = parts.join(" ");
	s = s[0].toUpperCase() + s.slice(1);
	return `${s}${rng.pick([".", "?", "!", "", "…"])}`;
}

function genText(rng, cat = "text") {
	const style = choose(rng, cat, [
		"short", "multiline", "long", "tabs", "emoji", "u2028", "u2029", "u0085", "boundary200", "plain", "plain", "plain",
	]);
	switch (style) {
		case "short":
			return rng.pick(WORDS);
		case "multiline":
			return `${sentence(rng, rng.int(3, 9))}\n${sentence(rng, rng.int(3, 9))}\n\n- ${rng.pick(WORDS)}\n- ${rng.pick(WORDS)}`;
		case "long": {
			let s = "";
			while (s.length < 220 + rng.int(0, 400)) s += `${sentence(rng, rng.int(5, 12))} `;
			return s.trimEnd();
		}
		case "tabs":
			return `col1\tcol2\tcol3\n${rng.pick(WORDS)}\t${rng.int(0, 999)}\t${rng.pick(WORDS)}`;
		case "emoji":
			return `${sentence(rng, 4)} 🚀🎉 ${rng.pick(["👩‍💻", "🧑🏽‍🚀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "🇩🇪"])} done`;
		case "u2028":
			return `${sentence(rng, 3)}\u2028${sentence(rng, 3)}`;
		case "u2029":
			return `${sentence(rng, 3)}\u2029${sentence(rng, 3)}`;
		case "u0085":
			return `\u0085${sentence(rng, 3)}\u0085next line\u0085`;
		case "boundary200":
			// UTF-16 slicing at 200 (tree-selector extractContent) cuts the surrogate pair.
			return `${"x".repeat(199 - rng.int(0, 1))}🚀${sentence(rng, 6)}`;
		default:
			return sentence(rng, rng.int(3, 14));
	}
}

function searchWordsFromText(t) {
	return t
		.split(/\s+/)
		.map((w) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ""))
		.filter((w) => w.length >= 3);
}

const MODELS = [
	{ provider: "anthropic", model: "claude-sonnet-4-5", api: "anthropic-messages" },
	{ provider: "anthropic", model: "claude-opus-4-6", api: "anthropic-messages" },
	{ provider: "anthropic", model: "claude-sonnet-4-5", api: "anthropic-messages" },
	{ provider: "anthropic", model: "claude-haiku-4-5", api: "anthropic-messages" },
	{ provider: "anthropic", model: "claude-imaginary-9", api: "anthropic-messages" },
	{ provider: "openai", model: "gpt-4o", api: "openai-completions" },
	{ provider: "openai", model: "gpt-4o", api: "openai-completions" },
	{ provider: "google", model: "gemini-2.5-pro", api: "google-generative-ai" },
];
// 1.6.0 sessions also name a model with mid-conversation system messages
const MODEL_CHOICES = PI16 ? [...MODELS, { provider: "anthropic", model: "claude-opus-5", api: "anthropic-messages" }] : MODELS;
const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"];
const TOOLS = ["read", "write", "edit", "bash", "grep", "find", "ls", "web_search", "mcp__github__create_issue"];

function genPath(rng) {
	return rng.pick([
		`${HOME}/project/src/main.ts`,
		`${HOME}/project/README.md`,
		`${HOME}x/not-home.txt`, // startsWith(HOME) quirk -> "~x/not-home.txt"
		"/etc/hosts",
		"src/lib/parser.py",
		"./relative/file with spaces.txt",
		`${HOME}/naïve/日本語.md`,
		"",
	]);
}

function genToolCallId(rng) {
	return rng.pick([
		() => `toolu_01${rng.alnum(22)}`,
		() => `toolu_01${rng.alnum(22)}`,
		() => `call_${rng.alnum(24)}`,
		() => `call_${rng.alnum(12)}|fc_${rng.alnum(30)}+/${rng.alnum(40)}==`, // responses-style, >40 chars, '|'
		() => `tool.call:${rng.int(1, 99)}/${rng.alnum(6)}`, // chars anthropic must normalise
		() => `call_${rng.alnum(50)}`, // >40 chars, truncated by openai-completions
	])();
}

function genToolArgs(rng, name) {
	switch (name) {
		case "read": {
			if (rng.chance(0.2)) return { file_path: genPath(rng) };
			const a = { path: genPath(rng) };
			if (rng.chance(0.4)) a.offset = rng.pick([0, 1, rng.int(2, 500)]);
			if (rng.chance(0.4)) a.limit = rng.pick([0, 1, rng.int(2, 200)]);
			return a;
		}
		case "write":
			return { path: genPath(rng), content: genText(rng, "writeContent") };
		case "edit":
			return rng.chance(0.5)
				? { path: genPath(rng), oldText: rng.pick(WORDS), newText: genText(rng, "editText") }
				: { file_path: genPath(rng), edits: [{ oldText: "a", newText: "b" }] };
		case "bash":
			return rng.pick([
				() => ({ command: "ls -la" }),
				() => ({ command: `cd ${HOME}/project && npm test\n\techo done` }),
				() => ({ command: `${"echo abcdefghij ".repeat(3)}x🚀 && grep -rn "${rng.pick(WORDS)}" .` }), // emoji at the 50 boundary
				() => ({ command: `python3 -c 'print("${"y".repeat(60)}")'`, timeout: 30 }),
				() => ({ command: `  git status  ` }),
				() => ({ command: "" }),
			])();
		case "grep":
			return rng.chance(0.5) ? { pattern: `fn\\s+${rng.pick(WORDS)}` } : { pattern: rng.pick(WORDS), path: genPath(rng) };
		case "find":
			return rng.chance(0.5) ? { pattern: "*.py" } : { pattern: "**/*.ts", path: genPath(rng) };
		case "ls":
			return rng.chance(0.4) ? {} : { path: genPath(rng) };
		default:
			return rng.pick([
				() => ({ query: rng.pick(WORDS) }),
				() => ({ query: `${sentence(rng, 6)}`, max_results: rng.int(1, 20), ratio: 0.1, tiny: 1e-7, big: 1e21, neg: -2.5 }),
				() => ({ title: `Bug: ${rng.pick(WORDS)}`, body: "line1\nline2\u2028", labels: ["bug", "ünïcode"], nested: { a: [1, 2, { b: null }] } }),
				() => ({ x: "abcdefghijklmnopqrstuvwxyz0123456🚀tail" }), // emoji at the 40 boundary of JSON
			])();
	}
}

function genToolResultText(rng, name, args) {
	switch (name) {
		case "read":
			return `${genText(rng, "toolResultText")}\n`;
		case "bash":
			return rng.pick(["", "ok\n", `${genText(rng, "toolResultText")}\nexit 0`]);
		case "ls":
			return "a.txt\nb/\nc.py";
		default:
			return genText(rng, "toolResultText");
	}
}

function usage(rng) {
	const input = rng.int(0, 50000);
	const output = rng.int(0, 8000);
	const cacheRead = rng.chance(0.5) ? rng.int(0, 100000) : 0;
	const cacheWrite = rng.chance(0.3) ? rng.int(0, 20000) : 0;
	const ci = input * 3e-6;
	const co = output * 15e-6;
	const cr = cacheRead * 0.3e-6;
	const cw = cacheWrite * 3.75e-6;
	return {
		input,
		output,
		cacheRead,
		cacheWrite,
		totalTokens: input + output + cacheRead + cacheWrite,
		cost: { input: ci, output: co, cacheRead: cr, cacheWrite: cw, total: ci + co + cr + cw },
	};
}

// ---------------------------------------------------------------------------
// Session generation with pi's SessionManager
// ---------------------------------------------------------------------------
const CWDS = [`${HOME}/projects/alpha`, `${HOME}/projects/beta`, "/srv/work/gamma:v2"];

function encodeCwd(cwd) {
	// Same encoding as pi's getDefaultSessionDir().
	return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

// ---------------------------------------------------------------------------
// pi 1.6.0 system messages: the full prompt + tools, then patches
// ---------------------------------------------------------------------------
const TOOL_DECLS = [
	{ name: "read", description: "Read file contents", parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file" }, offset: { type: "number" }, limit: { type: "number" } }, required: ["path"] }, constrainedSampling: true },
	{ name: "bash", description: "Execute a bash command in the current working directory.", parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "number" } }, required: ["command"] } },
	{ name: "edit", description: "Edit a file by replacing exact text — ünïcode 🚀", parameters: { type: "object", properties: { path: { type: "string" }, edits: { type: "array", items: { type: "object" } } }, required: ["path", "edits"] } },
	{ name: "write", description: "Write content to a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } },
	{ name: "web_search", description: "Search the web", parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } },
];

function fullSystemMessage(rng, cwd, timestamp) {
	const tools = rng.shuffle(TOOL_DECLS).slice(0, rng.int(2, TOOL_DECLS.length));
	const sections = {
		preamble: "You are a coding assistant running inside pi, a coding agent harness. Help users inspect files, run commands, and modify code.",
		tools: `<tools>\n${tools.map((t) => `- ${t.name}: ${t.description}`).join("\n")}\n</tools>`,
		rules: `<rules>\n- ${sentence(rng, 6)}\n- ${sentence(rng, 5)}\n</rules>`,
	};
	if (rng.chance(0.6)) sections.docs = "<docs>\nMain documentation: /opt/pi/README.md\n</docs>";
	if (rng.chance(0.4)) sections.project_context = `<project_context>\n${genText(rng, "systemSection")}\n</project_context>`;
	if (rng.chance(0.4)) sections.skills = "<skills>\nnone\n</skills>";
	sections.cwd = `<cwd>\n${cwd}\n</cwd>`;
	mark("system:full");
	return { role: "system", content: "", sections, toolsAdded: tools, timestamp };
}

function patchSystemMessage(rng, tools, timestamp) {
	const msg = { role: "system", content: "", timestamp };
	const kind = choose(rng, "systemPatch", ["section", "remove-section", "tools", "content", "mixed"]);
	if (kind === "section" || kind === "mixed")
		msg.sections = { [rng.pick(["skills", "rules", "addendum", "custom_notes"])]: `<skills>\n${sentence(rng, 4)}\n</skills>` };
	if (kind === "remove-section") msg.sections = { [rng.pick(["cwd", "docs", "skills", "no_such_section"])]: null };
	if (kind === "tools" || kind === "mixed") {
		const present = TOOL_DECLS.filter((t) => tools.has(t.name));
		const absent = TOOL_DECLS.filter((t) => !tools.has(t.name));
		if (present.length > 0 && rng.chance(0.6)) {
			const gone = rng.pick(present);
			msg.toolsRemoved = [{ name: gone.name }];
			tools.delete(gone.name);
			if (rng.chance(0.3)) {
				// a changed definition: removal + addition of the same name
				msg.toolsAdded = [{ ...gone, description: `${gone.description} (v2)` }];
				tools.add(gone.name);
			}
		}
		if (absent.length > 0 && !msg.toolsAdded) {
			const added = rng.pick(absent);
			msg.toolsAdded = [added];
			tools.add(added.name);
		}
	}
	if (kind === "content" || kind === "mixed" || (!msg.sections && !msg.toolsAdded && !msg.toolsRemoved))
		msg.content = rng.chance(0.8) ? genText(rng, "systemContent") : [{ type: "text", text: genText(rng, "systemContent") }];
	mark(`system:${kind}`);
	return msg;
}

function generateSession(rng, idx, outdir) {
	const cwd = CWDS[idx % CWDS.length];
	const dir = path.join(outdir, "sessions", encodeCwd(cwd));
	const sm = SessionManager.create(cwd, dir);
	sm.newSession({ id: rng.uuid() });

	let clock = Date.UTC(2026, 0, 1) + idx * 86400000 + rng.int(0, 3600000);
	const now = () => (clock += rng.int(200, 90000));
	let model = rng.pick(MODEL_CHOICES);
	let pendingCalls = []; // tool calls on the current leaf awaiting results
	const usedCallIds = [];
	const labeled = new Set();
	// an assistant turn adds up to 4 entries -> 20..149 total; one 1.6.0 file is long
	const target = PI16 && idx === 0 ? 1100 : rng.int(20, 146);
	const tools = new Set(); // tool names the replayed system message declares (1.6.0)
	let hasSystem = false;
	let hasAssistant = false;

	const allIds = () => sm.getEntries().map((e) => e.id);

	const appendUser = () => {
		const kind = choose(rng, "user", ["string", "array-text", "array-image", "image-only", "blank", "string", "string"]);
		let content;
		if (kind === "string") content = genText(rng, "userText");
		else if (kind === "blank") content = rng.pick([rng.pick(TRICKY_BLANKS), [{ type: "text", text: rng.pick(TRICKY_BLANKS) }]]);
		else if (kind === "array-text") content = [{ type: "text", text: genText(rng, "userText") }, { type: "text", text: genText(rng, "userText") }];
		else if (kind === "array-image")
			content = [{ type: "text", text: genText(rng, "userText") }, { type: "image", data: PNG_1x1, mimeType: "image/png" }];
		else content = [{ type: "image", data: PNG_2x2, mimeType: "image/png" }];
		sm.appendMessage({ role: "user", content, timestamp: now() });
		pendingCalls = [];
	};

	const appendAssistant = (forceText = false) => {
		if (rng.chance(0.15)) model = rng.pick(MODEL_CHOICES);
		mark(`model:${model.provider}/${model.model}`);
		const content = [];
		const thinkingKind = forceText ? "none" : choose(rng, "thinking", ["none", "none", "signed", "unsigned", "empty", "redacted"]);
		if (thinkingKind === "signed")
			content.push({
				type: "thinking",
				thinking: genText(rng, "thinkingText"),
				thinkingSignature: rng.pick([`Ep${rng.alnum(60)}==`, "reasoning_content", `sig_${rng.alnum(16)}`]),
			});
		else if (thinkingKind === "unsigned") content.push({ type: "thinking", thinking: genText(rng, "thinkingText") });
		else if (thinkingKind === "empty") content.push({ type: "thinking", thinking: rng.pick(["", "  "]), thinkingSignature: rng.chance(0.5) ? `sig_${rng.alnum(12)}` : "" });
		else if (thinkingKind === "redacted")
			content.push({ type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: `red_${rng.alnum(40)}`, redacted: true });

		const textKind = forceText ? "text" : choose(rng, "assistantTextKind", ["text", "text", "none", "blank", "two"]);
		if (textKind === "text") content.push({ type: "text", text: genText(rng, "assistantText") });
		else if (textKind === "blank") content.push({ type: "text", text: rng.pick(TRICKY_BLANKS) });
		else if (textKind === "two") {
			content.push({ type: "text", text: genText(rng, "assistantText") });
			content.push({ type: "text", text: genText(rng, "assistantText") });
		}

		const calls = [];
		if (!forceText && rng.chance(0.45)) {
			const n = rng.weighted([[1, 6], [2, 3], [3, 1]]);
			for (let i = 0; i < n; i++) {
				const name = choose(rng, "tool", TOOLS);
				let id = genToolCallId(rng);
				if (usedCallIds.length > 0 && rng.chance(0.04)) {
					id = rng.pick(usedCallIds); // duplicate id on another branch
					mark("toolCall:duplicate-id");
				}
				usedCallIds.push(id);
				const call = { type: "toolCall", id, name, arguments: genToolArgs(rng, name) };
				calls.push(call);
				content.push(call);
			}
		}
		if (content.length === 0 && !rng.chance(0.3)) content.push({ type: "text", text: genText(rng, "assistantText") });

		let stopReason;
		if (calls.length > 0) stopReason = rng.chance(0.8) ? "toolUse" : choose(rng, "stopWithCalls", ["error", "aborted", "length"]);
		else stopReason = rng.weighted([["stop", 10], ["error", 1.5], ["aborted", 1.5], ["length", 1]]);
		if (forceText) stopReason = "stop";
		mark(`stop:${stopReason}`);

		const msg = {
			role: "assistant",
			content,
			api: model.api,
			provider: model.provider,
			model: model.model,
			usage: usage(rng),
			stopReason,
			timestamp: now(),
		};
		if (stopReason === "error" || (stopReason === "aborted" && rng.chance(0.5))) {
			msg.errorMessage = rng.pick([
				"Request failed: 529 overloaded_error",
				"Connection reset\n\tat socket.js:12",
				`${"e".repeat(79)}🚀 tail of a long error message that is cut at 80 UTF-16 units`,
				"Request was aborted",
			]);
			mark("errorMessage");
		}
		if (rng.chance(0.1)) msg.responseId = `msg_${rng.alnum(20)}`;
		if (PI16) {
			msg.thinkingLevel = choose(rng, "assistantThinkingLevel", THINKING_LEVELS);
			msg.durationMs = rng.int(100, 90000);
			if (rng.chance(0.5)) msg.rawStopReason = stopReason === "toolUse" ? "tool_use" : "end_turn";
		}
		sm.appendMessage(msg);
		hasAssistant = true;
		pendingCalls = stopReason === "toolUse" || rng.chance(0.3) ? calls : [];

		// Tool results
		for (const call of pendingCalls) {
			if (rng.chance(0.08)) {
				mark("toolCall:orphan");
				continue; // no result: providers synthesize one
			}
			appendToolResult(call);
		}
		pendingCalls = [];
	};

	const appendToolResult = (call, unknown = false) => {
		const kind = choose(rng, "toolResult", ["text", "text", "image", "error", "multi", "empty"]);
		let content;
		if (kind === "image")
			content = [{ type: "text", text: "Read image file [image/png]" }, { type: "image", data: PNG_1x1, mimeType: "image/png" }];
		else if (kind === "multi") content = [{ type: "text", text: genToolResultText(rng, call.name, call.arguments) }, { type: "text", text: "(truncated)" }];
		else if (kind === "empty") content = [];
		else content = [{ type: "text", text: kind === "error" ? `Error: ${genText(rng, "toolError")}` : genToolResultText(rng, call.name, call.arguments) }];
		const msg = {
			role: "toolResult",
			toolCallId: call.id,
			toolName: call.name,
			content,
			isError: kind === "error",
			timestamp: now(),
		};
		if (rng.chance(0.3)) msg.details = { diff: "--- a\n+++ b", firstChangedLine: rng.int(1, 99) };
		if (unknown && rng.chance(0.5)) delete msg.toolName;
		if (PI16) msg.durationMs = rng.int(1, 5000);
		sm.appendMessage(msg);
	};

	const appendBash = () => {
		const exclude = choose(rng, "bashExclude", ["true", "false"]) === "true";
		const variant = choose(rng, "bash", ["ok", "fail", "cancelled", "truncated", "empty", "nullExit"]);
		const msg = {
			role: "bashExecution",
			command: rng.pick(["ls", "git log --oneline | head -5", "echo 'héllo\twörld' 🚀", `for i in 1 2; do\n  echo $i\ndone`]),
			output: variant === "empty" ? "" : genText(rng, "bashOutput"),
			exitCode: variant === "fail" ? rng.pick([1, 2, 127]) : variant === "nullExit" ? rng.pick([null, undefined]) : variant === "cancelled" ? null : 0,
			cancelled: variant === "cancelled",
			truncated: variant === "truncated",
			timestamp: now(),
		};
		if (variant === "truncated") msg.fullOutputPath = `/tmp/pi-bash-${rng.hex(8)}.log`;
		else if (rng.chance(0.2)) msg.fullOutputPath = `/tmp/pi-bash-${rng.hex(8)}.log`; // path without truncated flag
		if (exclude || rng.chance(0.5)) msg.excludeFromContext = exclude;
		sm.appendMessage(msg);
	};

	const appendCustomMessage = () => {
		const kind = choose(rng, "customMessage", ["string", "array", "array-image"]);
		const display = choose(rng, "customDisplay", ["true", "false"]) === "true";
		let content;
		if (kind === "string") content = genText(rng, "customText");
		else if (kind === "array") content = [{ type: "text", text: genText(rng, "customText") }, { type: "text", text: genText(rng, "customText") }];
		else content = [{ type: "text", text: genText(rng, "customText") }, { type: "image", data: PNG_1x1, mimeType: "image/png" }];
		const details = rng.chance(0.5) ? { source: "oracle", n: rng.int(0, 9) } : undefined;
		sm.appendCustomMessageEntry(rng.pick(["skill-invocation", "reminder", "ext:notes"]), content, display, details);
	};

	const actions = {
		user: () => appendUser(),
		assistant: () => appendAssistant(),
		bash: () => appendBash(),
		customMessage: () => appendCustomMessage(),
		modelChange: () => {
			model = rng.pick(MODEL_CHOICES);
			sm.appendModelChange(model.provider, model.model);
		},
		thinking: () => sm.appendThinkingLevelChange(choose(rng, "thinkingLevel", THINKING_LEVELS)),
		compaction: () => {
			const branch = sm.getBranch();
			if (branch.length === 0) return;
			const candidates = branch.filter((e) => e.type === "message");
			const first = (candidates.length > 0 && rng.chance(0.85) ? rng.pick(candidates) : rng.pick(branch)).id;
			const tokensBefore = rng.chance(0.3) ? rng.int(5, 250) * 1000 + 500 : rng.int(1000, 250000);
			const details = rng.chance(0.6) ? { readFiles: [genPath(rng)], modifiedFiles: [] } : undefined;
			// pi 1.6.0: retain-none (firstKeptEntryId null → the compaction's own id), and usage
			const retainNone = PI16 && rng.chance(0.25);
			if (retainNone) mark("compaction:retain-none");
			const use = PI16 && rng.chance(0.5) ? usage(rng) : undefined;
			sm.appendCompaction(genText(rng, "compactionSummary"), retainNone ? null : first, tokensBefore, details, rng.chance(0.2) ? true : undefined, use);
			mark("entry:compaction");
		},
		branchSummary: () => {
			const ids = allIds();
			const from = rng.chance(0.2) ? null : rng.pick(ids);
			mark(`branchSummary:${from === null ? "null" : "id"}`);
			const summary = rng.chance(0.1) ? "" : genText(rng, "branchSummary");
			sm.branchWithSummary(from, summary, rng.chance(0.5) ? { readFiles: [], modifiedFiles: [genPath(rng)] } : undefined, rng.chance(0.2) ? true : undefined);
			pendingCalls = [];
		},
		label: () => {
			const ids = allIds();
			const op = choose(rng, "label", ["set", "set", "overwrite", "clear-undefined", "clear-empty"]);
			if ((op === "overwrite" || op.startsWith("clear")) && labeled.size > 0) {
				const t = rng.pick([...labeled]);
				if (op === "overwrite") sm.appendLabelChange(t, `${rng.pick(WORDS)} v2`);
				else {
					sm.appendLabelChange(t, op === "clear-empty" ? "" : undefined);
					labeled.delete(t);
				}
			} else {
				const t = rng.pick(ids);
				sm.appendLabelChange(t, rng.pick([rng.pick(WORDS), `⭐ ${rng.pick(WORDS)}`, "checkpoint 1", "v1.0-rc"]));
				labeled.add(t);
			}
		},
		sessionInfo: () => {
			const name = choose(rng, "sessionInfo", ["plain", "padded", "empty", "u0085", "emoji"]);
			sm.appendSessionInfo(
				{
					plain: `${rng.pick(WORDS)} ${rng.pick(WORDS)}`,
					padded: `   ${rng.pick(WORDS)} session\t `,
					empty: rng.pick(["", "   "]),
					u0085: `\u0085${rng.pick(WORDS)}\u0085`,
					emoji: `🚀 ${rng.pick(WORDS)} 日本`,
				}[name],
			);
		},
		custom: () => {
			sm.appendCustomEntry(rng.pick(["ext-state", "todo", "plan-mode"]), rng.pick([undefined, { step: rng.int(1, 9) }, [1, "two"], "raw"]));
			mark("entry:custom");
		},
		orphanToolResult: () => {
			appendToolResult({ id: genToolCallId(rng), name: rng.pick(TOOLS), arguments: {} }, true);
			mark("toolResult:unknown-call");
		},
		branch: () => {
			const ids = allIds();
			sm.branch(rng.pick(ids));
			pendingCalls = [];
			mark("branch");
		},
		resetLeaf: () => {
			sm.resetLeaf();
			pendingCalls = [];
			mark("resetLeaf");
		},
		// pi 1.6.0 entries
		system: () => {
			if (!hasSystem) {
				const full = fullSystemMessage(rng, cwd, now());
				for (const t of full.toolsAdded) tools.add(t.name);
				sm.appendMessage(full);
				hasSystem = true;
			} else sm.appendMessage(patchSystemMessage(rng, tools, now()));
		},
		contextEdit: () => {
			const editable = sm.getBranch().filter(
				(e) => e.type === "custom_message" || (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
			);
			if (editable.length === 0) return;
			const t = rng.pick(editable);
			const kind = choose(rng, "contextEdit", ["omit", "omit", "string", "array", "array-image"]);
			let replacement = null;
			if (kind === "string") replacement = { content: rng.chance(0.2) ? "" : `[redacted] ${genText(rng, "editText")}` };
			else if (kind === "array") replacement = { content: [{ type: "text", text: genText(rng, "editText") }] };
			else if (kind === "array-image")
				replacement = { content: [{ type: "text", text: "screenshot" }, { type: "image", data: PNG_1x1, mimeType: "image/png" }] };
			mark(`contextEdit:${t.type === "message" ? t.message.role : "custom"}`);
			sm.appendContextEdit(t.id, replacement);
		},
		usageEntry: () => {
			const kind = rng.pick(["cache_warm", "cache_warm", "classifier"]);
			const m = rng.pick(MODEL_CHOICES);
			sm.appendUsage(kind, m.provider, m.model, usage(rng), rng.chance(0.5) ? rng.pick(["idle", "before resume"]) : undefined);
			mark("entry:usage");
		},
	};
	const weights = [
		["user", 16], ["assistant", 18], ["bash", 4], ["customMessage", 3.5], ["modelChange", 2.5], ["thinking", 3],
		["compaction", 1.8], ["branchSummary", 1.8], ["label", 3.5], ["sessionInfo", 1.5], ["custom", 1.5],
		["orphanToolResult", 0.6], ["branch", 6], ["resetLeaf", 0.6],
	];
	if (PI16) weights.push(["system", 2.5], ["contextEdit", 3], ["usageEntry", 2]);

	// Typical session start: optional model/thinking entries, then user + assistant
	// (pi only writes the file once an assistant message exists).
	if (rng.chance(0.5)) sm.appendModelChange(model.provider, model.model);
	if (rng.chance(0.5)) sm.appendThinkingLevelChange(choose(rng, "thinkingLevel", THINKING_LEVELS));
	// pi 1.6.0 records the prompt and tools before the first user message (most files;
	// the others get it mid-session, as when 1.6.0 resumes a 0.73.1 file)
	if (PI16 && rng.chance(0.8)) actions.system();
	appendUser();
	appendAssistant(true);

	let guard = 0;
	while (sm.getEntries().length < target && guard++ < 10000) {
		const uncovered = weights.map(([a]) => a).filter((a) => !cov.has(`action:${a}`));
		const action = uncovered.length > 0 && rng.chance(0.15) ? rng.pick(uncovered) : rng.weighted(weights);
		mark(`action:${action}`);
		actions[action]();
	}
	if (!hasAssistant) appendAssistant(true);
	for (const e of sm.getEntries()) mark(`entry:${e.type}`);
	return sm.getSessionFile();
}

// ---------------------------------------------------------------------------
// Hand-written edge-case sessions (not produced by SessionManager)
// ---------------------------------------------------------------------------
function writeJsonl(file, lines) {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	fs.writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
}

function handwrittenSessions(rng, outdir) {
	const cwd = `${HOME}/projects/handwritten`;
	const dir = path.join(outdir, "sessions", encodeCwd(cwd));
	const files = [];
	const base = Date.UTC(2026, 1, 1, 10, 0, 0);
	const T = (s) => new Date(base + s * 1000).toISOString();
	const ms = (s) => base + s * 1000 + 123;
	const id = () => rng.hex(8);
	const asst = (text, extra = {}) => ({
		role: "assistant",
		content: [{ type: "text", text }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage: usage(rng),
		stopReason: "stop",
		timestamp: 0,
		...extra,
	});
	const user = (content, t) => ({ role: "user", content, timestamp: t });

	// --- File A: clock-skewed siblings, mixed timestamp formats, labels with a missing target.
	{
		const sid = rng.uuid();
		const [e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15, e16, e17, e18, e19] = Array.from({ length: 19 }, id);
		const callId = `toolu_01${rng.alnum(22)}`;
		const lines = [
			{ type: "session", version: 3, id: sid, timestamp: T(0), cwd },
			{ type: "model_change", id: e1, parentId: null, timestamp: T(0), provider: "anthropic", modelId: "claude-sonnet-4-5" },
			{ type: "thinking_level_change", id: e2, parentId: e1, timestamp: T(1), thinkingLevel: "high" },
			{ type: "message", id: e3, parentId: e2, timestamp: T(2), message: user("Root question: explain the tree\u2028(with a line separator)", ms(2)) },
			{
				type: "message", id: e4, parentId: e3, timestamp: T(3),
				message: { ...asst("Root answer."), content: [{ type: "thinking", thinking: "Let me think…", thinkingSignature: "EqSig==" }, { type: "text", text: "Root answer." }], timestamp: ms(3) },
			},
			// Three/four siblings under e4. File order: e5, e7, e10, e11. Timestamp order: e7 (10s), e11 (15s, +02:00 offset), e5 (20s), e10 (20s, no millis; tie with e5).
			{ type: "message", id: e5, parentId: e4, timestamp: T(20), message: user("Sibling A: first in file, timestamp 20s", ms(20)) },
			{ type: "message", id: e6, parentId: e5, timestamp: T(21), message: { ...asst("Reply to A"), timestamp: ms(21) } },
			{ type: "message", id: e7, parentId: e4, timestamp: T(10), message: user("Sibling B: later in file but EARLIER timestamp (10s)", ms(10)) },
			{
				type: "message", id: e8, parentId: e7, timestamp: T(11),
				message: { ...asst(""), content: [{ type: "toolCall", id: callId, name: "read", arguments: { path: `${HOME}/project/a.txt`, offset: 5, limit: 10 } }], stopReason: "toolUse", timestamp: ms(11) },
			},
			{ type: "message", id: e9, parentId: e8, timestamp: T(12), message: { role: "toolResult", toolCallId: callId, toolName: "read", content: [{ type: "text", text: "file body" }], isError: false, timestamp: ms(12) } },
			{ type: "message", id: e10, parentId: e4, timestamp: T(20).replace(".000Z", "Z"), message: user("Sibling C: same instant as A (no millis in timestamp)", ms(20)) },
			{ type: "message", id: e11, parentId: e4, timestamp: "2026-02-01T12:00:15.000+02:00", message: user("Sibling D: timestamp with +02:00 offset (=15s)", ms(15)) },
			{ type: "label", id: e12, parentId: e11, timestamp: T(30), targetId: "ffffffff", label: "ghost label (missing target)" },
			{ type: "label", id: e13, parentId: e12, timestamp: T(31), targetId: e3, label: "start" },
			{ type: "label", id: e14, parentId: e13, timestamp: T(32), targetId: e7, label: "skewed" },
			{ type: "label", id: e15, parentId: e14, timestamp: T(33), targetId: e7, label: "skewed v2" },
			{ type: "branch_summary", id: e16, parentId: e6, timestamp: T(40), fromId: e9, summary: "Explored sibling B: read a.txt lines 5-14.", details: { readFiles: ["a.txt"], modifiedFiles: [] } },
			{ type: "message", id: e17, parentId: e16, timestamp: T(41), message: user([{ type: "text", text: "Back on A after summary 🎉" }], ms(41)) },
			{ type: "session_info", id: e18, parentId: e17, timestamp: T(42), name: "Hand-written: clock skew" },
			{ type: "message", id: e19, parentId: e18, timestamp: T(43), message: { ...asst("Final answer on A."), timestamp: ms(43) } },
		];
		const file = path.join(dir, `2026-02-01T10-00-00-000Z_${sid}.jsonl`);
		writeJsonl(file, lines);
		files.push(file);
	}

	// --- File B: multiple roots, orphans, compactions with missing / off-path firstKeptEntryId,
	// empty branch summary at root, label on missing target. Last entry is inside an orphan chain.
	{
		const sid = rng.uuid();
		const I = {};
		for (const k of ["r1", "a1", "u2", "a2", "c2", "u6", "a7", "r2", "a3", "c3", "u7", "a8", "o1", "o2", "o3", "o4", "o5", "o6", "bs", "u5", "a6", "l1", "l2", "si", "o7"]) I[k] = id();
		const callId = `call_${rng.alnum(24)}`;
		const lines = [
			{ type: "session", version: 3, id: sid, timestamp: T(100), cwd },
			{ type: "message", id: I.r1, parentId: null, timestamp: T(100), message: user("Root 1", ms(100)) },
			{ type: "message", id: I.a1, parentId: I.r1, timestamp: T(101), message: { ...asst("Root 1 reply"), timestamp: ms(101) } },
			{ type: "message", id: I.u2, parentId: I.a1, timestamp: T(102), message: user("Root 1 follow-up", ms(102)) },
			{
				type: "message", id: I.a2, parentId: I.u2, timestamp: T(103),
				message: { ...asst("Calling a tool"), provider: "openai", api: "openai-completions", model: "gpt-4o", content: [{ type: "text", text: "Calling a tool" }, { type: "toolCall", id: callId, name: "bash", arguments: { command: "ls" } }], stopReason: "toolUse", timestamp: ms(103) },
			},
			{ type: "compaction", id: I.c2, parentId: I.a2, timestamp: T(104), summary: "Compacted root 1 (kept from u2).", firstKeptEntryId: I.u2, tokensBefore: 12500 },
			{ type: "message", id: I.u6, parentId: I.c2, timestamp: T(105), message: user("After compaction on root 1", ms(105)) },
			{ type: "message", id: I.a7, parentId: I.u6, timestamp: T(106), message: { ...asst("ok"), timestamp: ms(106) } },
			{ type: "message", id: I.r2, parentId: null, timestamp: T(107), message: user("Root 2 (second parentId=null entry)", ms(107)) },
			{ type: "message", id: I.a3, parentId: I.r2, timestamp: T(108), message: { ...asst("Root 2 reply"), timestamp: ms(108) } },
			{ type: "compaction", id: I.c3, parentId: I.a3, timestamp: T(109), summary: "Compaction whose firstKeptEntryId is on another branch.", firstKeptEntryId: I.u2, tokensBefore: 99500 },
			{ type: "message", id: I.u7, parentId: I.c3, timestamp: T(110), message: user("after off-path compaction", ms(110)) },
			{ type: "message", id: I.a8, parentId: I.u7, timestamp: T(111), message: { ...asst("fine"), timestamp: ms(111) } },
			{ type: "message", id: I.o1, parentId: "deadbeef", timestamp: T(112), message: user("Orphan: parent deadbeef does not exist", ms(112)) },
			{ type: "message", id: I.o2, parentId: I.o1, timestamp: T(113), message: { ...asst("orphan reply"), timestamp: ms(113) } },
			{ type: "compaction", id: I.o3, parentId: I.o2, timestamp: T(114), summary: "Compaction with a missing firstKeptEntryId.", firstKeptEntryId: "00000000", tokensBefore: 500, details: { readFiles: [], modifiedFiles: [] } },
			{ type: "message", id: I.o4, parentId: I.o3, timestamp: T(115), message: user("orphan chain continues", ms(115)) },
			{ type: "message", id: I.o5, parentId: I.o4, timestamp: T(116), message: { ...asst("still orphaned"), timestamp: ms(116) } },
			{ type: "custom_message", id: I.o6, parentId: "cafebabe", timestamp: T(117), customType: "reminder", content: "Orphan custom message", display: true },
			{ type: "branch_summary", id: I.bs, parentId: null, timestamp: T(118), fromId: "root", summary: "" },
			{ type: "message", id: I.u5, parentId: I.bs, timestamp: T(119), message: user("Root 3 after an empty branch summary", ms(119)) },
			{ type: "message", id: I.a6, parentId: I.u5, timestamp: T(120), message: { ...asst("root 3 reply"), timestamp: ms(120) } },
			{ type: "label", id: I.l1, parentId: I.a6, timestamp: T(121), targetId: "0badf00d", label: "missing target" },
			{ type: "label", id: I.l2, parentId: I.l1, timestamp: T(122), targetId: I.o1, label: "orphan" },
			{ type: "session_info", id: I.si, parentId: I.l2, timestamp: T(123), name: "Hand-written: orphans & roots" },
			{ type: "message", id: I.o7, parentId: I.o5, timestamp: T(124), message: user("Last line of file: child of the orphan chain", ms(124)) },
		];
		const file = path.join(dir, `2026-02-01T10-01-40-000Z_${sid}.jsonl`);
		writeJsonl(file, lines);
		files.push(file);
	}
	mark("handwritten");
	return files;
}

// ---------------------------------------------------------------------------
// Expected-output computation
// ---------------------------------------------------------------------------
const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

async function capturePayload(streamFn, model, llm, reasoning) {
	let captured;
	const opts = {
		apiKey: API_KEY,
		onPayload: (params) => {
			captured = clone(params);
			throw new Error("oracle: payload captured, request aborted");
		},
	};
	if (reasoning) opts.reasoning = reasoning;
	// pi-ai providers do not mutate the input messages (verified), so no defensive copy.
	let result;
	try {
		const stream = streamFn(model, { messages: llm }, opts);
		result = await stream.result();
	} catch (err) {
		// pi-ai 1.6.0 estimates the prompt before building it and throws on malformed messages
		if (captured === undefined) return { payload: null, error: String(err?.message ?? err) };
	}
	if (captured === undefined) return { payload: null, error: result?.errorMessage ?? "no payload" };
	return { payload: captured, error: null };
}

function modelInfo(m) {
	const info = { id: m.id, provider: m.provider, api: m.api, baseUrl: m.baseUrl, maxTokens: m.maxTokens, contextWindow: m.contextWindow, reasoning: m.reasoning };
	if (PI16) info.compat = m.compat ?? null;
	return info;
}

function anthropicModelFor(ctxModel) {
	if (ctxModel && ctxModel.provider === "anthropic") {
		const m = getModel("anthropic", ctxModel.modelId);
		if (m) return { ...m, baseUrl: FAKE_BASE_URL };
	}
	return { ...getModel("anthropic", "claude-sonnet-4-5"), baseUrl: FAKE_BASE_URL };
}
function openaiModel() {
	// getModel("openai","gpt-4o") reports api "openai-responses"; we drive the
	// openai-completions provider, so the model is relabelled to match it.
	return { ...getModel("openai", "gpt-4o"), api: "openai-completions", baseUrl: FAKE_BASE_URL };
}

async function computeContext(entries, leafChoice, indexOf) {
	const leafArg = leafChoice === "__default__" ? undefined : leafChoice;
	const ctx = buildSessionContext(entries, leafArg);
	const agent = ctx.messages;
	const llm = convertToLlm(agent);
	let tokens = 0;
	for (const m of agent) tokens += estimateTokens(m);
	const reasoning = ctx.thinkingLevel !== "off" ? ctx.thinkingLevel : undefined;
	const am = anthropicModelFor(ctx.model);
	const om = openaiModel();
	const a = await capturePayload(streamSimpleAnthropic, am, llm, reasoning);
	const o = await capturePayload(streamSimpleOpenAICompletions, om, llm, reasoning);
	const out = {
		leafId: leafChoice,
		leafIndex: typeof leafChoice === "string" && indexOf.has(leafChoice) ? indexOf.get(leafChoice) : null,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model,
		tokens,
		reasoning: reasoning ?? null,
		anthropicModel: am.id,
		anthropicModelInfo: modelInfo(am),
		openaiModel: om.id,
		openaiModelInfo: modelInfo(om),
		agent,
		llm,
		anthropic: a.payload,
		openai: o.payload,
	};
	if (a.error) out.anthropicError = a.error;
	if (o.error) out.openaiError = o.error;
	if (PI16) {
		// where 0.73.1 builds another context (context edits, compaction checkpoints...)
		const old = buildSessionContext073(entries, leafArg).messages;
		out.agentDiffersFrom073 = JSON.stringify(old) !== JSON.stringify(agent);
		out.anthropicBodies = {};
		for (const id of ANTHROPIC_KINDS) {
			const m = { ...getModel("anthropic", id), baseUrl: FAKE_BASE_URL };
			const b = await capturePayload(streamSimpleAnthropic, m, llm, reasoning);
			out.anthropicBodies[id] = b.error ? { error: b.error } : { model: modelInfo(m), body: b.payload };
		}
	}
	return out;
}

function serializeTree(nodes, indexOf) {
	return nodes.map((n) => ({
		id: n.entry.id,
		entryIndex: indexOf.get(n.entry.id) ?? null,
		label: n.label ?? null,
		labelTimestamp: n.labelTimestamp ?? null,
		children: serializeTree(n.children, indexOf),
	}));
}
function flattenTreeForOutput(roots, indexOf) {
	const out = [];
	const stack = [...roots].reverse().map((n) => [n, null, 0]);
	while (stack.length > 0) {
		const [n, parent, depth] = stack.pop();
		out.push({
			id: n.entry.id,
			entryIndex: indexOf.get(n.entry.id) ?? null,
			treeParentId: parent,
			depth,
			label: n.label ?? null,
			labelTimestamp: n.labelTimestamp ?? null,
			children: n.children.map((c) => c.entry.id),
		});
		for (let i = n.children.length - 1; i >= 0; i--) stack.push([n.children[i], n.entry.id, depth + 1]);
	}
	return out;
}

function buildOutline(sm, leaf, filter, search, folded, indexOf) {
	const comp = new TreeSelectorComponent(sm.getTree(), leaf, 40, () => {}, () => {}, () => {}, undefined, filter);
	const tl = comp.getTreeList();
	tl.searchQuery = search;
	tl.foldedNodes = new Set(folded);
	tl.applyFilter();
	const nodes = tl.filteredNodes;
	tl.maxVisibleLines = Math.max(1, nodes.length);
	const rendered = nodes.length > 0 ? tl.render(RENDER_WIDTH).map((l) => stripAnsi(l)) : [];
	const multipleRoots = tl.multipleRoots;
	const rows = nodes.map((fn, i) => {
		const id = fn.node.entry.id;
		const displayIndent = multipleRoots ? Math.max(0, fn.indent - 1) : fn.indent;
		const isFolded = tl.foldedNodes.has(id);
		const line = rendered[i].slice(2); // drop 2-column cursor ("› " or "  ")
		const showsFoldInConnector = fn.showConnector && !fn.isVirtualRootChild;
		const prefixLen = displayIndent * 3 + (isFolded && !showsFoldInConnector ? 2 : 0);
		const title = stripAnsi(tl.getEntryDisplayText(fn.node, false));
		if (!line.endsWith(title)) throw new Error(`outline self-check failed for ${id}: ${JSON.stringify(line)} vs ${JSON.stringify(title)}`);
		return {
			id,
			entryIndex: indexOf.get(id) ?? null,
			visibleParentId: tl.visibleParentMap.get(id) ?? null,
			visibleParentIndex: indexOf.get(tl.visibleParentMap.get(id)) ?? null,
			indent: fn.indent,
			displayIndent,
			showConnector: fn.showConnector,
			isLast: fn.isLast,
			gutters: fn.gutters.map((g) => ({ position: g.position, show: g.show })),
			isVirtualRootChild: fn.isVirtualRootChild,
			foldable: tl.isFoldable(id),
			folded: isFolded,
			onActivePath: tl.activePathIds.has(id),
			label: fn.node.label ?? null,
			title,
			prefix: line.slice(0, prefixLen),
			line,
		};
	});
	const selected = nodes[tl.selectedIndex]?.node.entry.id ?? null;
	return { tl, multipleRoots, rows, selectedId: selected };
}

function sessionTextWords(entries) {
	const words = [];
	for (const e of entries) {
		if (e.type !== "message") continue;
		const m = e.message;
		if (m.role !== "user" && m.role !== "assistant") continue;
		const c = m.content;
		if (typeof c === "string") words.push(...searchWordsFromText(c));
		else if (Array.isArray(c)) for (const b of c) if (b.type === "text") words.push(...searchWordsFromText(b.text));
	}
	return words;
}

function pickLeaves(rng, entries, max = 25) {
	if (entries.length === 0) return [];
	const must = new Set(entries.filter((e) => e.type === "branch_summary" || e.type === "compaction").map((e) => e.id));
	must.add(entries[entries.length - 1].id);
	const rest = rng.shuffle(entries.map((e) => e.id).filter((id) => !must.has(id)));
	const chosen = new Set([...must, ...rest.slice(0, Math.max(0, max - must.size))]);
	return entries.map((e) => e.id).filter((id) => chosen.has(id)); // in entry order
}

async function listInfo(cache, cwd, dir, file) {
	if (!cache.has(dir)) cache.set(dir, await SessionManager.list(cwd, dir));
	const info = cache.get(dir).find((s) => path.resolve(s.path) === path.resolve(file));
	if (!info) return null;
	const iso = (d) => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : null);
	return {
		path: info.path,
		id: info.id,
		cwd: info.cwd,
		name: info.name ?? null,
		parentSessionPath: info.parentSessionPath ?? null,
		created: iso(info.created),
		modified: iso(info.modified),
		messageCount: info.messageCount,
		firstMessage: info.firstMessage,
		allMessagesText: info.allMessagesText,
	};
}

// SessionManager.list(cwd, dir) for every directory of cases and every cwd in it (and one
// that is in none): which files pi lists, in its order
async function listings(files) {
	const dirs = [...new Set(files.map((f) => path.dirname(f.file)))].sort();
	const out = [];
	for (const dir of dirs) {
		const cwds = new Set(["/nowhere/at/all"]);
		for (const f of files.filter((x) => path.dirname(x.file) === dir)) {
			const header = JSON.parse(fs.readFileSync(f.file, "utf8").split("\n", 1)[0]);
			if (typeof header.cwd === "string") cwds.add(header.cwd);
		}
		for (const cwd of [...cwds].sort()) {
			const infos = await SessionManager.list(cwd, dir);
			out.push({ cwd, dir, paths: infos.map((i) => i.path), modified: infos.map((i) => i.modified.toISOString()) });
		}
	}
	return out;
}

const stats = { contexts: 0, outlines: 0, rows: 0, bytes: 0 };

async function buildExpected(file, { kind, rng, listCache, extra = {} }) {
	const sm = SessionManager.open(file);
	const entries = sm.getEntries();
	const indexOf = new Map(entries.map((e, i) => [e.id, i]));
	const leafId = sm.getLeafId();

	// Contexts
	const leafChoices = ["__default__", null, ...pickLeaves(rng, entries), MISSING_LEAF];
	const contexts = [];
	for (const lc of leafChoices) contexts.push(await computeContext(entries, lc, indexOf));
	stats.contexts += contexts.length;

	// Tree
	const roots = sm.getTree();
	const tree = serializeTree(roots, indexOf);
	const treeFlat = flattenTreeForOutput(roots, indexOf);

	// Outlines
	const words = sessionTextWords(entries);
	const w1 = words.length > 0 ? rng.pick(words) : "alpha";
	let w2 = words.length > 0 ? rng.pick(words) : "bravo";
	if (/^[a-z]+$/.test(w2)) w2 = w2.toUpperCase(); // search is case-insensitive
	const searches = ["", w1, w2, "user"];
	const ids = entries.map((e) => e.id);
	const outlineLeaves = [leafId, ...rng.shuffle(ids.filter((i) => i !== leafId)).slice(0, 2)];
	const outlines = [];
	for (const filter of ["default", "no-tools", "user-only", "labeled-only", "all"]) {
		for (const leaf of outlineLeaves) {
			for (const search of searches) {
				const base = buildOutline(sm, leaf, filter, search, [], indexOf);
				const variants = [[[], base]];
				const foldable = base.rows.filter((r) => r.foldable).map((r) => r.id);
				if (foldable.length > 0) {
					const pickN = Math.min(foldable.length, rng.int(1, 2));
					const folded = rng.shuffle(foldable).slice(0, pickN);
					variants.push([folded, buildOutline(sm, leaf, filter, search, folded, indexOf)]);
				}
				for (const [folded, o] of variants) {
					outlines.push({
						filter,
						leafId: leaf,
						leafIndex: indexOf.get(leaf) ?? null,
						search,
						folded,
						foldedIndex: folded.map((f) => indexOf.get(f)),
						multipleRoots: o.multipleRoots,
						selectedId: o.selectedId,
						rows: o.rows,
					});
					stats.rows += o.rows.length;
				}
			}
		}
	}
	stats.outlines += outlines.length;

	const header = sm.getHeader();
	const expected = {
		schema: "pi-oracle/1",
		kind,
		file: path.resolve(file),
		...extra,
		home: HOME,
		header,
		sessionId: sm.getSessionId(),
		cwd: sm.getCwd(),
		sessionName: sm.getSessionName() ?? null,
		leafId,
		entryIds: ids,
		providerRequest: {
			systemPrompt: null,
			tools: null,
			apiKey: API_KEY,
			baseUrl: FAKE_BASE_URL,
			cacheRetention: null,
			sessionId: null,
			note: "context passed to pi-ai = {messages: llm} only; options = {apiKey, reasoning (if thinkingLevel != off), onPayload}",
		},
		contexts,
		tree,
		treeFlat,
		outlines,
		sessionInfo: await listInfo(listCache, sm.getCwd(), path.dirname(path.resolve(file)), file),
	};
	return expected;
}

function writeExpected(outdir, name, obj) {
	const p = path.join(outdir, "expected", name);
	const s = JSON.stringify(obj);
	fs.writeFileSync(p, s);
	stats.bytes += Buffer.byteLength(s);
	return p;
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------
async function main() {
	const t0 = Date.now();
	const args = parseArgs(process.argv.slice(2));
	const { outdir, seed, count } = args;
	for (const sub of ["sessions", "expected", "fixtures-migrated", "pi16", "old"]) fs.rmSync(path.join(outdir, sub), { recursive: true, force: true });
	fs.mkdirSync(path.join(outdir, "expected"), { recursive: true });

	const manifest = {
		schema: "pi-oracle-manifest/1",
		seed,
		count,
		home: HOME,
		piCodingAgentVersion: readPkgVersion(PI_PACKAGE),
		piAiVersion: readPkgVersion(PI_AI_PACKAGE),
		nodeVersion: process.version,
		files: [],
	};

	// 1. Generate sessions (entry ids seeded too).
	const generated = [];
	for (let i = 0; i < count; i++) {
		const rng = new Rng(mixSeed(seed, i));
		seedEntryIds(new Rng(mixSeed(seed, 100000 + i)));
		try {
			generated.push(generateSession(rng, i, outdir));
		} finally {
			unseedEntryIds();
		}
	}
	const handwritten = handwrittenSessions(new Rng(mixSeed(seed, 200000)), outdir);

	// 2. Expected output for generated + hand-written files.
	const listCache = new Map();
	const all = [...generated.map((f) => ["generated", f]), ...handwritten.map((f) => ["handwritten", f])];
	for (let i = 0; i < all.length; i++) {
		const [kind, file] = all[i];
		const rng = new Rng(mixSeed(seed, 300000 + i));
		const exp = await buildExpected(file, { kind, rng, listCache });
		const name = `${path.basename(file, ".jsonl")}.expected.json`;
		const ep = writeExpected(outdir, name, exp);
		manifest.files.push({ kind, file: path.resolve(file), expected: ep, entries: exp.entryIds.length });
	}

	// 2b. pi 1.6.0: the files 1.6.0 wrote, and the sessions of a 0.73.1 oracle run
	if (PI16) {
		const copies = [];
		for (const [sub, kind] of [["", "pi16"], ["recorded", "pi16"]]) {
			const src = path.join(PI16_FIXTURES_DIR, sub);
			for (const f of fs.readdirSync(src).filter((n) => n.endsWith(".jsonl") && !n.startsWith("requests-")).sort()) {
				const dst = path.join(outdir, "pi16", f);
				fs.mkdirSync(path.dirname(dst), { recursive: true });
				fs.copyFileSync(path.join(src, f), dst); // pi 1.6.0 may append a final newline on open
				copies.push([kind, path.join(src, f), dst, 500000 + copies.length]);
			}
		}
		if (args.old) {
			const oldManifest = JSON.parse(fs.readFileSync(path.join(args.old, "manifest.json"), "utf8"));
			// the seeds of the 0.73.1 run: the same leaves, searches and folds, so its
			// cases can be checked against 1.6.0 where the two versions disagree
			oldManifest.files.filter((x) => x.kind !== "fixture").forEach((f, j) => {
				const dst = path.join(outdir, "old", path.basename(path.dirname(f.file)), path.basename(f.file));
				fs.mkdirSync(path.dirname(dst), { recursive: true });
				fs.copyFileSync(f.file, dst);
				copies.push([`${f.kind}-0.73`, f.file, dst, 300000 + j]);
			});
		}
		for (let i = 0; i < copies.length; i++) {
			const [kind, src, dst, stream] = copies[i];
			const rng = new Rng(mixSeed(seed, stream));
			const exp = await buildExpected(dst, { kind, rng, listCache, extra: { source: src } });
			const name = `${kind}-${path.basename(dst, ".jsonl")}.expected.json`;
			const ep = writeExpected(outdir, name, exp);
			manifest.files.push({ kind, file: path.resolve(dst), source: src, expected: ep, entries: exp.entryIds.length });
		}
	}

	// 3. Migrated fixtures (copied first: pi rewrites files it migrates).
	let fixtureCount = 0;
	if (fs.existsSync(FIXTURES_DIR)) {
		const fixDir = path.join(outdir, "fixtures-migrated");
		fs.mkdirSync(fixDir, { recursive: true });
		const fixtures = fs.readdirSync(FIXTURES_DIR).filter((f) => f.endsWith(".jsonl")).sort();
		const copies = [];
		for (const f of fixtures) {
			const src = path.join(FIXTURES_DIR, f);
			const dst = path.join(fixDir, f);
			fs.writeFileSync(dst, fs.readFileSync(src)); // fresh writable copy (sources are read-only)
			copies.push([src, dst]);
		}
		for (let i = 0; i < copies.length; i++) {
			const [src, dst] = copies[i];
			const rng = new Rng(mixSeed(seed, 400000 + i));
			const exp = await buildExpected(dst, { kind: "fixture", rng, listCache, extra: { source: src } });
			const ep = writeExpected(outdir, `fixture-${path.basename(src, ".jsonl")}.expected.json`, exp);
			manifest.files.push({ kind: "fixture", file: path.resolve(dst), source: src, expected: ep, entries: exp.entryIds.length });
			fixtureCount++;
		}
	}

	const wanted = [
		"stop:stop", "stop:toolUse", "stop:error", "stop:aborted", "stop:length", "errorMessage",
		...TOOLS.map((t) => `tool:${t}`),
		"user:string", "user:array-image", "thinking:signed", "thinking:unsigned",
		"toolResult:text", "toolResult:image", "toolResult:error",
		"bashExclude:true", "bashExclude:false", "customMessage:string", "customMessage:array", "customDisplay:true", "customDisplay:false",
		...THINKING_LEVELS.map((l) => `thinkingLevel:${l}`),
		"label:set", "label:overwrite", "label:clear-undefined", "label:clear-empty",
		"branchSummary:id", "branchSummary:null", "branch", "resetLeaf",
		"entry:compaction", "entry:custom", "entry:session_info", "entry:model_change", "entry:custom_message",
		"text:long", "text:u2028", "text:u2029", "text:u0085", "text:emoji", "text:tabs", "text:multiline",
		"model:anthropic/claude-sonnet-4-5", "model:anthropic/claude-opus-4-6", "model:openai/gpt-4o",
	];
	if (PI16)
		wanted.push(
			"system:full", "system:section", "system:remove-section", "system:tools", "system:content",
			"contextEdit:user", "contextEdit:assistant", "contextEdit:toolResult", "contextEdit:custom",
			"contextEdit:omit", "contextEdit:string", "contextEdit:array", "entry:usage", "compaction:retain-none",
		);
	manifest.listings = await listings(manifest.files);
	const textCats = [...cov].filter((k) => /^[a-zA-Z]*(Text|Content|Output|Summary|summary|Error):/.test(k)).map((k) => `text:${k.split(":")[1]}`);
	for (const t of textCats) cov.add(t);
	manifest.coverageMissing = wanted.filter((k) => !cov.has(k));
	manifest.coverage = [...cov].sort();
	fs.writeFileSync(path.join(outdir, "manifest.json"), JSON.stringify(manifest));

	const secs = ((Date.now() - t0) / 1000).toFixed(1);
	const miss = manifest.coverageMissing.length ? ` coverage-missing=[${manifest.coverageMissing.join(",")}]` : "";
	console.log(
		`pi-oracle: seed=${seed} generated=${generated.length} handwritten=${handwritten.length} fixtures=${fixtureCount} contexts=${stats.contexts} outlines=${stats.outlines} rows=${stats.rows} json=${(stats.bytes / 1e6).toFixed(1)}MB -> ${outdir} in ${secs}s${miss}`,
	);
}

main().then(
	() => process.exit(0),
	(err) => {
		console.error(err?.stack ?? err);
		process.exit(1);
	},
);
