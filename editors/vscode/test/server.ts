// The real pi-server over stdio, driven by a plain JSON-RPC connection (what vscode-languageclient does underneath).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  CancellationTokenSource,
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import type { Connection } from "../src/extension";

export const REPO = path.resolve(__dirname, "..", "..", "..", "..");
export const SAMPLES = path.join(REPO, "pi_server", "samples");
export const PYTHON = process.env.PI_SERVER_PYTHON ?? "python3";

export interface Sandbox {
  root: string;
  sessions: string;
  state: string;
  home: string;
  files: string[];
  dispose(): void;
}

/** A copy of the bundled sample sessions (written by pi's own SessionManager) and an empty state folder. */
export function sandbox(): Sandbox {
  const root = mkdtempSync(path.join(tmpdir(), "pi-vscode-"));
  const sessions = path.join(root, "sessions");
  cpSync(SAMPLES, sessions, { recursive: true });
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = path.join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith(".jsonl")) files.push(p);
    }
  };
  walk(sessions);
  return {
    root,
    sessions,
    state: path.join(root, "state"),
    home: path.join(root, "home"),
    files: files.sort(),
    dispose: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The session file whose header names `stem` in its file name. */
export function file(box: Sandbox, stem: string): string {
  const f = box.files.find((p) => path.basename(p).includes(stem));
  if (!f) throw new Error(`no sample ${stem}`);
  return f;
}

export interface Server extends Connection {
  proc: ChildProcess;
  notes: { method: string; params: any }[];
  serverRequests: { method: string; params: any }[];
  waitFor(method: string, pred?: (p: any) => boolean, timeoutMs?: number): Promise<any>;
  notify(method: string, params: object): Promise<void>;
  cancelSource(): CancellationTokenSource;
}

export async function startServer(
  box: Sandbox,
  extraEnv: Record<string, string> = {},
  tools: string[] = [],
  initializationOptions: Record<string, unknown> = {},
): Promise<Server> {
  const env: Record<string, string | undefined> = { ...process.env, HOME: box.home };
  delete env.ANTHROPIC_API_KEY; // unless a test passes one: summaries come from the extractive fallback
  delete env.PI_CODING_AGENT_DIR;
  // the daemon this server's connector starts: a socket folder of this sandbox, gone 5 s after its last client
  env.XDG_RUNTIME_DIR = path.join(box.root, "run");
  mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  env.PI_SERVER_IDLE_EXIT ??= "5";
  Object.assign(env, extraEnv);
  const proc = spawn(PYTHON, ["-m", "pi_server", "--sessions-dir", box.sessions, "--state-dir", box.state], {
    cwd: REPO,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr?.on("data", (d) => (stderr += d));
  const conn: MessageConnection = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const notes: { method: string; params: any }[] = [];
  const serverRequests: { method: string; params: any }[] = [];
  const handlers = new Map<string, ((p: any) => void)[]>();
  const requestHandlers = new Map<string, (p: any, token: any) => Promise<unknown>>();
  conn.onNotification((method: string, params: any) => {
    notes.push({ method, params });
    for (const h of handlers.get(method) ?? []) h(params);
  });
  conn.onRequest((method: string, params: any, token: any) => {
    serverRequests.push({ method, params });
    const h = requestHandlers.get(method);
    return h ? h(params, token) : null;
  });
  conn.listen();
  const exited = new Promise<never>((_, reject) =>
    proc.on("exit", (code) => reject(new Error(`pi-server exited (${code}) during start: ${stderr.slice(-2000)}`))),
  );
  exited.catch(() => {});
  const init: any = await Promise.race([
    conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: { window: { workDoneProgress: true }, ...(tools.length ? { experimental: { piTools: { tools } } } : {}) },
      initializationOptions,
    }),
    exited,
  ]);
  if (init?.capabilities?.experimental?.piSessions?.protocolVersion !== 1) throw new Error("not a pi-server");
  await conn.sendNotification("initialized", {});
  const server: Server = {
    proc,
    notes,
    serverRequests,
    // a trailing undefined would be sent as a second positional parameter
    request: (method, params, token) => (token ? conn.sendRequest(method, params, token as any) : conn.sendRequest(method, params)),
    onNotification(method, handler) {
      const list = handlers.get(method) ?? [];
      list.push(handler);
      handlers.set(method, list);
      return { dispose: () => handlers.set(method, (handlers.get(method) ?? []).filter((h) => h !== handler)) };
    },
    onRequest(method, handler) {
      requestHandlers.set(method, handler);
      return { dispose: () => requestHandlers.delete(method) };
    },
    async waitFor(method, pred = () => true, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const hit = notes.find((n) => n.method === method && pred(n.params));
        if (hit) return hit.params;
        if (Date.now() > end) throw new Error(`no ${method} within ${timeoutMs} ms; got ${notes.map((n) => n.method).join(", ")}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    notify: (method, params) => conn.sendNotification(method, params),
    cancelSource: () => new CancellationTokenSource(),
    async stop() {
      try {
        await Promise.race([conn.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 2000))]);
        await conn.sendNotification("exit");
      } catch {
        // already gone
      }
      conn.dispose();
      await new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        const t = setTimeout(() => proc.kill("SIGKILL"), 3000);
        proc.on("exit", () => {
          clearTimeout(t);
          resolve();
        });
      });
    },
  };
  return server;
}

/** What the command line answers for the same question: `pi-server tree|context … --json`. */
export function cli(box: Sandbox, args: string[]): any {
  const out = execFileSync(PYTHON, ["-m", "pi_server", ...args, "--sessions-dir", box.sessions], {
    cwd: REPO,
    env: { ...process.env, HOME: box.home },
    encoding: "utf8",
  });
  return args.includes("--json") ? JSON.parse(out) : out;
}

export async function until(pred: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
