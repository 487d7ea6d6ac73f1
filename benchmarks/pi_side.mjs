#!/usr/bin/env node
// pi side of the pi-server benchmark.
//
// Uses pi's own SessionManager (@mariozechner/pi-coding-agent, dist/core/session-manager.js)
// to generate realistic session files and to measure how long pi takes to open them,
// build the LLM context, build the tree, and list session stores.
//
//   node benchmarks/pi_side.mjs generate OUT.jsonl --entries 100000 [--seed N] [--compactions K]
//   node benchmarks/pi_side.mjs generate-store DIR --files 200 --total-mb 500 [--projects 10] [--seed N]
//   node benchmarks/pi_side.mjs measure FILE [--leaf-id ID]
//   node benchmarks/pi_side.mjs list DIR
//
// Determinism: files are written by pi's SessionManager itself (appendMessage, branch,
// appendCompaction, ...). To make the output byte-for-byte reproducible for a given seed,
// generation (only) swaps in a seeded crypto.randomUUID (pi's entry ids are the first 8 hex
// chars of randomUUID()), a simulated clock for `new Date()` (pi's entry timestamps and file
// names), and passes a seeded uuidv7 as the session id via sm.newSession({ id }).
// measure and list never patch anything.
//
// All output is a single JSON object on stdout.

import crypto from "node:crypto";
import fs from "node:fs";
import nodeModule from "node:module";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const SCRIPT = fileURLToPath(import.meta.url);
const RealDate = globalThis.Date;

// ---------------------------------------------------------------------------
// Locating pi
// ---------------------------------------------------------------------------

function piPackageDir() {
	if (process.env.PI_PACKAGE_DIR) return path.resolve(process.env.PI_PACKAGE_DIR);
	try {
		// resolves to .../pi-coding-agent/dist/index.js (does not load it)
		const url = import.meta.resolve("@mariozechner/pi-coding-agent");
		return path.resolve(path.dirname(fileURLToPath(url)), "..");
	} catch {
		return path.resolve(path.dirname(SCRIPT), "..", "node_modules", "@mariozechner", "pi-coding-agent");
	}
}

async function loadPi() {
	const dir = piPackageDir();
	const mod = await import(pathToFileURL(path.join(dir, "dist", "core", "session-manager.js")).href);
	const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
	return { SessionManager: mod.SessionManager, CURRENT_SESSION_VERSION: mod.CURRENT_SESSION_VERSION, piVersion: pkg.version, piDir: dir };
}

// ---------------------------------------------------------------------------
// Args
// ---------------------------------------------------------------------------

function parseArgs(argv) {
	const pos = [];
	const opt = {};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a.startsWith("--")) {
			const eq = a.indexOf("=");
			if (eq > 0) opt[a.slice(2, eq)] = a.slice(eq + 1);
			else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) opt[a.slice(2)] = argv[++i];
			else opt[a.slice(2)] = true;
		} else pos.push(a);
	}
	return { pos, opt };
}

function num(v, d) {
	if (v === undefined || v === true) return d;
	const n = Number(v);
	if (!Number.isFinite(n)) throw new Error(`not a number: ${v}`);
	return n;
}

const secs = (a, b) => Number(b - a) / 1e9;
const hr = () => process.hrtime.bigint();

// ---------------------------------------------------------------------------
// Seeded PRNG (sfc32 seeded by splitmix32)
// ---------------------------------------------------------------------------

function makeRng(seed) {
	let s = seed >>> 0;
	const sm32 = () => {
		s = (s + 0x9e3779b9) | 0;
		let z = s;
		z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
		z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
		return (z ^ (z >>> 16)) >>> 0;
	};
	let a = sm32(), b = sm32(), c = sm32(), d = sm32();
	const u32 = () => {
		a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
		let t = (a + b) | 0;
		a = b ^ (b >>> 9);
		b = (c + (c << 3)) | 0;
		c = (c << 21) | (c >>> 11);
		d = (d + 1) | 0;
		t = (t + d) | 0;
		c = (c + t) | 0;
		return t >>> 0;
	};
	for (let i = 0; i < 16; i++) u32();
	const r = {
		u32,
		f: () => u32() / 4294967296,
		int: (lo, hi) => lo + Math.floor((u32() / 4294967296) * (hi - lo + 1)), // inclusive
		pick: (arr) => arr[Math.floor((u32() / 4294967296) * arr.length)],
		chance: (p) => u32() / 4294967296 < p,
		normal: () => {
			let u = 0;
			while (u === 0) u = u32() / 4294967296;
			const v = u32() / 4294967296;
			return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
		},
		// log-normal with given median
		logn: (median, sigma) => median * Math.exp(sigma * r.normal()),
		geom: (mean) => Math.floor(Math.log(1 - (u32() / 4294967296) * 0.999999) / Math.log(1 - 1 / mean)),
		weighted: (items, weights) => {
			let tot = 0;
			for (const w of weights) tot += w;
			let x = (u32() / 4294967296) * tot;
			for (let i = 0; i < items.length; i++) {
				x -= weights[i];
				if (x < 0) return items[i];
			}
			return items[items.length - 1];
		},
		bytes: (n) => {
			const out = new Uint8Array(n);
			for (let i = 0; i < n; i += 4) {
				const v = u32();
				out[i] = v & 255;
				if (i + 1 < n) out[i + 1] = (v >>> 8) & 255;
				if (i + 2 < n) out[i + 2] = (v >>> 16) & 255;
				if (i + 3 < n) out[i + 3] = v >>> 24;
			}
			return out;
		},
	};
	return r;
}

function hex(bytes) {
	return Buffer.from(bytes).toString("hex");
}

function uuid4FromBytes(b) {
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	const h = hex(b);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function uuid7(msecs, rnd) {
	// Same layout as uuid.v7({ msecs, random }) (pi uses uuid's v7 for session ids)
	const b = new Uint8Array(16);
	const seq = ((rnd[6] & 0x7f) << 24) | (rnd[7] << 16) | (rnd[8] << 8) | rnd[9];
	b[0] = (msecs / 0x10000000000) & 0xff;
	b[1] = (msecs / 0x100000000) & 0xff;
	b[2] = (msecs / 0x1000000) & 0xff;
	b[3] = (msecs / 0x10000) & 0xff;
	b[4] = (msecs / 0x100) & 0xff;
	b[5] = msecs & 0xff;
	b[6] = 0x70 | ((seq >>> 28) & 0x0f);
	b[7] = (seq >>> 20) & 0xff;
	b[8] = 0x80 | ((seq >>> 14) & 0x3f);
	b[9] = (seq >>> 6) & 0xff;
	b[10] = ((seq << 2) & 0xff) | (rnd[10] & 0x03);
	for (let i = 11; i < 16; i++) b[i] = rnd[i];
	const h = hex(b);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---------------------------------------------------------------------------
// Determinism hooks (generation only)
// ---------------------------------------------------------------------------

const SIM = { now: RealDate.UTC(2025, 0, 6, 9, 0, 0) };

class SimDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(SIM.now);
		else super(...args);
	}
	static now() {
		return SIM.now;
	}
}

let idRng = null;
function installDeterminism(seed) {
	idRng = makeRng((seed ^ 0x5eed1d5) >>> 0);
	crypto.randomUUID = () => uuid4FromBytes(idRng.bytes(16));
	nodeModule.syncBuiltinESMExports();
	globalThis.Date = SimDate;
}
function uninstallDate() {
	globalThis.Date = RealDate;
}

// ---------------------------------------------------------------------------
// Content pools
// ---------------------------------------------------------------------------

