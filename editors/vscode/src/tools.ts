// The tools pi-server asks the editor to run (`pi/executeTool`): edit, write and bash, in pi's argument and
// result shapes, each after the user allows it.
import { spawn } from "node:child_process";
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import * as path from "node:path";

export const EDITOR_TOOLS = ["edit", "write", "bash"] as const;
export type EditorTool = (typeof EDITOR_TOOLS)[number];
export type ToolPolicy = "ask" | "allow" | "off";

export interface ToolRequest {
  session: string;
  toolCallId: string;
  name: string;
  arguments: any;
}

export interface ToolResult {
  content: { type: "text"; text: string }[];
  details?: unknown;
  isError?: boolean;
}

const MAX_LINES = 2000;
const MAX_BYTES = 50 * 1024;

const text = (t: string, isError = false, details?: unknown): ToolResult => ({
  content: [{ type: "text", text: t }],
  ...(details === undefined ? {} : { details }),
  ...(isError ? { isError: true } : {}),
});

/** Resolves a tool path as pi does (relative to the cwd, `~` and a leading `@` expanded) and keeps it inside the cwd. */
export async function resolveInside(cwd: string, p: string, home: string): Promise<string> {
  let q = p.startsWith("@") ? p.slice(1) : p;
  if (q === "~" || q.startsWith("~/")) q = path.join(home, q.slice(1));
  const abs = path.resolve(cwd, q);
  const root = await realpath(cwd);
  // the nearest existing ancestor decides where a new file would really land
  let probe = abs;
  let real: string | undefined;
  for (;;) {
    try {
      real = path.join(await realpath(probe), path.relative(probe, abs));
      break;
    } catch {
      const up = path.dirname(probe);
      if (up === probe) break;
      probe = up;
    }
  }
  const rel = path.relative(root, real ?? abs);
  if (rel.startsWith("..") || path.isAbsolute(rel)) throw new Error(`Path is outside the session's working directory: ${p}`);
  return abs;
}

export async function runTool(req: ToolRequest, cwd: string, home: string, signal?: AbortSignal): Promise<ToolResult> {
  try {
    switch (req.name) {
      case "write":
        return await write(req.arguments, cwd, home);
      case "edit":
        return await edit(req.arguments, cwd, home);
      case "bash":
        return await bash(req.arguments, cwd, signal);
      default:
        return text(`Tool ${req.name} not found`, true);
    }
  } catch (err) {
    return text(err instanceof Error ? err.message : String(err), true);
  }
}

async function write(args: { path: string; content: string }, cwd: string, home: string): Promise<ToolResult> {
  const abs = await resolveInside(cwd, args.path, home);
  await mkdir(path.dirname(abs), { recursive: true });
  await writeFile(abs, args.content, "utf8");
  return text(`Successfully wrote ${args.content.length} bytes to ${args.path}`);
}

async function edit(args: { path: string; edits: { oldText: string; newText: string }[] }, cwd: string, home: string): Promise<ToolResult> {
  const abs = await resolveInside(cwd, args.path, home);
  let raw: string;
  try {
    raw = await readFile(abs, "utf8");
  } catch (err) {
    throw new Error(`Could not edit file: ${args.path}. Error code: ${(err as { code?: string }).code ?? "unknown"}.`);
  }
  const bom = raw.startsWith("\uFEFF") ? "\uFEFF" : "";
  const body = raw.slice(bom.length);
  const crlf = body.includes("\r\n");
  const lf = body.replace(/\r\n/g, "\n");
  const edits = Array.isArray(args.edits) ? args.edits : [];
  if (!edits.length) throw new Error("No edits given.");
  // every oldText must match exactly once in the original file, and edits must not overlap
  const spans = edits.map((e, i) => {
    const old = e.oldText.replace(/\r\n/g, "\n");
    const at = lf.indexOf(old);
    if (!old || at === -1) throw new Error(`Could not find edits[${i}] in ${args.path}. The oldText must match exactly including all whitespace and newlines.`);
    if (lf.indexOf(old, at + 1) !== -1) throw new Error(`Found multiple occurrences of edits[${i}] in ${args.path}. Each oldText must be unique.`);
    return { at, end: at + old.length, text: e.newText.replace(/\r\n/g, "\n") };
  });
  spans.sort((a, b) => a.at - b.at);
  for (let i = 1; i < spans.length; i++) if (spans[i].at < spans[i - 1].end) throw new Error(`Edits overlap in ${args.path}.`);
  let out = "";
  let pos = 0;
  for (const s of spans) {
    out += lf.slice(pos, s.at) + s.text;
    pos = s.end;
  }
  out += lf.slice(pos);
  await writeFile(abs, bom + (crlf ? out.replace(/\n/g, "\r\n") : out), "utf8");
  const firstChangedLine = lf.slice(0, spans[0].at).split("\n").length;
  return text(`Successfully replaced ${edits.length} block(s) in ${args.path}.`, false, { firstChangedLine });
}

/** The tail of the output pi keeps: at most 2,000 lines and 50 KB. */
export function tail(output: string): { text: string; truncated: boolean } {
  let lines = output.split("\n");
  let truncated = false;
  if (lines.length > MAX_LINES) {
    lines = lines.slice(-MAX_LINES);
    truncated = true;
  }
  let t = lines.join("\n");
  while (Buffer.byteLength(t) > MAX_BYTES) {
    t = t.slice(t.indexOf("\n") + 1 || 1);
    truncated = true;
  }
  return { text: t, truncated };
}

function bash(args: { command: string; timeout?: number }, cwd: string, signal?: AbortSignal): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", args.command], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    let status: string | undefined;
    const kill = (why: string) => {
      status = why;
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer = args.timeout ? setTimeout(() => kill(`Command timed out after ${args.timeout} seconds`), args.timeout * 1000) : undefined;
    const onAbort = () => kill("Command aborted");
    signal?.addEventListener("abort", onAbort, { once: true });
    const finish = (code: number | null, error?: Error) => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      const { text: shown, truncated } = tail(out.replace(/\n$/, ""));
      const body = truncated ? `${shown}\n\n[Output truncated to the last ${MAX_LINES} lines / 50KB]` : shown;
      const append = (s: string) => `${body ? `${body}\n\n` : ""}${s}`;
      if (error) resolve(text(append(error.message), true));
      else if (status) resolve(text(append(status), true));
      else if (code !== 0 && code !== null) resolve(text(append(`Command exited with code ${code}`), true));
      else resolve(text(body || "(no output)"));
    };
    child.on("error", (err) => finish(null, err));
    child.on("close", (code) => finish(code));
  });
}

/** One line saying what the tool would do, for the user's yes/no. */
export function describe(req: ToolRequest): string {
  const a = req.arguments ?? {};
  if (req.name === "bash") return `run \`${String(a.command ?? "").slice(0, 200)}\``;
  if (req.name === "write") return `write ${String(a.content ?? "").length} bytes to ${a.path}`;
  if (req.name === "edit") return `edit ${a.path} (${Array.isArray(a.edits) ? a.edits.length : 0} block(s))`;
  return `use ${req.name}`;
}
