// The pi-server methods and shapes this extension uses (docs/protocol.md in the repository).

export type Filter = "default" | "no-tools" | "user-only" | "labeled-only" | "all";
export const FILTERS: readonly Filter[] = ["default", "no-tools", "user-only", "labeled-only", "all"];
export type ContextFormat = "agent" | "llm" | "anthropic" | "openai";

/** A pi that has the session open and runs pi-server's pi extension (docs/protocol.md, live sessions). */
export interface LiveInfo {
  pid: number;
  leafId: string | null;
  streaming: boolean;
  model: string | null;
  thinkingLevel: string | null;
}

export interface SessionInfo {
  session: string;
  id: string;
  cwd: string;
  name?: string;
  parentSession?: string;
  created: string;
  modified: string;
  messageCount: number;
  entryCount: number;
  firstMessage: string;
  leafId: string | null;
  /** Absent when no pi with the extension holds the session. */
  live?: LiveInfo;
  /** With a `session` that is a `file:` URI (a file name that is not UTF-8): the path as shown, U+FFFD for such bytes. */
  displayPath?: string;
}

export interface TreeRow {
  id: string;
  parentId: string | null;
  visibleParentId: string | null;
  type: string;
  role?: string;
  title: string;
  label?: string;
  indent: number;
  connector: "" | "├─" | "└─";
  gutters: Gutter[];
  /** With `sharedGutters`: the index of the row's innermost gutter in `gutterNodes` (-1: none). */
  gutter?: number;
  onActivePath: boolean;
  isLeaf: boolean;
  foldable: boolean;
  folded: boolean;
  childCount: number;
  timestamp?: string;
}

export interface Gutter {
  position: number;
  show: boolean;
}

export interface TreeResult {
  leafId: string | null;
  total: number;
  offset: number;
  rows: TreeRow[];
  /** With `sharedGutters`: `[position, show, up]`, each node's `up` before it (-1: outermost). */
  gutterNodes?: [number, boolean, number][];
  live?: LiveInfo;
}

export interface SwitchResult {
  leafId: string | null;
  editorText?: string;
  summaryEntryId?: string;
  queued: boolean;
}

export interface ContextResult {
  leafId: string | null;
  messages: unknown[];
  entryIds: string[];
  model: unknown;
  thinkingLevel: string;
  tokens: number;
  /** The system prompt and tools in force at the leaf; null when the path has none (files written before pi 1.6.0). */
  system: SystemPrompt | null;
}

export interface ToolDeclaration {
  name: string;
  description?: string;
  parameters?: unknown;
}

export interface SystemPrompt {
  text: string;
  sections: Record<string, string>;
  tools: ToolDeclaration[];
}

/** One of pi/getContextEdits' edits: the latest context_edit in force for its target on the path. */
export interface ContextEdit {
  id: string;
  targetId: string;
  replacement: null | { content: unknown };
  timestamp: string;
  applied: boolean;
}

export interface CompactResult {
  entryId: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  summary: string;
  queued: boolean;
}

/** One pi/search hit: an entry, with a piece of its text and where the match lies in it. */
export interface SearchHit {
  session: string;
  entryId: string;
  type: string;
  role?: string;
  timestamp: string;
  snippet: string;
  /** [start, end) UTF-16 offsets of the matches in `snippet`. */
  ranges: [number, number][];
  sessionName?: string;
  firstMessage: string;
}

export interface SearchResult {
  hits: SearchHit[];
  total: number;
  indexedFiles: number;
  pendingFiles: number;
  /** The search ran past its time budget: what it found. */
  incomplete?: boolean;
  /** `total` counts the matches found before counting stopped: there may be more. */
  totalAtLeast?: boolean;
}

export interface SessionUpdated {
  session: string;
  appended: string[];
  leafId: string | null;
  reset: boolean;
  /** The live pi now, or null when pi let go; absent from a server without live sessions. */
  live?: LiveInfo | null;
}

export interface SessionsChanged {
  added: string[];
  removed: string[];
  changed: string[];
}

/** What the views and actions need of a connection: a language client in VS Code, a plain JSON-RPC connection in tests. */
export interface Cancel {
  readonly isCancellationRequested: boolean;
  onCancellationRequested: (listener: () => unknown) => { dispose(): unknown };
}

export interface Rpc {
  request<R>(method: string, params: object, token?: Cancel): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): { dispose(): unknown };
}

/** A running pi-server: the requests and notifications, and what the editor answers and controls. */
export interface Connection extends Rpc {
  /** Answers a request the server sends (pi/executeTool). */
  onRequest?(method: string, handler: (params: any, token: Cancel) => Promise<unknown>): { dispose(): unknown };
  stop(): Promise<void>;
  restart?(): Promise<void>;
  /** Called each time the server is (re)started and ready. */
  onReady?(listener: () => void): void;
}

/** A JSON-RPC error as the server sends it: `data.kind` names it (SessionNotFound, Busy, …). */
export function errorMessage(err: unknown): string {
  if (err && typeof err === "object" && "message" in err) {
    const e = err as { message: string; data?: { kind?: string } };
    return e.data?.kind ? `${e.message} (${e.data.kind})` : e.message;
  }
  return String(err);
}