const WORDS = (
	"session entry parser tree branch leaf context message token cache stream buffer index query " +
	"request response handler router middleware config option value default schema model provider " +
	"usage cost thinking level compaction summary label header version migrate file path directory " +
	"project worker thread queue retry timeout error warning debug trace metric latency throughput " +
	"memory allocation pointer reference iterator generator closure callback promise future async " +
	"await lock mutex channel socket server client protocol payload encoder decoder serializer " +
	"json yaml toml markdown table column row record field struct enum trait interface class method " +
	"function module package import export build test fixture mock snapshot coverage lint format " +
	"release deploy pipeline artifact registry container image volume network port host domain " +
	"auth token secret key signature hash digest checksum offset length limit cursor page batch " +
	"chunk frame window viewport render widget layout style theme color font border padding margin " +
	"event listener emitter subscriber topic partition replica shard cluster node edge graph vertex " +
	"path walk visit traverse sort filter reduce map merge diff patch apply revert commit rebase"
).split(" ");

const TYPES_TS = ["string", "number", "boolean", "SessionEntry", "Promise<void>", "Map<string, Entry>", "string[]", "Record<string, unknown>", "TreeNode | undefined", "Buffer", "AbortSignal", "Options"];
const TYPES_PY = ["str", "int", "bool", "Path", "dict[str, Any]", "list[Entry]", "Optional[str]", "bytes", "Iterator[dict]", "None"];
const TYPES_GO = ["string", "int", "error", "[]byte", "*Entry", "map[string]*Node", "context.Context", "bool", "io.Reader"];
const UNI = ["✓", "✗", "→", "—", "…", "üblich", "Größe", "café", "naïve", "日本語", "中文", "🚀", "⚠️", "±", "µs", "∑", "λ"];

