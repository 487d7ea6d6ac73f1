// The two views in the side bar: their tree widgets, titles and messages, and which row or session a
// command acts on.
import type * as vscode from "vscode";
import { openEntry } from "./entryDocs";
import { displayName, liveDetails, liveLine, oneLine, sessionTitle } from "./format";
import type { SessionUpdated, TreeRow } from "./protocol";
import type { SessionsModel } from "./sessionsModel";
import { statsLine, statsMessage } from "./stats";
import type { TreeModel } from "./treeModel";
import { showError } from "./ui";
import { type SessionsElement, SessionsProvider, type TreeElement, TreeProvider } from "./views";
import * as api from "./vscodeapi";

export class Sidebar {
  readonly sessionsView: SessionsProvider;
  readonly treeView: TreeProvider;
  readonly sessionsTv: vscode.TreeView<SessionsElement>;
  readonly treeTv: vscode.TreeView<TreeElement>;
  /** The branch's tokens and cost while a session's tree is shown. */
  readonly statsItem: vscode.StatusBarItem;

  constructor(
    readonly sessions: SessionsModel,
    readonly tree: TreeModel,
    subscriptions: { dispose(): unknown }[],
  ) {
    this.sessionsView = new SessionsProvider(sessions);
    this.treeView = new TreeProvider(tree);
    this.sessionsTv = api.createTreeView("piSessions.sessions", { treeDataProvider: this.sessionsView, showCollapseAll: true });
    this.treeTv = api.createTreeView("piSessions.tree", { treeDataProvider: this.treeView });
    this.statsItem = api.createStatusBarItem("piSessions.stats", "Pi Sessions: branch stats");
    this.statsItem.command = "piSessions.showStats";
    subscriptions.push(this.sessionsTv, this.treeTv, this.statsItem);
    tree.onChange(() => this.describeTree());
    this.describeTree();
    // folding in the widget is pi's fold: the server leaves the folded rows out
    subscriptions.push(
      this.treeTv.onDidCollapseElement((e) => void this.fold(e.element, true)),
      this.treeTv.onDidExpandElement((e) => void this.fold(e.element, false)),
    );
  }

  describeTree(): void {
    const { tree, sessions, treeTv } = this;
    const info = tree.session ? sessions.find(tree.session) : undefined;
    const parts = [info ? oneLine(sessionTitle(info), 40) : tree.session ? displayName(tree.session) : ""];
    if (tree.live) parts.push(liveLine(tree.live));
    if (tree.filter !== "default") parts.push(tree.filter);
    if (tree.search) parts.push(`“${tree.search}”`);
    treeTv.description = parts.filter(Boolean).join(" · ");
    treeTv.message = !tree.session
      ? "Pick a session in the Sessions view."
      : tree.total === 0
        ? tree.search
          ? `No entries match “${tree.search}”.`
          : "No entries under this filter."
        : tree.live
          ? `● ${liveDetails(tree.live)}: branch switches, labels and compaction are done by that pi.`
          : undefined;
    this.describeStats();
    api.setContext("piSessions.treeSearch", !!tree.search);
    api.setContext("piSessions.hasTree", !!tree.session);
  }

  private describeStats(): void {
    const { stats } = this.tree;
    if (!this.tree.session || !stats) {
      this.statsItem.hide();
      return;
    }
    this.statsItem.text = `$(graph) ${statsLine(stats.branch)}`;
    this.statsItem.tooltip = statsMessage(stats);
    this.statsItem.show();
  }

  async reloadSessions(): Promise<void> {
    const { sessions, sessionsTv } = this;
    await sessions.load();
    sessionsTv.description = sessions.query ? `“${sessions.query}”` : undefined;
    sessionsTv.message = sessions.sessions.length
      ? undefined
      : sessions.query
        ? `No sessions match “${sessions.query}”.`
        : "No pi sessions found. Run pi, or set 'piSessions.sessionDirs'.";
    api.setContext("piSessions.sessionSearch", !!sessions.query);
    this.sessionsView.refresh();
    this.describeTree();
  }

  async openSession(session: string | undefined): Promise<void> {
    this.sessionsView.selected = session;
    this.sessionsView.refresh();
    await this.tree.open(session);
    await this.revealLeaf();
  }

  /**
   * pi took, changed or let go of a session (pi/sessionUpdated's `live`): its marks change now, ahead of the
   * reloads. True when pi moved the shown tree's leaf: no burst of appends to wait for, so the tree follows at once.
   */
  markLive(p: SessionUpdated): boolean {
    const { sessions, tree } = this;
    if (p.live !== undefined) {
      if (sessions.setLive(p.session, p.live)) this.sessionsView.refresh();
      if (p.session === tree.session) tree.setLive(p.live);
    }
    const leaf = p.live ? p.live.leafId : p.leafId;
    return p.session === tree.session && leaf !== tree.leafId && !p.appended.length;
  }

  /** Shows the tree at pi's new leaf, the selection on it. */
  async followLeaf(): Promise<void> {
    try {
      await this.tree.reload();
      await this.revealLeaf();
    } catch (err) {
      showError(err);
    }
  }

  /** Opens `session` with the row of entry `id` revealed and selected (under filter `all` when the filter
   * shown hides it, as it hides labels and session names; a tool call's result row stands for the call,
   * which has none) and the entry itself shown. */
  async revealEntry(session: string, id: string): Promise<void> {
    this.sessionsView.selected = session;
    this.sessionsView.refresh();
    await this.tree.open(session);
    // pi draws no row for a tool call: the row of its result (a child) stands for it
    const standIn = () => this.tree.rows.find((r) => r.parentId === id);
    let row = (await this.tree.find(id)) ?? standIn();
    if (!row && this.tree.filter !== "all") {
      await this.tree.setFilter("all");
      row = (await this.tree.find(id)) ?? standIn();
    }
    if (!row) throw new Error(`Entry ${id} is no longer in ${displayName(session, this.sessions.find(session))}.`);
    await this.treeTv.reveal(this.treeView.element(row), { select: true, focus: true, expand: true });
    await openEntry(session, id);
  }

  /** Selects the leaf, or where pi's /tree puts the cursor when a filter hides it: its nearest shown ancestor. */
  async revealLeaf(): Promise<void> {
    const leaf = this.treeView.leafRow();
    if (leaf && this.treeTv.visible) await this.treeTv.reveal(this.treeView.element(leaf), { select: true, focus: false });
  }

  // --- arguments: a context-menu element, else the selection, else the current session

  rowOf(arg: unknown): TreeRow {
    const el = (arg as TreeElement | undefined) ?? this.treeTv.selection[0];
    if (el?.kind === "row") return el.row;
    throw new Error("Select an entry in the Tree view first.");
  }

  sessionOf(arg: unknown): string {
    if (typeof arg === "string") return arg;
    const el = arg as SessionsElement | undefined;
    if (el?.kind === "session") return el.node.info.session;
    if (this.tree.session) return this.tree.session;
    throw new Error("Pick a session in the Sessions view first.");
  }

  treeSession(): string {
    if (!this.tree.session) throw new Error("Pick a session in the Sessions view first.");
    return this.tree.session;
  }

  /** The element a command was given, else the Tree view's selection. */
  elementOf(arg: unknown): TreeElement | SessionsElement | undefined {
    return (arg as TreeElement | SessionsElement | undefined) ?? this.treeTv.selection[0];
  }

  private async fold(el: TreeElement, folded: boolean): Promise<void> {
    if (el.kind !== "row") return;
    try {
      await this.tree.setFolded(el.row.id, folded);
    } catch (err) {
      showError(err);
    }
  }
}
