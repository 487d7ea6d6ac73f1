// The branch's tokens and cost (pi/getSessionStats: pi 1.6.0's get_session_stats, plus `branch` for root → leaf)
// as the Tree view's description shows them and as the Show Branch Stats message says them.
import type { Rpc } from "./protocol";

export interface Stats {
  userMessages: number;
  assistantMessages: number;
  toolCalls: number;
  toolResults: number;
  totalMessages: number;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  cost: number;
  contextUsage?: { tokens: number | null; contextWindow: number; percent: number | null };
}

export interface SessionStats extends Stats {
  branch: Stats;
}

/** The stats at the session's leaf; undefined from a server without the method (MethodNotFound). */
export async function fetchStats(rpc: Rpc, session: string, leafId?: string): Promise<SessionStats | undefined> {
  const params: Record<string, unknown> = { session };
  if (leafId !== undefined) params.leafId = leafId;
  try {
    return await rpc.request<SessionStats>("pi/getSessionStats", params);
  } catch (err) {
    if ((err as { code?: number })?.code === -32601) return undefined;
    throw err;
  }
}

/** 950, 12.3k, 1.2M */
export function compactNumber(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function dollars(cost: number): string {
  return `$${cost.toFixed(cost > 0 && cost < 0.01 ? 4 : 2)}`;
}

/** "12.3k tokens · $0.42 · 45% of 200k": the tokens and cost of the branch, and the context use at the leaf. */
export function statsLine(s: Stats): string {
  const parts = [`${compactNumber(s.tokens.total)} tokens`, dollars(s.cost)];
  const u = s.contextUsage;
  if (u && u.percent !== null) parts.push(`${Math.round(u.percent)}% of ${compactNumber(u.contextWindow)}`);
  return parts.join(" · ");
}

function detail(s: Stats): string {
  const t = s.tokens;
  return (
    `${s.totalMessages} messages (${s.userMessages} user, ${s.assistantMessages} assistant, ${s.toolResults} tool results), ${s.toolCalls} tool calls; ` +
    `${t.total.toLocaleString("en-US")} tokens (${t.input.toLocaleString("en-US")} in, ${t.output.toLocaleString("en-US")} out, ` +
    `${t.cacheRead.toLocaleString("en-US")} cache read, ${t.cacheWrite.toLocaleString("en-US")} cache write), ${dollars(s.cost)}`
  );
}

/** The message of Show Branch Stats: the branch, the context at its leaf, and the whole file. */
export function statsMessage(s: SessionStats): string {
  const u = s.branch.contextUsage;
  const context =
    u && u.tokens !== null && u.percent !== null
      ? ` Context at the leaf: ${u.tokens.toLocaleString("en-US")} of ${u.contextWindow.toLocaleString("en-US")} tokens (${u.percent.toFixed(1)}%).`
      : "";
  return `This branch: ${detail(s.branch)}.${context} Whole session: ${detail(s)}.`;
}