function buildPools(rng) {
	const W = () => rng.pick(WORDS);
	const cap = (s) => s[0].toUpperCase() + s.slice(1);
	const id = () => (rng.chance(0.5) ? W() : W() + cap(W()));
	const Id = () => cap(W()) + (rng.chance(0.6) ? cap(W()) : "");
	const snake = () => (rng.chance(0.5) ? W() : `${W()}_${W()}`);
	const sentence = (lo = 5, hi = 14) => {
		const n = rng.int(lo, hi);
		const ws = [];
		for (let i = 0; i < n; i++) ws.push(W());
		let s = ws.join(" ");
		if (rng.chance(0.05)) s += ` ${rng.pick(UNI)}`;
		return cap(s) + ".";
	};
	const ind = (n, unit = "  ") => unit.repeat(n);
	const d = () => rng.int(0, 3);

	const ts = [
		() => `import { ${Id()}, ${Id()} } from "./${W()}/${W()}.js";`,
		() => `export function ${id()}(${id()}: ${rng.pick(TYPES_TS)}, ${id()}?: ${rng.pick(TYPES_TS)}): ${rng.pick(TYPES_TS)} {`,
		() => `${ind(d() + 1)}const ${id()} = await ${id()}.${id()}(${id()}, "${W()}");`,
		() => `${ind(d() + 1)}if (!${id()}) {`,
		() => `${ind(d() + 2)}throw new Error(\`${W()} ${W()} failed: \${${id()}.${id()}}\`);`,
		() => `${ind(d() + 1)}}`,
		() => `${ind(d() + 1)}return ${id()}.map((e) => e.${id()}).filter(Boolean);`,
		() => "}",
		() => "",
		() => "",
		() => `${ind(d() + 1)}// ${sentence()}`,
		() => `${ind(d() + 2)}${id()}: ${rng.int(0, 5000)},`,
		() => `${ind(d() + 1)}const re = /^[a-z_]+\\d{2,}$/i;`,
		() => `${ind(d() + 1)}logger.info("${rng.pick(UNI)} ${W()} — ${W()}", { ${id()} });`,
		() => `export interface ${Id()} {`,
		() => `${ind(1)}${id()}${rng.chance(0.3) ? "?" : ""}: ${rng.pick(TYPES_TS)};`,
		() => `${ind(d() + 2)}case "${W()}":`,
		() => `${ind(d() + 1)}for (const ${id()} of ${id()}.${id()}()) {`,
		() => `${ind(d() + 2)}${id()}.push({ ${id()}, ${id()}: "${W()}\\n\\t${W()}" });`,
		() => `${ind(d() + 1)}const { ${id()}, ${id()} } = ${id()} ?? {};`,
		() => `/** ${sentence()} */`,
	];
	const py = [
		() => `from ${snake()}.${snake()} import ${Id()}, ${snake()}`,
		() => `def ${snake()}(self, ${snake()}: ${rng.pick(TYPES_PY)}, *, ${snake()}: ${rng.pick(TYPES_PY)} = None) -> ${rng.pick(TYPES_PY)}:`,
		() => `${ind(d() + 1, "    ")}"""${sentence()}"""`,
		() => `${ind(d() + 1, "    ")}${snake()} = self.${snake()}.get("${W()}", ${rng.int(0, 99)})`,
		() => `${ind(d() + 1, "    ")}if not ${snake()}:`,
		() => `${ind(d() + 2, "    ")}raise ValueError(f"invalid ${W()}: {${snake()}!r}")`,
		() => `${ind(d() + 1, "    ")}return [e for e in ${snake()} if e.${snake()}]`,
		() => "",
		() => "",
		() => `${ind(d() + 1, "    ")}# ${sentence()}`,
		() => `class ${Id()}(${Id()}):`,
		() => `${ind(d() + 1, "    ")}with open(${snake()}, "rb") as fh:`,
		() => `${ind(d() + 2, "    ")}for line in fh:`,
		() => `${ind(d() + 1, "    ")}pattern = re.compile(r"^\\s*(\\w+)=(.*)$")`,
		() => `${ind(d() + 1, "    ")}log.debug("%s ${rng.pick(UNI)} %d", ${snake()}, len(${snake()}))`,
		() => `@dataclass(frozen=True, slots=True)`,
	];
	const go = [
		() => `func (s *${Id()}) ${Id()}(ctx context.Context, ${id()} ${rng.pick(TYPES_GO)}) (${rng.pick(TYPES_GO)}, error) {`,
		() => `${ind(d() + 1, "\t")}if err != nil {`,
		() => `${ind(d() + 2, "\t")}return nil, fmt.Errorf("${W()} ${W()}: %w", err)`,
		() => `${ind(d() + 1, "\t")}}`,
		() => `${ind(d() + 1, "\t")}${id()} := s.${id()}[${id()}]`,
		() => `${ind(d() + 1, "\t")}// ${sentence()}`,
		() => "}",
		() => "",
		() => `${ind(d() + 1, "\t")}for _, ${id()} := range ${id()} {`,
		() => `type ${Id()} struct {`,
		() => `${ind(1, "\t")}${Id()} ${rng.pick(TYPES_GO)} \`json:"${snake()},omitempty"\``,
		() => `${ind(d() + 1, "\t")}log.Printf("%s=%q ${rng.pick(UNI)}", "${W()}", ${id()})`,
	];
	const md = [
		() => `## ${cap(W())} ${W()}`,
		() => sentence(8, 24),
		() => sentence(8, 24) + " " + sentence(4, 12),
		() => "",
		() => `- \`${W()}\`: ${sentence(4, 10)}`,
		() => `| ${W()} | ${rng.int(1, 999)} | ${W()} ${rng.pick(UNI)} |`,
		() => `${W()}: ${rng.chance(0.5) ? rng.int(0, 100) : `"${W()}-${W()}"`}`,
		() => `    "${id()}": "${W()}/${W()}",`,
	];
	const build = (tpl, n) => {
		const out = new Array(n);
		for (let i = 0; i < n; i++) out[i] = rng.pick(tpl)();
		return out;
	};
	const pools = { ts: build(ts, 12000), py: build(py, 8000), go: build(go, 6000), md: build(md, 5000) };

	const dirs = ["src", "src/core", "src/cli", "src/utils", "lib", "tests", "packages/server/src", "packages/ui/src", "internal/store", "cmd/tool", "docs", "scripts"];
	const exts = [["ts", "ts"], ["tsx", "ts"], ["py", "py"], ["go", "go"], ["md", "md"], ["json", "md"], ["yaml", "md"], ["rs", "ts"]];
	const files = [];
	for (let i = 0; i < 600; i++) {
		const [ext, pool] = rng.pick(exts);
		files.push({ path: `${rng.pick(dirs)}/${rng.chance(0.5) ? W() : `${W()}-${W()}`}.${ext}`, pool });
	}
	const b64 = Buffer.from(rng.bytes(96 * 1024)).toString("base64");
	return { ...pools, files, sentence, W, id, Id, snake, cap, b64 };
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

const MODELS = [
	{ provider: "anthropic", api: "anthropic-messages", model: "claude-sonnet-4-5", p: [3, 15, 0.3, 3.75], w: 5 },
	{ provider: "anthropic", api: "anthropic-messages", model: "claude-opus-4-5", p: [5, 25, 0.5, 6.25], w: 2 },
	{ provider: "openai", api: "openai-responses", model: "gpt-5.1-codex", p: [1.25, 10, 0.125, 0], w: 2 },
	{ provider: "google", api: "google-generative-ai", model: "gemini-2.5-pro", p: [1.25, 10, 0.31, 0], w: 1 },
	{ provider: "openrouter", api: "openai-completions", model: "z-ai/glm-4.6", p: [0.6, 2.2, 0.11, 0], w: 1 },
];
const THINKING = ["off", "minimal", "low", "medium", "high", "xhigh"];

const STOP = Symbol("stop");

// ---------------------------------------------------------------------------
// Session generator (drives pi's SessionManager)
// ---------------------------------------------------------------------------

class SessionGen {
	constructor(sm, rng, P, opts) {
		this.sm = sm;
		this.rng = rng;
		this.P = P;
		this.limit = opts.limit ?? Infinity; // exact entry count (throws STOP)
		this.expected = opts.expected; // estimated total entries (for schedules)
		this.count = 0;
		this.path = []; // [{id, kind}] root -> leaf of current leaf
		this.lastCompactionIdx = -1;
		this.model = rng.weighted(MODELS, MODELS.map((m) => m.w));
		this.thinking = rng.pick(["off", "medium", "high", "low"]);
		this.ctxTokens = rng.int(4000, 12000);
		this.labeled = [];
		this.callSeq = 0;
		this.readFiles = new Set();
		this.modifiedFiles = new Set();
		const nComp = opts.compactions ?? (this.expected >= 3000 ? Math.min(8, Math.max(1, Math.round(this.expected / 20000))) : 0);
		this.compactionAt = [];
		for (let i = 0; i < nComp; i++) {
			const frac = nComp === 1 ? 0.5 : 0.1 + (0.65 * i) / (nComp - 1);
			this.compactionAt.push(Math.floor(frac * this.expected));
		}
		this.nextBranchAt = rng.int(150, 500);
		this.nextLabelAt = rng.int(400, 2500);
		this.nextModelAt = rng.int(1500, 6000);
		this.nextCustomAt = rng.int(500, 3000);
		this.stats = { branches: 0, branchSummaries: 0, compactions: 0, labels: 0, modelChanges: 0, thinkingChanges: 0 };
	}

	tick(lo, hi) {
		SIM.now += Math.round(this.rng.logn(Math.sqrt(lo * hi), 0.6)) % (hi * 3) + lo;
	}

	// all appends go through here: exact count control and path tracking
	add(kind, fn) {
		if (this.count >= this.limit) throw STOP;
		const id = fn();
		this.count++;
		this.path.push({ id, kind });
		return id;
	}

	// --- content helpers ----------------------------------------------------

	lines(pool, n) {
		const start = this.rng.int(0, pool.length - n - 1);
		return pool.slice(start, start + n);
	}

	prose(nSent) {
		const out = [];
		for (let i = 0; i < nSent; i++) out.push(this.P.sentence());
		return out.join(" ");
	}

	markdownAnswer() {
		const r = this.rng;
		const parts = [this.prose(r.int(1, 3))];
		const k = r.int(0, 3);
		for (let i = 0; i < k; i++) {
			const c = r.int(0, 3);
			if (c === 0) {
				const n = r.int(2, 6);
				const bl = [];
				for (let j = 0; j < n; j++) bl.push(`- ${r.chance(0.4) ? `\`${r.pick(this.P.files).path}\`: ` : ""}${this.P.sentence(4, 12)}`);
				parts.push(bl.join("\n"));
			} else if (c === 1) {
				const f = r.pick(this.P.files);
				parts.push("```" + (f.pool === "md" ? "" : f.pool) + "\n" + this.lines(this.P[f.pool], r.int(3, 14)).join("\n") + "\n```");
			} else if (c === 2) {
				parts.push(`**${this.P.cap(this.P.W())}:** ${this.prose(r.int(1, 2))}`);
			} else {
				parts.push(this.prose(r.int(1, 4)));
			}
		}
		return parts.join("\n\n");
	}

	usage(outTokens) {
		const r = this.rng;
		const m = this.model;
		const input = r.chance(0.2) ? r.int(1000, 9000) : r.int(1, 600);
		const cacheRead = Math.max(0, this.ctxTokens - input);
		const cacheWrite = m.p[3] > 0 ? r.int(0, 4000) : 0;
		const output = outTokens;
		const c = {
			input: (input * m.p[0]) / 1e6,
			output: (output * m.p[1]) / 1e6,
			cacheRead: (cacheRead * m.p[2]) / 1e6,
			cacheWrite: (cacheWrite * m.p[3]) / 1e6,
		};
		c.total = c.input + c.output + c.cacheRead + c.cacheWrite;
		return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost: c };
	}

	toolCallId() {
		const r = this.rng;
		const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		const rand = (n) => {
			let s = "";
			for (let i = 0; i < n; i++) s += alnum[r.int(0, 61)];
			return s;
		};
		switch (this.model.provider) {
			case "anthropic":
				return `toolu_01${rand(22)}`;
			case "openai":
				return `call_${rand(24)}|fc_${hex(r.bytes(24))}`;
			case "google":
				return `call_${++this.callSeq}_${rand(8)}`;
			default:
				return `call_${rand(24)}`;
		}
	}

	thinkingBlock() {
		const r = this.rng;
		const b = { type: "thinking", thinking: this.prose(r.int(1, 5)) };
		if (this.model.provider === "anthropic") {
			b.thinkingSignature = this.P.b64.substr(r.int(0, 90000), r.int(120, 640));
		} else if (this.model.provider === "openai") {
			b.thinkingSignature = JSON.stringify({
				type: "reasoning",
				id: `rs_${hex(r.bytes(24))}`,
				summary: [{ type: "summary_text", text: b.thinking }],
				encrypted_content: "gAAAAA" + this.P.b64.substr(r.int(0, 90000), r.int(200, 800)),
			});
		}
		return b;
	}

	// --- tool calls ---------------------------------------------------------

	makeToolCall() {
		const r = this.rng;
		const f = r.pick(this.P.files);
		const name = r.weighted(["read", "bash", "edit", "write"], [36, 42, 19, 3]);
		let args;
		if (name === "read") {
			args = { path: f.path };
			if (r.chance(0.15)) {
				args.offset = r.int(1, 400);
				args.limit = r.pick([20, 40, 60, 100]);
			}
			this.readFiles.add(f.path);
		} else if (name === "bash") {
			args = { command: this.bashCommand(f) };
			if (r.chance(0.1)) args.timeout = r.pick([30, 60, 120, 600]);
		} else if (name === "edit") {
			const old = this.lines(this.P[f.pool], r.int(1, 4));
			const neu = old.map((l) => (r.chance(0.5) ? l.replace(/\b(\w+)\b/, `${this.P.W()}_${this.P.W()}`) : l));
			if (r.chance(0.35)) neu.push(...this.lines(this.P[f.pool], r.int(1, 4)));
			const edits = [{ oldText: old.join("\n"), newText: neu.join("\n") }];
			if (r.chance(0.15)) {
				const o2 = this.lines(this.P[f.pool], r.int(1, 4));
				edits.push({ oldText: o2.join("\n"), newText: o2.slice(1).join("\n") });
			}
			args = { path: f.path, edits };
			this.modifiedFiles.add(f.path);
		} else {
			args = { path: f.path, content: this.lines(this.P[f.pool], Math.min(400, Math.round(r.logn(18, 0.8)) + 3)).join("\n") + "\n" };
			this.modifiedFiles.add(f.path);
		}
		return { type: "toolCall", id: this.toolCallId(), name, arguments: args, _file: f };
	}

	bashCommand(f) {
		const r = this.rng;
		const W = this.P.W;
		return r.pick([
			() => "npm test",
			() => `npx vitest run ${f.path.replace(/\.\w+$/, ".test.ts")}`,
			() => "uv run pytest -x -q",
			() => `rg -n "${W()}" ${f.path.split("/")[0]}`,
			() => "git status --short",
			() => "git diff --stat",
			() => `git diff ${f.path}`,
			() => "git log --oneline -n 20",
			() => `ls -la ${f.path.split("/").slice(0, -1).join("/") || "."}`,
			() => "go build ./... && go vet ./...",
			() => "cargo check 2>&1 | tail -40",
			() => `cat ${f.path} | head -${r.int(20, 80)}`,
			() => `find . -name "*.${f.path.split(".").pop()}" -not -path "./node_modules/*" | head -50`,
			() => "npm run build",
			() => `wc -l ${f.path}`,
			() => `python -c "import json,sys; print(json.dumps({'${W()}': ${r.int(1, 99)}}))"`,
		])();
	}

	bashOutput(cmd) {
		const r = this.rng;
		const P = this.P;
		const n = Math.max(0, Math.min(1800, Math.round(r.logn(4.5, 1.1))));
		const out = [];
		let exit = r.chance(0.12) ? r.pick([1, 1, 2, 127]) : 0;
		if (cmd.startsWith("rg ") || cmd.startsWith("find ")) {
			for (let i = 0; i < n; i++) {
				const f = r.pick(P.files);
				out.push(cmd.startsWith("rg") ? `${f.path}:${r.int(1, 900)}:${r.pick(P[f.pool]).trim()}` : `./${f.path}`);
			}
			if (n === 0) exit = 1;
		} else if (cmd.startsWith("git log")) {
			for (let i = 0; i < Math.min(20, n + 3); i++) out.push(`${hex(r.bytes(4)).slice(0, 7)} ${P.sentence(3, 9).slice(0, -1)}`);
		} else if (cmd.startsWith("git diff") && !cmd.includes("--stat")) {
			const f = r.pick(P.files);
			out.push(`diff --git a/${f.path} b/${f.path}`, `index ${hex(r.bytes(4)).slice(0, 7)}..${hex(r.bytes(4)).slice(0, 7)} 100644`, `--- a/${f.path}`, `+++ b/${f.path}`);
			const k = Math.max(1, Math.round(n / 8));
			for (let h = 0; h < k; h++) {
				const at = r.int(1, 800);
				out.push(`@@ -${at},7 +${at},${r.int(5, 11)} @@`);
				for (const l of this.lines(P[f.pool], r.int(4, 12))) out.push((r.chance(0.3) ? (r.chance(0.5) ? "+" : "-") : " ") + l);
			}
		} else if (cmd.startsWith("ls")) {
			out.push(`total ${r.int(8, 400)}`);
			for (let i = 0; i < n + 2; i++) {
				const dir = r.chance(0.2);
				out.push(`${dir ? "drwxr-xr-x" : "-rw-r--r--"}  1 dev  staff  ${String(r.int(64, 90000)).padStart(6)} Jan ${String(r.int(1, 28)).padStart(2)} ${String(r.int(0, 23)).padStart(2, "0")}:${String(r.int(0, 59)).padStart(2, "0")} ${dir ? P.W() : r.pick(P.files).path.split("/").pop()}`);
			}
		} else if (cmd.includes("test") || cmd.includes("pytest") || cmd.includes("vitest")) {
			for (let i = 0; i < n; i++) {
				const f = r.pick(P.files);
				const ok = exit === 0 || r.chance(0.85);
				out.push(cmd.includes("pytest") ? `tests/test_${P.snake()}.py::test_${P.snake()} ${ok ? "PASSED" : "FAILED"} [${String(Math.round((100 * (i + 1)) / n)).padStart(3)}%]` : ` ${ok ? "✓" : "×"} ${f.path.replace(/\.\w+$/, ".test.ts")} (${r.int(1, 60)} tests) ${r.int(3, 2500)}ms`);
				if (!ok) {
					out.push(`   AssertionError: expected ${r.int(0, 99)} to equal ${r.int(0, 99)}`);
					for (const l of this.lines(P[f.pool], r.int(2, 6))) out.push(`    > ${l}`);
				}
			}
			out.push("", exit === 0 ? ` Test Files  ${r.int(3, 90)} passed (${r.int(3, 90)})` : ` Test Files  ${r.int(1, 5)} failed | ${r.int(3, 90)} passed`, `      Tests  ${r.int(10, 900)} passed`, `   Duration  ${(r.f() * 30).toFixed(2)}s`);
		} else if (cmd.includes("build") || cmd.includes("cargo") || cmd.includes("vet")) {
			if (exit !== 0) {
				const k = Math.max(1, Math.round(n / 6));
				for (let i = 0; i < k; i++) {
					const f = r.pick(P.files);
					out.push(`error[E0${r.int(100, 799)}]: ${P.sentence(3, 8).slice(0, -1).toLowerCase()}`, `  --> ${f.path}:${r.int(1, 600)}:${r.int(1, 80)}`, "   |");
					for (const l of this.lines(P[f.pool], r.int(1, 4))) out.push(`${String(r.int(1, 600)).padStart(3)} | ${l}`);
					out.push("   |");
				}
			} else {
				for (let i = 0; i < Math.min(n, 30); i++) out.push(`   Compiling ${P.W()}-${P.W()} v0.${r.int(1, 30)}.${r.int(0, 9)}`);
				out.push(`    Finished \`dev\` profile [unoptimized + debuginfo] target(s) in ${(r.f() * 40).toFixed(2)}s`);
			}
		} else if (cmd.startsWith("cat ")) {
			const f = r.pick(P.files);
			out.push(...this.lines(P[f.pool], Math.max(1, n)));
		} else if (cmd.startsWith("git status")) {
			for (let i = 0; i < Math.min(n, 40); i++) out.push(`${r.pick([" M", "M ", "??", " D", "A "])} ${r.pick(P.files).path}`);
		} else {
			for (let i = 0; i < n; i++) out.push(r.chance(0.5) ? P.sentence(3, 12) : `${P.W()}=${r.int(0, 100000)} ${P.W()}`);
		}
		let text = out.join("\n") || "(no output)";
		let details;
		if (r.chance(0.004)) {
			// large output truncated by pi's bash tool (tail 2000 lines / 50KB)
			const big = [];
			const f = r.pick(P.files);
			let bytes = 0;
			while (bytes < 50 * 1024 - 200) {
				const l = `[${P.W()}] ${r.pick(P[f.pool])}`;
				bytes += Buffer.byteLength(l) + 1;
				big.push(l);
			}
			const totalLines = big.length + r.int(500, 20000);
			const fullOutputPath = `/tmp/pi-bash-${hex(r.bytes(8))}.log`;
			text = big.join("\n") + `\n\n[Showing lines ${totalLines - big.length + 1}-${totalLines} of ${totalLines} (50.0KB limit). Full output: ${fullOutputPath}]`;
			details = {
				truncation: { content: "", truncated: true, truncatedBy: "bytes", totalLines, totalBytes: bytes * 8, outputLines: big.length, outputBytes: bytes, lastLinePartial: false, firstLineExceedsLimit: false, maxLines: 2000, maxBytes: 51200 },
				fullOutputPath,
			};
			delete details.truncation.content;
		}
		if (exit !== 0) text += `\n\nCommand exited with code ${exit}`;
		return { text, isError: exit !== 0, details };
	}

	toolResult(call) {
		const r = this.rng;
		const P = this.P;
		const f = call._file;
		let text;
		let isError = false;
		let details;
		if (call.name === "read") {
			if (r.chance(0.03)) {
				isError = true;
				text = `ENOENT: no such file or directory, access '/home/dev/${f.path}'`;
			} else {
				const n = Math.max(1, Math.min(2000, call.arguments.limit ?? Math.round(r.logn(6, 1.0))));
				text = this.lines(P[f.pool], Math.min(n, P[f.pool].length - 2)).join("\n");
				if (call.arguments.limit) text += `\n\n[${r.int(10, 900)} more lines in file. Use offset=${call.arguments.offset + call.arguments.limit} to continue.]`;
			}
		} else if (call.name === "bash") {
			({ text, isError, details } = this.bashOutput(call.arguments.command));
		} else if (call.name === "edit") {
			if (r.chance(0.07)) {
				isError = true;
				text = `Could not find the exact text in ${f.path}. The old text must match exactly including all whitespace and newlines.`;
			} else {
				const edits = call.arguments.edits;
				text = `Successfully replaced ${edits.length} block(s) in ${f.path}.`;
				const first = r.int(1, 700);
				const w = String(first + 60).length;
				const dl = [];
				let ln = first - 4;
				for (const l of this.lines(P[f.pool], 3)) dl.push(` ${String(Math.max(1, ln++)).padStart(w)} ${l}`);
				for (const e of edits) {
					let o = ln;
					for (const l of e.oldText.split("\n")) dl.push(`-${String(o++).padStart(w)} ${l}`);
					let nn = ln;
					for (const l of e.newText.split("\n")) dl.push(`+${String(nn++).padStart(w)} ${l}`);
					ln = nn;
					for (const l of this.lines(P[f.pool], 3)) dl.push(` ${String(ln++).padStart(w)} ${l}`);
					if (edits.length > 1) dl.push(` ${"".padStart(w)} ...`);
				}
				details = { diff: dl.join("\n"), firstChangedLine: first };
			}
		} else {
			text = `Successfully wrote ${Buffer.byteLength(call.arguments.content)} bytes to ${f.path}`;
		}
		const msg = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text }] };
		if (details !== undefined) msg.details = details;
		msg.isError = isError;
		this.tick(30, 8000);
		msg.timestamp = SIM.now;
		this.ctxTokens += Math.round(text.length / 4);
		return msg;
	}

	// --- entry emitters -------------------------------------------------------

	userMessage() {
		const r = this.rng;
		const P = this.P;
		this.tick(8000, 400000);
		if (r.chance(0.003)) SIM.now += r.int(1, 16) * 3600 * 1000; // came back later
		const f = r.pick(P.files);
		let text = r.pick([
			() => `${P.sentence(4, 12)} Look at \`${f.path}\` first.`,
			() => `Can you fix the failing test in ${f.path}? ${P.sentence()}`,
			() => `${P.sentence()} ${P.sentence()}`,
			() => "continue",
			() => `Refactor ${P.id()} in ${f.path} so that ${P.sentence(4, 10).toLowerCase()}`,
			() => `${P.sentence()}\n\n${P.sentence()}\n\n- ${P.sentence(3, 8)}\n- ${P.sentence(3, 8)}`,
		])();
		if (r.chance(0.12)) text += "\n\n```\n" + this.lines(P[f.pool], r.int(4, 40)).join("\n") + "\n```";
		let content;
		if (r.chance(0.004)) {
			content = [{ type: "text", text }, { type: "image", data: P.b64.substr(r.int(0, 60000), r.int(4000, 30000) & ~3), mimeType: "image/png" }];
		} else content = r.chance(0.85) ? [{ type: "text", text }] : text;
		const msg = { role: "user", content, timestamp: SIM.now };
		this.ctxTokens += Math.round(text.length / 4);
		return this.add("user", () => this.sm.appendMessage(msg));
	}

	assistant(calls, finalText, stopReason) {
		const r = this.rng;
		const started = SIM.now;
		const content = [];
		if (this.thinking !== "off" && r.chance(0.25)) content.push(this.thinkingBlock());
		if (finalText !== undefined) content.push({ type: "text", text: finalText });
		else if (r.chance(0.35)) content.push({ type: "text", text: this.prose(r.int(1, 2)) });
		let outTok = 20;
		for (const c of calls) {
			const { _file, ...clean } = c;
			content.push(clean);
			outTok += Math.round(JSON.stringify(clean.arguments).length / 3.5);
		}
		for (const c of content) if (c.type !== "toolCall") outTok += Math.round((c.text ?? c.thinking).length / 4);
		this.tick(1500, 40000);
		const m = this.model;
		const msg = { role: "assistant", content, api: m.api, provider: m.provider, model: m.model };
		if (m.provider === "anthropic") msg.responseId = `msg_01${hex(r.bytes(11))}`;
		else if (m.provider === "openai") msg.responseId = `resp_${hex(r.bytes(24))}`;
		msg.usage = this.usage(outTok);
		msg.stopReason = stopReason;
		if (stopReason === "error") msg.errorMessage = r.pick(['529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "terminated", "Connection error."]);
		if (stopReason === "aborted") msg.errorMessage = "Request was aborted";
		msg.timestamp = started;
		this.ctxTokens += outTok;
		return this.add("assistant", () => this.sm.appendMessage(msg));
	}

	turn() {
		const r = this.rng;
		this.maybeSideEntries();
		this.userMessage();
		const rounds = Math.min(40, r.geom(4.2));
		for (let i = 0; i < rounds; i++) {
			const n = r.chance(0.8) ? 1 : r.int(2, 4);
			const calls = [];
			for (let k = 0; k < n; k++) calls.push(this.makeToolCall());
			if (r.chance(0.006)) {
				this.assistant([], undefined, r.chance(0.5) ? "aborted" : "error");
				return;
			}
			this.assistant(calls, undefined, "toolUse");
			for (const c of calls) {
				const msg = this.toolResult(c);
				this.add("toolResult", () => this.sm.appendMessage(msg));
			}
		}
		this.assistant([], this.markdownAnswer(), r.chance(0.005) ? "length" : "stop");
	}

	maybeSideEntries() {
		const r = this.rng;
		if (this.count >= this.nextModelAt) {
			this.nextModelAt = this.count + r.int(1500, 6000);
			if (r.chance(0.6)) {
				let m;
				do m = r.weighted(MODELS, MODELS.map((x) => x.w));
				while (m === this.model && MODELS.length > 1);
				this.model = m;
				this.tick(1000, 20000);
				this.add("model_change", () => this.sm.appendModelChange(m.provider, m.model));
				this.stats.modelChanges++;
			}
			if (r.chance(0.5)) {
				this.thinking = r.pick(THINKING.filter((t) => t !== this.thinking));
				this.tick(500, 5000);
				this.add("thinking_level_change", () => this.sm.appendThinkingLevelChange(this.thinking));
				this.stats.thinkingChanges++;
			}
		}
		if (this.count >= this.nextLabelAt) {
			this.nextLabelAt = this.count + r.int(400, 2500);
			this.tick(1000, 30000);
			if (this.labeled.length && r.chance(0.2)) {
				const t = this.labeled.splice(r.int(0, this.labeled.length - 1), 1)[0];
				if (this.sm.getEntry(t)) this.add("label", () => this.sm.appendLabelChange(t, undefined));
			} else {
				const lo = Math.max(0, this.path.length - 300);
				const cands = [];
				for (let i = this.path.length - 1; i >= lo; i--) if (this.path[i].kind === "user" || this.path[i].kind === "assistant") cands.push(this.path[i].id);
				if (cands.length) {
					const t = r.pick(cands);
					this.labeled.push(t);
					this.add("label", () => this.sm.appendLabelChange(t, `${r.pick(["checkpoint", "before-refactor", "good-state", "bug-repro", "wip", "green-tests", "api-v2"])}-${this.stats.labels + 1}`));
				}
			}
			this.stats.labels++;
		}
		if (this.count >= this.nextCustomAt) {
			this.nextCustomAt = this.count + r.int(800, 4000);
			const c = r.int(0, 2);
			this.tick(200, 5000);
			if (c === 0) {
				const todos = [];
				for (let i = 0; i < r.int(2, 8); i++) todos.push({ id: i + 1, text: this.P.sentence(3, 8), done: r.chance(0.5) });
				this.add("custom", () => this.sm.appendCustomEntry("todo-state", { todos, updatedAt: SIM.now }));
			} else if (c === 1) {
				this.add("custom_message", () => this.sm.appendCustomMessageEntry("plan-mode", `Plan step ${r.int(1, 9)}: ${this.prose(r.int(1, 4))}`, r.chance(0.7), { step: r.int(1, 9) }));
			} else {
				const f = r.pick(this.P.files);
				const cmd = this.bashCommand(f);
				const o = this.bashOutput(cmd);
				const msg = { role: "bashExecution", command: cmd, output: o.text, exitCode: o.isError ? 1 : 0, cancelled: false, truncated: false, timestamp: SIM.now };
				if (r.chance(0.3)) msg.excludeFromContext = true;
				this.add("bashExecution", () => this.sm.appendMessage(msg));
			}
		}
	}

	compactionSummary() {
		const P = this.P;
		const r = this.rng;
		const bl = (n, pre) => {
			const a = [];
			for (let i = 0; i < n; i++) a.push(`${pre}${P.sentence(4, 14)}`);
			return a.join("\n");
		};
		const reads = [...this.readFiles].slice(-30);
		const mods = [...this.modifiedFiles].slice(-20);
		const s =
			`## Goal\n${P.sentence(8, 20)}\n\n## Constraints & Preferences\n${bl(r.int(2, 5), "- ")}\n\n## Progress\n### Done\n${bl(r.int(3, 10), "- [x] ")}\n\n### In Progress\n${bl(r.int(1, 4), "- [ ] ")}\n\n### Blocked\n- ${r.chance(0.5) ? "(none)" : P.sentence()}\n\n` +
			`## Key Decisions\n${bl(r.int(2, 6), "- **Decision**: ")}\n\n## Next Steps\n${bl(r.int(2, 5), "1. ")}\n\n## Critical Context\n${bl(r.int(1, 4), "- ")}` +
			`\n\n<read-files>\n${reads.join("\n")}\n</read-files>\n\n<modified-files>\n${mods.join("\n")}\n</modified-files>`;
		return { summary: s, details: { readFiles: reads, modifiedFiles: mods } };
	}

	maybeCompaction() {
		if (!this.compactionAt.length || this.count < this.compactionAt[0]) return;
		this.compactionAt.shift();
		const r = this.rng;
		// keep the last few turns: firstKeptEntryId is a user message on the current path
		const lo = Math.max(this.lastCompactionIdx + 1, this.path.length - 120);
		const cands = [];
		for (let i = this.path.length - 15; i >= lo; i--) if (this.path[i].kind === "user") cands.push(i);
		if (!cands.length) return;
		const keepIdx = cands[Math.min(cands.length - 1, r.int(0, 2))];
		const { summary, details } = this.compactionSummary();
		const tokensBefore = this.ctxTokens + r.int(150000, 185000);
		this.tick(20000, 90000);
		this.add("compaction", () => this.sm.appendCompaction(summary, this.path[keepIdx].id, tokensBefore, details));
		this.lastCompactionIdx = this.path.length - 1;
		this.ctxTokens = r.int(8000, 30000);
		this.stats.compactions++;
	}

	userIndices(minIdx) {
		const out = [];
		for (let i = this.path.length - 1; i > minIdx && i >= this.path.length - 600; i--) if (this.path[i].kind === "user") out.push(i);
		return out;
	}

	maybeBranch() {
		if (this.count < this.nextBranchAt) return;
		const r = this.rng;
		this.nextBranchAt = this.count + r.int(150, 500);
		const users = this.userIndices(Math.max(0, this.lastCompactionIdx + 1)); // newest first
		if (users.length < 2) return;
		// mostly re-do one of the last couple of prompts, sometimes go far back
		const k = r.chance(0.75) ? r.int(0, Math.min(2, users.length - 1)) : r.int(0, users.length - 1);
		const j = users[k];
		const parentId = this.path[j - 1].id;
		const mode = r.weighted(["branch", "summary", "return"], [55, 25, 20]);
		this.tick(5000, 60000);
		if (mode === "return") {
			// explore an alternative, then navigate back to the old leaf and continue there
			const saved = this.path.slice();
			const savedCompaction = this.lastCompactionIdx;
			this.sm.branch(parentId);
			this.path.length = j;
			this.stats.branches++;
			const t = r.int(1, 3);
			for (let i = 0; i < t; i++) this.turn();
			this.tick(5000, 60000);
			this.sm.branch(saved[saved.length - 1].id);
			this.path = saved;
			this.lastCompactionIdx = savedCompaction;
			return;
		}
		if (mode === "branch") {
			this.sm.branch(parentId);
			this.path.length = j;
			this.stats.branches++;
		} else {
			if (this.count >= this.limit) throw STOP;
			const abandonedTip = this.path[this.path.length - 1].id;
			const reads = [...this.readFiles].slice(-8);
			const mods = [...this.modifiedFiles].slice(-5);
			const summary = `The user explored a different direction.\n\n## Goal\n${this.P.sentence()}\n\n## Progress\n- ${this.P.sentence()}\n- ${this.P.sentence()}\n\n## Abandoned because\n${this.prose(r.int(1, 3))}\n\n(branch tip ${abandonedTip})`;
			this.path.length = j;
			this.add("branch_summary", () => this.sm.branchWithSummary(parentId, summary, { readFiles: reads, modifiedFiles: mods }));
			this.stats.branches++;
			this.stats.branchSummaries++;
		}
	}

	run(stopFn) {
		const r = this.rng;
		try {
			if (r.chance(0.7)) this.add("model_change", () => this.sm.appendModelChange(this.model.provider, this.model.model));
			if (r.chance(0.6)) this.add("thinking_level_change", () => this.sm.appendThinkingLevelChange(this.thinking));
			this.turn();
			if (r.chance(0.7)) this.add("session_info", () => this.sm.appendSessionInfo(`${this.P.cap(this.P.W())} ${this.P.W()} ${this.P.W()}`));
			while (!stopFn()) {
				this.turn();
				this.maybeCompaction();
				this.maybeBranch();
			}
		} catch (e) {
			if (e !== STOP) throw e;
		}
	}
}

// ---------------------------------------------------------------------------
// generate / generate-store
// ---------------------------------------------------------------------------

function encodeCwd(cwd) {
	// same as pi's getDefaultSessionDir()
	return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

function newSessionFile(SessionManager, cwd, dir, rng, parentSession) {
	const sm = SessionManager.create(cwd, dir);
	const id = uuid7(SIM.now, rng.bytes(16));
	sm.newSession(parentSession ? { id, parentSession } : { id });
	return sm;
}

async function cmdGenerate(out, opt) {
	const seed = num(opt.seed, 1) >>> 0;
	const entries = num(opt.entries, 100000);
	if (entries < 10) throw new Error("--entries must be >= 10");
	installDeterminism(seed);
	const { SessionManager, piVersion } = await loadPi();
	const t0 = hr();
	const rng = makeRng(seed);
	const P = buildPools(makeRng(seed ^ 0x9001));
	out = path.resolve(out);
	fs.mkdirSync(path.dirname(out), { recursive: true });
	const tmp = fs.mkdtempSync(path.join(path.dirname(out), ".pi_side_gen-"));
	let stats, file, lastTime, leafId, pathLen;
	try {
		SIM.now = RealDate.UTC(2025, 0, 6, 9, 0, 0) + rng.int(0, 86400) * 1000;
		const cwd = opt.cwd || "/home/dev/projects/big-monorepo";
		const sm = newSessionFile(SessionManager, cwd, tmp, rng);
		const g = new SessionGen(sm, rng, P, { limit: entries, expected: entries, compactions: opt.compactions !== undefined ? num(opt.compactions) : undefined });
		g.run(() => false);
		file = sm.getSessionFile();
		stats = g.stats;
		lastTime = SIM.now;
		leafId = sm.getLeafId();
		pathLen = sm.getBranch().length;
	} finally {
		uninstallDate();
	}
	fs.renameSync(file, out);
	fs.rmSync(tmp, { recursive: true, force: true });
	fs.utimesSync(out, lastTime / 1000, lastTime / 1000);
	const bytes = fs.statSync(out).size;
	const seconds = secs(t0, hr());
	return { path: out, entries, bytes, seconds, seed, leafId, leafPathLength: pathLen, bytesPerEntry: Math.round(bytes / entries), piVersion, ...stats };
}

async function cmdGenerateStore(dir, opt) {
	const seed = num(opt.seed, 1) >>> 0;
	const nFiles = num(opt.files, 200);
	const totalBytes = num(opt["total-mb"], 500) * 1024 * 1024;
	const nProjects = num(opt.projects, 10);
	const sigma = num(opt.sigma, 1.6);
	installDeterminism(seed);
	const { SessionManager, piVersion } = await loadPi();
	const t0 = hr();
	const rng = makeRng(seed);
	const P = buildPools(makeRng(seed ^ 0x9001));
	dir = path.resolve(dir);
	fs.mkdirSync(dir, { recursive: true });

	// project folders (zipf-ish popularity)
	const names = ["pi-server", "webapp", "infra", "data-pipeline", "mobile-client", "docs-site", "cli-tools", "ml-experiments", "game-engine", "billing-service", "auth-gateway", "dotfiles", "compiler", "search-index", "notebooks"];
	const projects = [];
	for (let i = 0; i < nProjects; i++) {
		const cwd = i === 0 ? "/home/dev" : `/home/dev/${i % 3 === 0 ? "work" : "projects"}/${names[i % names.length]}${i >= names.length ? `-${i}` : ""}`;
		projects.push({ cwd, dir: path.join(dir, encodeCwd(cwd)), w: 1 / (i + 1) });
	}
	// skewed sizes: log-normal, normalised to the total, clamped
	const raw = [];
	for (let i = 0; i < nFiles; i++) raw.push(Math.exp(sigma * rng.normal()));
	const minB = 3000;
	const maxB = Math.max(minB * 2, totalBytes * 0.35);
	let scale = totalBytes / raw.reduce((a, b) => a + b, 0);
	let targets = raw.map((x) => Math.min(maxB, Math.max(minB, x * scale)));
	for (let it = 0; it < 8; it++) {
		const s = targets.reduce((a, b) => a + b, 0);
		scale *= totalBytes / s;
		targets = raw.map((x) => Math.min(maxB, Math.max(minB, x * scale)));
	}
	// sessions spread over ~6 months, chronological
	const start = RealDate.UTC(2024, 11, 1, 8, 0, 0);
	const starts = [];
	for (let i = 0; i < nFiles; i++) starts.push(start + Math.floor(rng.f() * 180 * 86400 * 1000));
	starts.sort((a, b) => a - b);

	let totalWritten = 0;
	let carry = 0; // overshoot so far (files end at turn boundaries); taken off later targets
	let totalEntries = 0;
	let largest = 0;
	let smallest = Infinity;
	const created = [];
	const perProject = new Map();
	try {
		for (let i = 0; i < nFiles; i++) {
			const proj = rng.weighted(projects, projects.map((p) => p.w));
			SIM.now = Math.max(starts[i], SIM.now + 1000);
			const parent = created.length && rng.chance(0.05) ? rng.pick(created) : undefined;
			const sm = newSessionFile(SessionManager, proj.cwd, proj.dir, rng, parent);
			const target = Math.max(minB, targets[i] - carry);
			const file = sm.getSessionFile();
			const size = () => {
				try {
					return fs.statSync(file).size;
				} catch {
					return 0;
				}
			};
			const g = new SessionGen(sm, rng, P, { expected: Math.max(10, Math.round(target / 950)) });
			g.run(() => size() >= target);
			const b = size();
			fs.utimesSync(file, SIM.now / 1000, SIM.now / 1000);
			totalWritten += b;
			carry += b - targets[i];
			totalEntries += g.count;
			largest = Math.max(largest, b);
			smallest = Math.min(smallest, b);
			created.push(file);
			perProject.set(path.basename(proj.dir), (perProject.get(path.basename(proj.dir)) ?? 0) + 1);
		}
	} finally {
		uninstallDate();
	}
	return {
		dir,
		files: nFiles,
		projects: perProject.size,
		bytes: totalWritten,
		entries: totalEntries,
		seconds: secs(t0, hr()),
		largestBytes: largest,
		smallestBytes: smallest,
		filesPerProject: Object.fromEntries([...perProject.entries()].sort((a, b) => b[1] - a[1])),
		seed,
		piVersion,
	};
}

// ---------------------------------------------------------------------------
// measure
// ---------------------------------------------------------------------------

function readHeader(file) {
	const fd = fs.openSync(file, "r");
	try {
		const buf = Buffer.alloc(64 * 1024);
		const n = fs.readSync(fd, buf, 0, buf.length, 0);
		const line = buf.toString("utf8", 0, n).split("\n")[0];
		return JSON.parse(line);
	} catch {
		return null;
	} finally {
		fs.closeSync(fd);
	}
}

function isV3(file, CURRENT) {
	const h = readHeader(file);
	return !!h && h.type === "session" && typeof h.id === "string" && h.version === CURRENT;
}

async function cmdMeasure(file, opt) {
	const { SessionManager, CURRENT_SESSION_VERSION, piVersion } = await loadPi();
	file = path.resolve(file);
	if (!isV3(file, CURRENT_SESSION_VERSION)) {
		throw new Error(`${file} is not a v${CURRENT_SESSION_VERSION} pi session file; refusing to open it (pi would migrate and rewrite it)`);
	}
	if (global.gc) global.gc();
	const base = process.memoryUsage();
	const t0 = hr();
	const sm = SessionManager.open(file);
	const t1 = hr();
	if (opt["leaf-id"] !== undefined && opt["leaf-id"] !== true) sm.branch(String(opt["leaf-id"]));
	const t1b = hr();
	const ctx = sm.buildSessionContext();
	const t2 = hr();
	const tree = sm.getTree();
	const t3 = hr();
	const mem = process.memoryUsage();
	const res = {
		openSeconds: secs(t0, t1),
		contextSeconds: secs(t1b, t2),
		treeSeconds: secs(t2, t3),
		totalSeconds: secs(t0, t1) + secs(t1b, t3),
		rssBytes: mem.rss,
		heapUsedBytes: mem.heapUsed,
		messages: ctx.messages.length,
		entries: sm.getEntries().length,
		leafId: sm.getLeafId(),
		treeRoots: tree.length,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model,
		fileBytes: fs.statSync(file).size,
		baselineRssBytes: base.rss,
		baselineHeapUsedBytes: base.heapUsed,
		maxRssBytes: process.resourceUsage().maxRSS * 1024,
		nodeVersion: process.version,
		piVersion,
	};
	if (global.gc) {
		global.gc();
		const m2 = process.memoryUsage();
		res.rssAfterGcBytes = m2.rss;
		res.heapUsedAfterGcBytes = m2.heapUsed;
	}
	// keep everything alive until after the measurements
	globalThis.__keep = [sm, ctx, tree];
	return res;
}

// ---------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------

async function cmdList(dir, opt) {
	const { SessionManager, CURRENT_SESSION_VERSION, piVersion } = await loadPi();
	dir = path.resolve(dir);
	const subs = fs
		.readdirSync(dir, { withFileTypes: true })
		.filter((d) => d.isDirectory())
		.map((d) => path.join(dir, d.name))
		.sort();
	const files = [];
	let bytes = 0;
	const skipped = [];
	for (const s of subs) {
		for (const f of fs.readdirSync(s).filter((x) => x.endsWith(".jsonl")).sort()) {
			const p = path.join(s, f);
			if (!isV3(p, CURRENT_SESSION_VERSION)) {
				skipped.push(p);
				continue;
			}
			files.push(p);
			bytes += fs.statSync(p).size;
		}
	}
	if (skipped.length && !opt["allow-migrate"]) {
		throw new Error(`${skipped.length} non-v${CURRENT_SESSION_VERSION} session files under ${dir} (e.g. ${skipped[0]}); SessionManager.open would rewrite them. Refusing.`);
	}

	// 1. SessionManager.list(cwd, sessionDir) for every project folder
	let listed = 0;
	const t0 = hr();
	for (const s of subs) {
		const cwd = readHeaderCwd(s) ?? "/";
		const sessions = await SessionManager.list(cwd, s);
		listed += sessions.length;
	}
	const t1 = hr();

	// 2. SessionManager.open(file) for every file (sequential, each dropped afterwards)
	let openedEntries = 0;
	const t2 = hr();
	for (const f of files) {
		const sm = SessionManager.open(f);
		openedEntries += sm.getEntries().length;
	}
	const t3 = hr();
	const parentMaxRss = process.resourceUsage().maxRSS * 1024;

	// 3. SessionManager.listAll() in a child process with PI_CODING_AGENT_DIR/sessions == DIR
	let agentDir;
	let tmpAgent;
	if (path.basename(dir) === "sessions") agentDir = path.dirname(dir);
	else {
		tmpAgent = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR || "/tmp"), "pi_side_agent-"));
		fs.symlinkSync(dir, path.join(tmpAgent, "sessions"), "dir");
		agentDir = tmpAgent;
	}
	let child;
	try {
		const r = spawnSync(process.execPath, [SCRIPT, "_listall"], {
			env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
			encoding: "utf8",
			maxBuffer: 64 * 1024 * 1024,
		});
		if (r.status !== 0) throw new Error(`listAll child failed (status ${r.status} ${r.signal ?? ""}): ${r.stderr.slice(-2000)}`);
		child = JSON.parse(r.stdout.trim().split("\n").pop());
	} finally {
		if (tmpAgent) fs.rmSync(tmpAgent, { recursive: true, force: true });
	}
	const listSeconds = secs(t0, t1);
	const openAllSeconds = secs(t2, t3);
	return {
		listSeconds,
		openAllSeconds,
		listPlusOpenSeconds: listSeconds + openAllSeconds,
		listAllSeconds: child.listAllSeconds,
		files: files.length,
		bytes,
		projects: subs.length,
		listedSessions: listed,
		listAllSessions: child.sessions,
		openedEntries,
		maxRssBytes: parentMaxRss,
		listAllMaxRssBytes: child.maxRssBytes,
		nodeVersion: process.version,
		piVersion,
	};
}

