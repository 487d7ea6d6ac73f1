// TreeDataProviders: the Sessions and Tree models drawn as VS Code tree items.
import * as os from "node:os";
import type * as vscode from "vscode";
import { type EditState, editable } from "./contextEdits";
import { displayPath, fileUriBytes, isToolRow, liveDetails, liveLine, oneLine, rowLine, rowText, sessionDescription, sessionTitle, shortPath } from "./format";
import type { TreeRow } from "./protocol";
import type { ProjectGroup, SessionNode, SessionsModel } from "./sessionsModel";
import { canFold, type TreeModel } from "./treeModel";
import * as api from "./vscodeapi";

export type SessionsElement = { kind: "group"; group: ProjectGroup } | { kind: "session"; node: SessionNode };

export class SessionsProvider implements vscode.TreeDataProvider<SessionsElement> {
  private readonly changed = new api.EventEmitter<SessionsElement | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  selected: string | undefined;

  constructor(readonly model: SessionsModel) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(el?: SessionsElement): SessionsElement[] {
    if (!el) return this.model.groups.map((group) => ({ kind: "group", group }));
    const nodes = el.kind === "group" ? el.group.sessions : el.node.forks;
    return nodes.map((node) => ({ kind: "session", node }));
  }

  getTreeItem(el: SessionsElement): vscode.TreeItem {
    if (el.kind === "group") {
      const item = new api.TreeItem(shortPath(el.group.cwd, os.homedir()), api.TreeItemCollapsibleState.Expanded);
      item.id = `cwd:${el.group.cwd}`;
      item.iconPath = new api.ThemeIcon("folder");
      item.tooltip = el.group.cwd;
      item.contextValue = "project";
      return item;
    }
    const info = el.node.info;
    const state = el.node.forks.length ? api.TreeItemCollapsibleState.Expanded : api.TreeItemCollapsibleState.None;
    const item = new api.TreeItem(sessionTitle(info), state);
    item.id = `session:${info.session}`;
    // a session a running pi holds reads as such first: its actions go through that pi
    item.description = info.live ? `${liveLine(info.live)} · ${sessionDescription(info)}` : sessionDescription(info);
    item.iconPath = new api.ThemeIcon(
      info.live ? "broadcast" : info.parentSession ? "repo-forked" : "comment-discussion",
      info.session === this.selected ? new api.ThemeColor("charts.green") : undefined,
    );
    const tip = new api.MarkdownString();
    if (info.live) tip.appendMarkdown("**● live**: ").appendText(`${liveDetails(info.live)}\n\n`);
    if (info.name) tip.appendMarkdown(`**${escapeMd(info.name)}**\n\n`);
    tip.appendText(info.firstMessage ? `${info.firstMessage.slice(0, 400)}\n\n` : "");
    tip.appendMarkdown(`${info.messageCount} messages · ${info.entryCount} entries · modified ${new Date(info.modified).toLocaleString()}\n\n`);
    if (info.parentSession) tip.appendMarkdown("forked from ").appendText(`${displayPath(info.parentSession)}\n\n`);
    tip.appendText(displayPath(info.session, info));
    item.tooltip = tip;
    item.contextValue = "session";
    // a name that is not UTF-8 comes as its file: URI, which is already a URI
    item.resourceUri = fileUriBytes(info.session) ? api.Uri.parse(info.session) : api.Uri.file(info.session);
    item.command = { command: "piSessions.openSession", title: "Show Tree", arguments: [info.session] };
    return item;
  }

  getParent(): undefined {
    return undefined;
  }
}

export type TreeElement = { kind: "row"; row: TreeRow } | { kind: "more" };

const ROLE_ICONS: Record<string, string> = {
  user: "account",
  assistant: "sparkle",
  toolResult: "tools",
  bashExecution: "terminal",
  custom: "extensions",
};
const TYPE_ICONS: Record<string, string> = {
  compaction: "fold",
  branch_summary: "git-merge",
  label: "tag",
  model_change: "symbol-property",
  thinking_level_change: "lightbulb",
  session_info: "info",
  custom: "extensions",
  custom_message: "mail",
};

export class TreeProvider implements vscode.TreeDataProvider<TreeElement> {
  private readonly changed = new api.EventEmitter<TreeElement | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private elements = new Map<string, TreeElement>();
  private readonly more: TreeElement = { kind: "more" };
  // VS Code keeps a row's expanded state per TreeItem.id: a new filter or search gets new ids, so rows
  // are drawn as the server nests them, not as they were under another filter
  private shape = "";
  private generation = 0;

  constructor(readonly model: TreeModel) {
    model.onChange(() => {
      this.elements.clear();
      const shape = JSON.stringify([model.session, model.filter, model.search]);
      if (shape !== this.shape) {
        this.shape = shape;
        this.generation++;
      }
      this.changed.fire(undefined);
    });
  }

  /** The row that shows the leaf marker: the leaf, or the shown row it resolves to when a filter hides it (a label entry, say). */
  leafRow(): TreeRow | undefined {
    const m = this.model;
    return (m.leafId ? m.row(m.leafId) : undefined) ?? m.rows.filter((r) => r.onActivePath).at(-1);
  }

