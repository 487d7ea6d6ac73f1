// pi-server's pi extension: tells the user's pi-server daemon which session this pi has open
// (pid, leaf, streaming, model, thinking level), and carries out the editors' writes on that
// session inside pi, through pi's own API, so the summary is pi's, pi's leaf moves and the file
// has one writer. See docs/protocol.md "Live sessions".
import * as os from "node:os";
import * as path from "node:path";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Link, type Params, RpcError } from "./link.ts";

const COMMAND = "pi-server-action";
// the contract's error codes (docs/protocol.md "Errors")
const ENTRY_NOT_FOUND = -32002;
const SUMMARY_FAILED = -32004;
const WRITE_FAILED = -32005;
const BUSY = -32006;
const NOTHING_TO_COMPACT = -32007;
const INVALID_PARAMS = -32602;

type Action = (ctx: ExtensionCommandContext) => Promise<Params>;

/** pi-server's default root for pi's sessions, as pi-server derives it. */
function defaultRoot(): string {
	const dir = process.env.PI_CODING_AGENT_DIR;
	const agent = dir ? (dir.startsWith("~") ? path.join(os.homedir(), dir.slice(1)) : dir) : path.join(os.homedir(), ".pi", "agent");
	return path.resolve(agent, "sessions");
}

function within(file: string, root: string): boolean {
	const rel = path.relative(root, file);
	return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((c): c is { type: string; text: string } => c?.type === "text" && typeof c.text === "string")
		.map((c) => c.text)
		.join("");
}

