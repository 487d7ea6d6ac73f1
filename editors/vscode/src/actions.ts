// What each command asks the user and sends the server. No vscode here: the prompts go through `Ui`,
// so the flows run the same in the editor and in tests against a real server.
import { contentText, oneLine } from "./format";
import type {
  Cancel,
  CompactResult,
  ContextFormat,
  ContextResult,
  Rpc,
  SwitchResult,
  TreeRow,
} from "./protocol";

export interface Choice<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export interface Ui {
  pick<T>(items: Choice<T>[], opts: { title: string; placeholder?: string }): Promise<T | undefined>;
  input(opts: { title: string; prompt?: string; value?: string; placeholder?: string }): Promise<string | undefined>;
  info(message: string): void;
  /** Runs a long request with a cancellable progress indicator. */
  progress<R>(title: string, task: (token: Cancel) => Promise<R>): Promise<R>;
  copy(text: string): Promise<void>;
  /** Opens text in a new editor: a summary to read. */
  showText(text: string, language: string): Promise<void>;
  /** Puts a user message's text where it can be sent again (pi puts it in its editor). */
  resubmit(text: string): Promise<void>;
  /** Shows another session in the Tree view (after a fork). */
  openSession(session: string): Promise<void>;
}

type Next = "continue" | "fork";
type Summary = "none" | "summarize" | "instructions";

/** Rows that put their text back in the editor when chosen, as in pi's /tree. */
function resubmits(row: TreeRow): boolean {
  return row.type === "message" ? row.role === "user" : row.type === "custom_message";
}

/** The one two-step choice on an entry: continue here (with or without a summary) or fork. */
export async function continueAt(rpc: Rpc, ui: Ui, session: string, row: TreeRow): Promise<SwitchResult | string | undefined> {
  const where = oneLine(row.title, 60);
  const next = await ui.pick<Next>(
    [
      {
        label: "$(debug-step-into) Continue here in this session",
        description: resubmits(row) ? "the message comes back for editing" : undefined,
        value: "continue",
      },
      { label: "$(repo-forked) Fork into a new session", description: "a new file with the path up to here", value: "fork" },
    ],
    { title: `pi: ${where}`, placeholder: "Continue from this entry" },
  );
  if (next === undefined) return undefined;
  if (next === "fork") return fork(rpc, ui, session, row);
  const how = await ui.pick<Summary>(
    [
      { label: "No summary", value: "none" },
      { label: "Summarize the branch you leave", value: "summarize" },
      { label: "Summarize with instructions…", value: "instructions" },
    ],
    { title: `pi: continue at ${where}`, placeholder: "Summarize the abandoned branch?" },
  );
  if (how === undefined) return undefined;
  let customInstructions: string | undefined;
  if (how === "instructions") {
    customInstructions = await ui.input({ title: "Summary instructions", prompt: "What the summary should focus on" });
    if (customInstructions === undefined) return undefined;
  }
  const params: Record<string, unknown> = { session, targetId: row.id };
  if (how !== "none") params.summarize = true;
  if (customInstructions) params.customInstructions = customInstructions;
  const res =
    how === "none"
      ? await rpc.request<SwitchResult>("pi/switchBranch", params)
      : await ui.progress("Summarizing the branch…", (token) => rpc.request<SwitchResult>("pi/switchBranch", params, token));
  if (res.editorText !== undefined) await ui.resubmit(res.editorText);
  if (res.queued) ui.info("pi is mid-turn in this session: the switch is queued and lands when the turn ends.");
  return res;
}

/** A new session holding the path to the row (to its parent for a user message, whose text comes back). */
export async function fork(rpc: Rpc, ui: Ui, session: string, row: TreeRow): Promise<string> {
  const atParent = resubmits(row) && row.parentId !== null;
  const leafId = atParent ? (row.parentId as string) : row.id;
  const res = await rpc.request<{ session: string }>("pi/fork", { session, leafId });
  await ui.openSession(res.session);
  if (atParent) {
    const { entry } = await rpc.request<{ entry: any }>("pi/getEntry", { session, id: row.id });
    await ui.resubmit(messageText(entry));
  }
  return res.session;
}

function messageText(entry: any): string {
  return contentText(entry?.message?.content ?? entry?.content, "\n");
}