  element(row: TreeRow): TreeElement {
    let el = this.elements.get(row.id);
    if (!el || (el.kind === "row" && el.row !== row)) this.elements.set(row.id, (el = { kind: "row", row }));
    return el;
  }

  getChildren(el?: TreeElement): TreeElement[] {
    if (el?.kind === "more") return [];
    const rows = this.model.children(el?.row).map((r) => this.element(r));
    return !el && this.model.hasMore ? [...rows, this.more] : rows;
  }

  getParent(el: TreeElement): TreeElement | undefined {
    if (el.kind === "more") return undefined;
    const p = this.model.parent(el.row);
    return p ? this.element(p) : undefined;
  }

  getTreeItem(el: TreeElement): vscode.TreeItem {
    if (el.kind === "more") {
      const shown = this.model.rows.length;
      const item = new api.TreeItem(`Load ${Math.min(this.model.pageSize, this.model.total - shown)} more…`);
      item.description = `${shown.toLocaleString()} of ${this.model.total.toLocaleString()} rows`;
      item.iconPath = new api.ThemeIcon("ellipsis");
      item.command = { command: "piSessions.loadMore", title: "Load More" };
      item.contextValue = "more";
      return item;
    }
    const row = el.row;
    const state = row.folded
      ? api.TreeItemCollapsibleState.Collapsed
      : canFold(row)
        ? api.TreeItemCollapsibleState.Expanded
        : api.TreeItemCollapsibleState.None;
    // the leaf is marked by its icon and colour, not by a suffix that a narrow side bar would cut
    const isLeaf = row.isLeaf || this.leafRow() === row;
    const text = shownText(row);
    const item = new api.TreeItem({ label: text, highlights: highlights(text, this.model.search) }, state);
    item.id = `${this.model.session}#${this.generation}#${canFold(row) ? "+" : "-"}#${row.id}`;
    const edit = this.model.edits.get(row.id);
    item.description = edit ? EDIT_NOTES[edit] : undefined;
    // read aloud (and by the end-to-end tests): the whole row, however the label is shortened
    item.accessibilityInformation = { label: `${rowText(row)}${isLeaf ? " (leaf)" : ""}`, role: "treeitem" };
    const tool = isToolRow(row);
    const color = isLeaf
      ? new api.ThemeColor("charts.green")
      : row.onActivePath
        ? new api.ThemeColor("charts.blue")
        : tool
          ? new api.ThemeColor("disabledForeground")
          : undefined;
    const icon = isLeaf ? "circle-filled" : edit === "omitted" ? "eye-closed" : ((row.role && ROLE_ICONS[row.role]) ?? TYPE_ICONS[row.type] ?? "circle-outline");
    item.iconPath = new api.ThemeIcon(icon, color);
    const tip = new api.MarkdownString();
    tip.appendCodeblock(rowLine(row), "text");
    if (isLeaf) tip.appendMarkdown("**the leaf**: the conversation continues here\n\n");
    tip.appendMarkdown(`${row.role ? `${row.type} · ${row.role}` : row.type}${row.onActivePath ? " · on the active path" : ""}\n\n`);
    if (isLeaf && !row.isLeaf) tip.appendMarkdown(`the leaf is a hidden entry after this row (\`${this.model.leafId}\`)\n\n`);
    if (edit) tip.appendMarkdown(`${edit === "omitted" ? "left out of the context" : "sent with replaced content"} by a context edit on this path\n\n`);
    if (row.timestamp) tip.appendMarkdown(`${new Date(row.timestamp).toLocaleString()} · `);
    tip.appendMarkdown(`\`${row.id}\``);
    item.tooltip = tip;
    const flags = ["row"];
    if (row.label) flags.push("labeled");
    if (canFold(row)) flags.push("foldable");
    if (isLeaf) flags.push("leaf");
    // edits apply to the path to the leaf only: the server refuses targets elsewhere
    if (row.onActivePath && editable(row) && edit !== "omitted") flags.push("omittable");
    if (edit) flags.push("restorable");
    item.contextValue = flags.join(".");
    item.command = { command: "piSessions.openEntry", title: "Open Entry", arguments: [el] };
    return item;
  }
}

const EDIT_NOTES: Record<EditState, string> = { omitted: "⊘ omitted", replaced: "✎ replaced" };
const LABEL_TEXT = 24; // characters of a label shown in a row

/** `[label] title`, a long label shortened. */
function shownText(row: TreeRow): string {
  return row.label ? `[${oneLine(row.label, LABEL_TEXT)}] ${row.title}` : rowText(row);
}

/** Character ranges of the search words in a label, case-insensitive. */
export function highlights(text: string, search: string): [number, number][] {
  const out: [number, number][] = [];
  const lower = text.toLowerCase();
  for (const word of search.toLowerCase().split(/\s+/).filter(Boolean)) {
    let at = lower.indexOf(word);
    while (at !== -1) {
      out.push([at, at + word.length]);
      at = lower.indexOf(word, at + word.length);
    }
  }
  return out.sort((a, b) => a[0] - b[0]);
}

function escapeMd(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, "\\$&");
}
