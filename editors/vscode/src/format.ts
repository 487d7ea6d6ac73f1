// Pure text helpers: how sessions and rows read in the views.
import type { Gutter, LiveInfo, SessionInfo, TreeResult, TreeRow } from "./protocol";

const UNITS: [number, string][] = [
  [60, "s"],
  [60, "m"],
  [24, "h"],
  [7, "d"],
  [4.35, "w"],
  [12, "mo"],
  [Number.POSITIVE_INFINITY, "y"],
];

/** "just now", "5m ago", "3d ago": how long before `now` the ISO time `iso` was. */
export function relativeTime(iso: string, now: number = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  let v = Math.max(0, (now - t) / 1000);
  if (v < 45) return "just now";
  for (const [size, unit] of UNITS) {
    if (v < size) return `${Math.floor(v)}${unit} ago`;
    v /= size;
  }
  return "";
}

/** One line: the first line, whitespace collapsed, cut at `max` characters with an ellipsis. */
export function oneLine(text: string, max = 80): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A session reads as its name, else its first message (as pi's /resume list shows it). */
export function sessionTitle(s: SessionInfo): string {
  if (s.name) return oneLine(s.name);
  if (s.firstMessage) return oneLine(s.firstMessage);
  return "(no messages)";
}

export function sessionDescription(s: SessionInfo, now: number = Date.now()): string {
  const msgs = `${s.messageCount} message${s.messageCount === 1 ? "" : "s"}`;
  return `${relativeTime(s.modified, now)} · ${msgs}`;
}

export const LIVE_MARK = "● live in pi";

/** `● live in pi · streaming`: how a session that a running pi holds is marked. */
export function liveLine(live: LiveInfo): string {
  return `${LIVE_MARK} · ${live.streaming ? "streaming" : "idle"}`;
}

/** pi's pid, whether it streams, its model and thinking level: the mark's tooltip. */
export function liveDetails(live: LiveInfo): string {
  const parts = [`open in pi (pid ${live.pid})`, live.streaming ? "streaming a turn" : "idle"];
  if (live.model) parts.push(live.thinkingLevel ? `${live.model} · thinking ${live.thinkingLevel}` : live.model);
  return parts.join(" · ");
}

/**
 * The bytes of the path a `file:` URI names (no host, or `localhost`), each `%XX` one byte; undefined for
 * anything else. pi-server sends a file whose name is not UTF-8 as such a URI (docs/protocol.md,
 * "Session files"), since no JSON string can carry those bytes.
 */
export function fileUriBytes(session: string): Buffer | undefined {
  const m = /^file:(?:\/\/(?:localhost)?)?(\/[^?#]*)$/i.exec(session);
  if (!m) return undefined;
  const parts = m[1].split(/(%[0-9A-Fa-f]{2})/);
  return Buffer.concat(parts.map((p) => (/^%[0-9A-Fa-f]{2}$/.test(p) ? Buffer.from([parseInt(p.slice(1), 16)]) : Buffer.from(p, "utf8"))));
}

/**
 * A session's file as a person reads it: the listing's `displayPath` when it has one, else the path a
 * `file:` URI names with the bytes that are not UTF-8 shown as U+FFFD (as the server shows them), else the
 * path itself. `session` stays what the server sent: this is for showing only.
 */
export function displayPath(session: string, info?: { displayPath?: string }): string {
  if (info?.displayPath) return info.displayPath;
  const bytes = fileUriBytes(session);
  return bytes ? new TextDecoder("utf-8").decode(bytes) : session;
}

/** The file name of a session's file, as shown. */
export function displayName(session: string, info?: { displayPath?: string }): string {
  const p = displayPath(session, info);
  return p.slice(p.lastIndexOf("/") + 1);
}

/** `~/src/app` for a cwd under the home folder. */
export function shortPath(path: string, home: string | undefined): string {
  if (home && (path === home || path.startsWith(`${home}/`))) return `~${path.slice(home.length)}`;
  return path;
}

/** The row as pi's /tree writes it after the prefix: `[label] title`. */
export function rowText(row: TreeRow): string {
  return row.label ? `[${row.label}] ${row.title}` : row.title;
}

/**
 * A `sharedGutters` answer back in the per-row form (docs/protocol.md, `pi/getTree`): each
 * node's list is its `up`'s plus itself, built once and shared by the rows that use it.
 */
export function expandGutters(res: TreeResult): TreeResult {
  const nodes = res.gutterNodes;
  if (!nodes) return res;
  const lists: Gutter[][] = [];
  for (const [position, show, up] of nodes) lists.push([...(up >= 0 ? lists[up] : []), { position, show }]);
  for (const row of res.rows) {
    const g = row.gutter ?? -1;
    row.gutters = g >= 0 ? lists[g] : [];
    delete row.gutter;
  }
  delete res.gutterNodes;
  return res;
}

/** The gutter and connector characters pi draws before a row (docs/protocol.md, `pi/getTree`). */
export function rowPrefix(row: TreeRow): string {
  const gut = new Map(row.gutters.map((g) => [g.position, g.show]));
  let out = "";
  for (let level = 0; level < row.indent; level++) {
    const g = gut.get(level);
    if (g !== undefined) out += g ? "│  " : "   ";
    else if (row.connector && level === row.indent - 1)
      out += `${row.connector[0]}${row.folded ? "⊞" : row.foldable ? "⊟" : "─"} `;
    else out += "   ";
  }
  if (row.folded && !row.connector) out += "⊞ ";
  return out;
}

/** The whole line pi's /tree shows for a row, without colours. */
export function rowLine(row: TreeRow): string {
  return `${rowPrefix(row)}${row.onActivePath ? "• " : ""}${rowText(row)}`;
}

/** Tool rows (results and `[read: …]` calls) are the ones pi dims. */
export function isToolRow(row: TreeRow): boolean {
  return row.role === "toolResult" || (row.role === "assistant" && row.title.startsWith("["));
}

/** The text blocks of a message's content (a string, or pi's content blocks), joined. */
export function contentText(content: unknown, sep = ""): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b) => b?.type === "text")
    .map((b) => b.text ?? "")
    .join(sep);
}