export async function setLabel(rpc: Rpc, ui: Ui, session: string, row: TreeRow): Promise<{ entryId: string; queued: boolean } | undefined> {
  const label = await ui.input({
    title: `Label for ${oneLine(row.title, 50)}`,
    prompt: "Empty clears the label",
    value: row.label ?? "",
  });
  if (label === undefined) return undefined;
  return labelRequest(rpc, ui, session, row, label.trim() || null);
}

export function clearLabel(rpc: Rpc, ui: Ui, session: string, row: TreeRow) {
  return labelRequest(rpc, ui, session, row, null);
}

async function labelRequest(rpc: Rpc, ui: Ui, session: string, row: TreeRow, label: string | null) {
  const res = await rpc.request<{ entryId: string; queued: boolean }>("pi/setLabel", { session, targetId: row.id, label });
  if (res.queued) ui.info("pi is mid-turn in this session: the label is queued.");
  return res;
}

export async function rename(rpc: Rpc, ui: Ui, session: string, current: string | undefined) {
  const name = await ui.input({ title: "Session name", value: current ?? "", prompt: "Shown in pi's /resume list" });
  if (name === undefined || !name.trim()) return undefined;
  const res = await rpc.request<{ entryId: string; queued: boolean }>("pi/setSessionName", { session, name: name.trim() });
  if (res.queued) ui.info("pi is mid-turn in this session: the name is queued.");
  return res;
}

/** Makes a switch stick for pi itself: `pi --resume` continues at the row (the current leaf when no row). */
export async function persist(rpc: Rpc, ui: Ui, session: string, targetId: string | null) {
  const res = await rpc.request<SwitchResult>("pi/switchBranch", { session, targetId, persist: true });
  ui.info(res.queued ? "Queued: pi will continue here after its current turn." : "pi will continue here on `pi --resume`.");
  if (res.editorText !== undefined) await ui.resubmit(res.editorText);
  return res;
}

export async function compact(rpc: Rpc, ui: Ui, session: string): Promise<CompactResult | undefined> {
  const instructions = await ui.input({
    title: "Compact session",
    prompt: "Optional instructions for the summary (Enter for none)",
    placeholder: "e.g. keep the API decisions",
  });
  if (instructions === undefined) return undefined;
  const params: Record<string, unknown> = { session };
  if (instructions.trim()) params.customInstructions = instructions.trim();
  const res = await ui.progress("Compacting…", (token) => rpc.request<CompactResult>("pi/compact", params, token));
  const k = Math.round(res.tokensBefore / 1000);
  ui.info(res.queued ? "pi is mid-turn: the compaction is queued." : `Compacted ${k}k tokens into a summary.`);
  return res;
}

export async function summarize(rpc: Rpc, ui: Ui, session: string, row: TreeRow) {
  const res = await ui.progress("Summarizing…", (token) =>
    rpc.request<{ summary: string; source: string }>("pi/summarizeBranch", { session, targetId: row.id }, token),
  );
  await ui.showText(res.summary, "markdown");
  return res;
}

const FORMATS: Choice<ContextFormat>[] = [
  { label: "Agent messages", description: "pi's buildSessionContext", value: "agent" },
  { label: "LLM messages", description: "pi's convertToLlm", value: "llm" },
  { label: "Anthropic request", description: "a Messages API body", value: "anthropic" },
  { label: "OpenAI messages", description: "Chat Completions", value: "openai" },
];

/** The context pi would send at the row (the current leaf when none), as JSON on the clipboard. */
export async function copyContext(rpc: Rpc, ui: Ui, session: string, leafId: string | undefined, format?: ContextFormat) {
  const fmt = format ?? (await ui.pick(FORMATS, { title: "Copy context as" }));
  if (fmt === undefined) return undefined;
  const params: Record<string, unknown> = { session, format: fmt };
  if (leafId !== undefined) params.leafId = leafId;
  const res = await rpc.request<ContextResult & { request?: unknown }>("pi/buildContext", params);
  const text = JSON.stringify(fmt === "anthropic" ? res.request : res.messages, null, 2);
  await ui.copy(text);
  ui.info(`Copied ${res.messages.length} messages (~${res.tokens} tokens) as ${fmt} JSON.`);
  return text;
}

export async function entryJson(rpc: Rpc, session: string, id: string): Promise<string> {
  const { entry } = await rpc.request<{ entry: unknown }>("pi/getEntry", { session, id });
  return `${JSON.stringify(entry, null, 2)}\n`;
}