export default function piServerLive(pi: ExtensionAPI) {
	let ctx: ExtensionContext | undefined;
	let link: Link | undefined;
	let sent = "";
	let streaming = false;
	let settled: Array<() => void> = [];
	let lastTree: { summaryEntry?: { id: string } } | undefined;
	// actions run one at a time, in the order the daemon sent them
	let chain: Promise<unknown> = Promise.resolve();
	const actions = new Map<string, { run: Action; done: (v: Params) => void; fail: (e: unknown) => void }>();
	let nextAction = 1;
	let waiting = 0; // actions asked for and not yet done

	const session = (): string | undefined => ctx?.sessionManager.getSessionFile();

	function live(): Params | undefined {
		const file = session();
		if (!ctx || !file) return undefined;
		const model = ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null;
		return {
			session: file,
			pid: process.pid,
			leafId: ctx.sessionManager.getLeafId() ?? null,
			streaming,
			model,
			thinkingLevel: model ? pi.getThinkingLevel() : null,
		};
	}

	function initOptions(): Params {
		const file = session();
		// an editor's default configuration names no roots: the same daemon when pi's files are there
		if (!file || within(file, defaultRoot())) return {};
		return { sessionDirs: [path.dirname(file)] };
	}

	function register(): void {
		const state = live();
		if (!link?.ready || !state) return;
		sent = JSON.stringify(state);
		link.request("pi/live/register", state).catch(() => undefined);
	}

	function update(): void {
		const state = live();
		if (!link?.ready || !state) return;
		const now = JSON.stringify(state);
		if (now === sent) return;
		sent = now;
		link.notify("pi/live/update", state);
	}

	/** Resolves once pi is idle (at once if it is); rejects with Busy past `timeout` seconds.
	 *  True when it had to wait for a turn to end. */
	function idle(timeout: number): Promise<boolean> {
		if (!streaming && (ctx?.isIdle() ?? true)) return Promise.resolve(false);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				settled = settled.filter((f) => f !== wake);
				reject(new RpcError(BUSY, `pi (pid ${process.pid}) is still running a turn after ${timeout} s`));
			}, timeout * 1000);
			const wake = () => {
				clearTimeout(timer);
				resolve(true);
			};
			settled.push(wake);
		});
	}

	/** Runs an action inside pi's own command handler (navigateTree needs a command context),
	 *  after pi's turn, if one runs, has ended. */
	function enqueue(timeout: number, run: (ctx: ExtensionCommandContext, queued: boolean) => Promise<Params>): Promise<Params> {
		// queued: asked while pi ran a turn, or behind other actions still waiting for one
		const behind = waiting > 0 || streaming || !(ctx?.isIdle() ?? true);
		waiting++;
		const result = chain.then(async () => {
			const queued = (await idle(timeout)) || behind;
			const id = String(nextAction++);
			return new Promise<Params>((done, fail) => {
				actions.set(id, { run: (c) => run(c, queued), done, fail });
				pi.sendUserMessage(`/${COMMAND} ${id}`, { expandPromptTemplates: true });
			});
		});
		chain = result.catch(() => undefined).finally(() => waiting--);
		return result;
	}

	function entry(c: ExtensionContext, id: unknown): { type: string; message?: { role: string; content: unknown }; content?: unknown } {
		const e = typeof id === "string" ? c.sessionManager.getEntry(id) : undefined;
		if (!e) throw new RpcError(ENTRY_NOT_FOUND, `no entry ${String(id)} in ${session()}`);
		return e as ReturnType<typeof entry>;
	}

	async function switchBranch(c: ExtensionCommandContext, p: Params, queued: boolean): Promise<Params> {
		if (typeof p.targetId !== "string") throw new RpcError(INVALID_PARAMS, "invalid params: targetId: pi cannot move before the first entry");
		const target = entry(c, p.targetId);
		lastTree = undefined;
		let r: { cancelled: boolean };
		try {
			r = await c.navigateTree(p.targetId, {
				summarize: p.summarize === true,
				customInstructions: typeof p.customInstructions === "string" ? p.customInstructions : undefined,
				replaceInstructions: p.replaceInstructions === true,
				label: typeof p.label === "string" && p.label ? p.label : undefined,
			});
		} catch (e) {
			throw new RpcError(p.summarize ? SUMMARY_FAILED : WRITE_FAILED, e instanceof Error ? e.message : String(e));
		}
		if (r.cancelled) throw new RpcError(WRITE_FAILED, "the branch switch was cancelled in pi");
		const out: Params = { leafId: c.sessionManager.getLeafId() ?? null, queued };
		// as pi's /tree: a user message or custom message target goes back into the editor
		const isUser = target.type === "message" && target.message?.role === "user";
		if (isUser || target.type === "custom_message") out.editorText = textOf(isUser ? target.message?.content : target.content);
		if (lastTree?.summaryEntry) out.summaryEntryId = lastTree.summaryEntry.id;
		return out;
	}

	function compact(c: ExtensionCommandContext, p: Params, queued: boolean): Promise<Params> {
		return new Promise((resolve, reject) => {
			c.compact({
				customInstructions: typeof p.customInstructions === "string" ? p.customInstructions : undefined,
				onComplete: (r) =>
					resolve({
						entryId: c.sessionManager.getLeafId() ?? null,
						firstKeptEntryId: r.firstKeptEntryId,
						tokensBefore: r.tokensBefore,
						summary: r.summary,
						queued,
					}),
				onError: (e) => {
					const nothing = /Already compacted|Nothing to compact/.test(e.message);
					reject(new RpcError(nothing ? NOTHING_TO_COMPACT : SUMMARY_FAILED, e.message));
				},
			});
		});
	}

	async function onRequest(method: string, p: Params): Promise<Params> {
		const timeout = typeof p.timeout === "number" && p.timeout > 0 ? p.timeout : 120;
		switch (method) {
			case "pi/live/switchBranch":
				return enqueue(timeout, (c, q) => switchBranch(c, p, q));
			case "pi/live/setLabel":
				return enqueue(timeout, async (c, queued) => {
					entry(c, p.targetId);
					pi.setLabel(p.targetId as string, typeof p.label === "string" && p.label ? p.label : undefined);
					return { entryId: c.sessionManager.getLeafId() ?? null, queued };
				});
			case "pi/live/setSessionName":
				return enqueue(timeout, async (c, queued) => {
					pi.setSessionName(String(p.name ?? ""));
					return { entryId: c.sessionManager.getLeafId() ?? null, queued };
				});
			case "pi/live/compact":
				return enqueue(timeout, (c, q) => compact(c, p, q));
			default:
				throw new RpcError(-32601, `pi-server-live does not offer ${method}`);
		}
	}

	pi.registerCommand(COMMAND, {
		description: "pi-server: carry out an editor's action on this session",
		handler: async (args, c) => {
			const action = actions.get(args.trim());
			if (!action) return;
			actions.delete(args.trim());
			try {
				await c.waitForIdle(); // a prompt may have started since the turn ended
				action.done(await action.run(c));
			} catch (e) {
				action.fail(e);
			}
			update();
		},
	});

	pi.on("session_start", (_event, c) => {
		ctx = c;
		// never awaited: pi starts as fast without a daemon as with one
		link = new Link(initOptions, onRequest, register);
		link.start();
	});
	pi.on("session_shutdown", () => {
		const file = session();
		if (link?.ready && file) link.notify("pi/live/withdraw", { session: file });
		link?.stop();
		link = undefined;
	});
	pi.on("agent_start", (_e, c) => {
		ctx = c;
		streaming = true;
		update();
	});
	pi.on("agent_settled", (_e, c) => {
		ctx = c;
		streaming = false;
		update();
		const waiting = settled;
		settled = [];
		for (const wake of waiting) wake();
	});
	pi.on("session_tree", (event, c) => {
		ctx = c;
		lastTree = event as { summaryEntry?: { id: string } };
		update();
	});
	for (const name of ["message_end", "turn_end", "model_select", "thinking_level_select", "session_compact", "session_info_changed"] as const) {
		pi.on(name, (_e: unknown, c: ExtensionContext) => {
			ctx = c;
			update();
		});
	}
}