function readHeaderCwd(sub) {
	for (const f of fs.readdirSync(sub)) {
		if (!f.endsWith(".jsonl")) continue;
		const h = readHeader(path.join(sub, f));
		if (h && typeof h.cwd === "string") return h.cwd;
	}
	return null;
}

async function cmdListAllChild() {
	// PI_CODING_AGENT_DIR is already set in this process's environment before pi is imported
	const { SessionManager } = await loadPi();
	const t0 = hr();
	const sessions = await SessionManager.listAll();
	const t1 = hr();
	return { listAllSeconds: secs(t0, t1), sessions: sessions.length, maxRssBytes: process.resourceUsage().maxRSS * 1024, agentDir: process.env.PI_CODING_AGENT_DIR };
}

// ---------------------------------------------------------------------------

async function main() {
	const [cmd, ...rest] = process.argv.slice(2);
	const { pos, opt } = parseArgs(rest);
	let res;
	switch (cmd) {
		case "generate":
			if (!pos[0]) throw new Error("usage: generate OUT.jsonl --entries N [--seed N]");
			res = await cmdGenerate(pos[0], opt);
			break;
		case "generate-store":
			if (!pos[0]) throw new Error("usage: generate-store DIR --files N --total-mb M [--projects P] [--seed N]");
			res = await cmdGenerateStore(pos[0], opt);
			break;
		case "measure":
			if (!pos[0]) throw new Error("usage: measure FILE [--leaf-id ID]");
			res = await cmdMeasure(pos[0], opt);
			break;
		case "list":
			if (!pos[0]) throw new Error("usage: list DIR");
			res = await cmdList(pos[0], opt);
			break;
		case "_listall":
			res = await cmdListAllChild();
			break;
		default:
			process.stderr.write(
				"usage:\n  pi_side.mjs generate OUT.jsonl --entries 100000 [--seed N] [--compactions K]\n  pi_side.mjs generate-store DIR --files 200 --total-mb 500 [--projects 10] [--seed N]\n  pi_side.mjs measure FILE [--leaf-id ID]\n  pi_side.mjs list DIR\n",
			);
			process.exit(2);
	}
	process.stdout.write(JSON.stringify(res) + "\n");
}

main().catch((e) => {
	process.stderr.write(`${e?.stack ?? e}\n`);
	process.exit(1);
});
