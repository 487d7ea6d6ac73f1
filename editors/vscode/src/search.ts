// "Search All Sessions…": a quick pick asking pi/search as the user types; a chosen hit opens its entry.
import type * as vscode from "vscode";
import { oneLine } from "./format";
import { errorMessage, type Rpc, type SearchHit, type SearchResult } from "./protocol";
import * as api from "./vscodeapi";

export const LIMIT = 50;
const DEBOUNCE_MS = 150;
const PENDING_RETRY_MS = 1000; // while the index is still being built, the same query is asked again
const STARTING_MS = 3000; // how long an index that knows no file yet is given to list the store
const BEFORE_MATCH = 40; // characters of context kept before the first match
const TITLE = "Search all sessions";

const ROLE_ICONS: Record<string, string> = { user: "account", assistant: "sparkle", toolResult: "tools", bashExecution: "terminal" };

export interface HitItem extends vscode.QuickPickItem {
  hit?: SearchHit;
}

/** "2026-11-30 09:02" in local time. */
function when(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** The snippet on one line, starting a little before its first match so the match is in view. */
export function snippetLine(hit: SearchHit): string {
  const first = hit.ranges.length ? Math.min(...hit.ranges.map((r) => r[0])) : 0;
  const from = Math.max(0, first - BEFORE_MATCH);
  const text = hit.snippet.slice(from);
  return oneLine(from > 0 ? `…${text}` : text, 400);
}

/**
 * A hit as a quick pick row: the time and kind as the label, the session as the description and the
 * snippet as the detail, where the editor highlights what the typed words match. The label holds no
 * message text, so the editor's own sort (by label match) keeps the server's order: newest first.
 */
export function hitItem(hit: SearchHit): HitItem {
  const icon = (hit.role && ROLE_ICONS[hit.role]) ?? "note";
  return {
    label: `$(${icon}) ${when(hit.timestamp)}`,
    description: oneLine(hit.sessionName || hit.firstMessage, 80),
    detail: snippetLine(hit),
    alwaysShow: true, // the server decided what matches; the editor's filter must not hide it
    hit,
  };
}

/** Shows the picker; resolves after a chosen hit was opened with `open`, or when it is dismissed. */
export function searchAll(rpc: Rpc, open: (hit: SearchHit) => Promise<void>): Promise<void> {
  const qp = api.createQuickPick<HitItem>();
  qp.title = TITLE;
  qp.placeholder = 'Words, "an exact phrase" or re:pattern, in every message of every session';
  qp.matchOnDescription = false;
  qp.matchOnDetail = true;
  let current: vscode.CancellationTokenSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  const opened = Date.now();

  const ask = async (query: string): Promise<void> => {
    current?.cancel();
    const source = (current = new api.CancellationTokenSource());
    if (!query.trim()) {
      qp.items = [];
      qp.title = TITLE;
      qp.busy = false;
      return;
    }
    qp.busy = true;
    try {
      const res = await rpc.request<SearchResult>("pi/search", { query, limit: LIMIT }, source.token);
      if (source !== current) return; // the user typed on: a newer query owns the picker
      qp.items = res.hits.map(hitItem);
      qp.title = resultTitle(res);
      // a server's index starts with its first search: nothing indexed nor pending yet is a store still being listed
      if (res.pendingFiles || (!res.indexedFiles && Date.now() - opened < STARTING_MS)) schedule(PENDING_RETRY_MS);
    } catch (err) {
      if (source !== current || (err as { code?: number })?.code === -32800) return;
      qp.items = [{ label: `$(error) ${errorMessage(err)}`, alwaysShow: true }];
      qp.title = TITLE;
    } finally {
      if (source === current) qp.busy = false;
    }
  };
  const schedule = (ms: number) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void ask(qp.value);
    }, ms);
  };

  return new Promise<void>((resolve, reject) => {
    let opening: Promise<void> | undefined;
    qp.onDidChangeValue(() => schedule(DEBOUNCE_MS));
    qp.onDidAccept(() => {
      const hit = qp.selectedItems[0]?.hit ?? qp.activeItems[0]?.hit;
      if (!hit) return;
      opening = open(hit);
      qp.hide();
    });
    qp.onDidHide(() => {
      if (timer) clearTimeout(timer);
      current?.cancel();
      qp.dispose();
      (opening ?? Promise.resolve()).then(resolve, reject);
    });
    qp.show();
  });
}

/** The picker's title for a result: hits shown of the total (`+`: counting stopped, there may
 * be more), and whether indexing goes on or the search ran out of time. */
export function resultTitle(res: SearchResult): string {
  const pending =
    (res.pendingFiles ? ` · indexing, ${res.pendingFiles} files to go` : "") + (res.incomplete ? " · incomplete: ran out of time" : "");
  const hits = res.total === 1 && !res.totalAtLeast ? "hit" : "hits";
  return `${TITLE}: ${res.total === 0 ? "no hits" : `${res.hits.length} of ${res.total}${res.totalAtLeast ? "+" : ""} ${hits}`}${pending}`;
}
