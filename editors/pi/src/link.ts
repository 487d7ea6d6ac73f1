// The connection to the user's pi-server daemon: a connector process (`pi-server --stdio`, or
// $PI_SERVER_COMMAND) spoken to in LSP framing over its stdio. It never throws at pi: without
// pi-server, or while the daemon restarts, it retries in the background with a backoff, and
// `onReady` runs again after every (re)connection so the caller can register anew.
import { type ChildProcess, spawn } from "node:child_process";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Params = { [key: string]: Json };
export type RequestHandler = (method: string, params: Params) => Promise<Json>;

/** An error answer with the contract's code (docs/protocol.md "Errors"). */
export class RpcError extends Error {
	constructor(
		readonly code: number,
		message: string,
	) {
		super(message);
	}
}

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;
// what pi sets in its own environment: not the user's configuration, so not the daemon's key
const PI_OWN_ENV = ["PI_CODING_AGENT", "AI_AGENT", "PI_SERVER_COMMAND"];

export function serverCommand(env: NodeJS.ProcessEnv = process.env): string[] {
	const raw = env.PI_SERVER_COMMAND?.trim();
	if (!raw) return ["pi-server", "--stdio"];
	if (raw.startsWith("[")) {
		try {
			const argv = JSON.parse(raw);
			if (Array.isArray(argv) && argv.length > 0 && argv.every((a) => typeof a === "string")) return argv;
		} catch {
			// not JSON: taken as words below
		}
	}
	return raw.split(/\s+/);
}

export class Link {
	private child: ChildProcess | undefined;
	private buffer = Buffer.alloc(0);
	private nextId = 1;
	private pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
	private retryMs = FIRST_RETRY_MS;
	private timer: NodeJS.Timeout | undefined;
	private stopped = false;
	ready = false;

	constructor(
		private readonly initOptions: () => Params,
		private readonly onRequest: RequestHandler,
		private readonly onReady: () => void,
	) {}

	start(): void {
		if (this.child || this.timer || this.stopped) return;
		const [cmd, ...args] = serverCommand();
		const env = { ...process.env };
		for (const k of PI_OWN_ENV) delete env[k];
		let child: ChildProcess;
		try {
			child = spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"], env });
		} catch {
			this.retry();
			return;
		}
		this.child = child;
		this.buffer = Buffer.alloc(0);
		child.on("error", () => this.lost(child)); // no pi-server installed: retried quietly
		child.on("exit", () => this.lost(child));
		child.stdin?.on("error", () => this.lost(child));
		child.stdout?.on("data", (chunk: Buffer) => this.received(chunk));
		child.unref(); // pi exits when it is done, whatever the connection is doing
		for (const s of [child.stdin, child.stdout]) (s as unknown as { unref?: () => void })?.unref?.();
		this.request("initialize", {
			processId: process.pid,
			rootUri: null,
			capabilities: {},
			clientInfo: { name: "pi-server-live", version: "0.1.0" },
			initializationOptions: this.initOptions(),
		})
			.then(() => {
				this.notify("initialized", {});
				this.ready = true;
				this.retryMs = FIRST_RETRY_MS;
				this.onReady();
			})
			.catch(() => this.lost(child));
	}

	stop(): void {
		this.stopped = true;
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
		const child = this.child;
		this.child = undefined;
		this.ready = false;
		if (child) {
			this.send({ jsonrpc: "2.0", method: "exit" }, child);
			child.stdin?.end();
		}
		this.failPending();
	}

	request(method: string, params: Params): Promise<Json> {
		const id = this.nextId++;
		return new Promise((resolve, reject) => {
			if (!this.child) return reject(new Error("not connected"));
			this.pending.set(id, { resolve, reject });
			this.send({ jsonrpc: "2.0", id, method, params });
		});
	}

	notify(method: string, params: Params): void {
		if (this.child) this.send({ jsonrpc: "2.0", method, params });
	}

	private send(msg: { [key: string]: Json | undefined }, child = this.child): void {
		const body = Buffer.from(JSON.stringify(msg), "utf8");
		try {
			child?.stdin?.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "ascii"), body]));
		} catch {
			// the connector is gone: its exit handler reconnects
		}
	}

	private received(chunk: Buffer): void {
		this.buffer = Buffer.concat([this.buffer, chunk]);
		for (;;) {
			const end = this.buffer.indexOf("\r\n\r\n");
			if (end < 0) return;
			const m = /content-length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString("ascii"));
			if (!m) {
				this.buffer = this.buffer.subarray(end + 4); // not a header we know: skipped
				continue;
			}
			const len = Number(m[1]);
			if (this.buffer.length < end + 4 + len) return;
			const body = this.buffer.subarray(end + 4, end + 4 + len).toString("utf8");
			this.buffer = this.buffer.subarray(end + 4 + len);
			try {
				this.dispatch(JSON.parse(body));
			} catch {
				// a message we cannot read is dropped, never pi's problem
			}
		}
	}

	private dispatch(msg: { id?: number | string; method?: string; params?: Params; result?: Json; error?: { message?: string; code?: number } }): void {
		if (msg.method === undefined) {
			const waiting = this.pending.get(msg.id as number);
			if (!waiting) return;
			this.pending.delete(msg.id as number);
			if (msg.error) waiting.reject(new RpcError(msg.error.code ?? -32603, msg.error.message ?? "error"));
			else waiting.resolve(msg.result ?? null);
			return;
		}
		if (msg.id === undefined) return; // the daemon's notifications are for editors
		const id = msg.id;
		this.onRequest(msg.method, msg.params ?? {}).then(
			(result) => this.send({ jsonrpc: "2.0", id, result }),
			(e: unknown) => {
				const code = e instanceof RpcError ? e.code : -32603;
				const message = e instanceof Error ? e.message : String(e);
				this.send({ jsonrpc: "2.0", id, error: { code, message } });
			},
		);
	}

	private lost(child: ChildProcess): void {
		if (this.child !== child) return;
		this.child = undefined;
		this.ready = false;
		this.failPending();
		this.retry();
	}

	private failPending(): void {
		for (const w of this.pending.values()) w.reject(new Error("connection closed"));
		this.pending.clear();
	}

	private retry(): void {
		if (this.stopped || this.timer) return;
		const wait = this.retryMs;
		this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
		this.timer = setTimeout(() => {
			this.timer = undefined;
			this.start();
		}, wait);
		this.timer.unref();
	}
}
