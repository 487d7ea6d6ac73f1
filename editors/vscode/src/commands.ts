// Every command the extension contributes: what it acts on, and what it asks and sends through `actions`.
import * as os from "node:os";
import * as actions from "./actions";
import * as contextEdits from "./contextEdits";
import type { Ui } from "./actions";
import type { Chats } from "./chats";
import { openEntry } from "./entryDocs";
import { oneLine } from "./format";
import { FILTERS, type Filter, type Rpc, type SwitchResult, type TreeRow } from "./protocol";
import { searchAll } from "./search";
import { openSessionFile } from "./sessionFileDocs";
import type { Sidebar } from "./sidebar";
import { fetchStats, statsMessage } from "./stats";
import { openSystem } from "./systemDocs";
import { CancelledError, isCancel, showError } from "./ui";
import type { SessionsElement, TreeElement } from "./views";
import * as api from "./vscodeapi";

const FILTER_HELP: Record<Filter, string> = {
  default: "what pi shows: no settings entries",
  "no-tools": "also hides tool results",
  "user-only": "only your messages",
  "labeled-only": "only labeled entries",
  all: "every entry",
};

export interface CommandDeps {
  rpc: Rpc;
  sidebar: Sidebar;
  ui: Ui;
  chats: Chats;
  showLog(): void;
  restartServer(): Promise<void>;
}

/** Registers a command whose errors become one notification (a cancelled request is no error). */
function command(subscriptions: { dispose(): unknown }[], id: string, fn: (...args: any[]) => unknown): void {
  subscriptions.push(
    api.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        if (!isCancel(err)) showError(err);
        return undefined;
      }
    }),
  );
}

export function registerCommands(subscriptions: { dispose(): unknown }[], d: CommandDeps): void {
  const { rpc, sidebar: s, ui } = d;
  const { tree, sessions } = s;
  const cmd = (id: string, fn: (...args: any[]) => unknown) => command(subscriptions, id, fn);

  cmd("piSessions.refresh", async () => {
    await s.reloadSessions();
    await tree.reload();
  });
  cmd("piSessions.openSession", (arg) => s.openSession(s.sessionOf(arg)));
  cmd("piSessions.searchSessions", async () => {
    const q = await api.showInputBox({ title: "Search sessions", prompt: "Words that must all appear in the name or messages", value: sessions.query });
    if (q === undefined) return;
    sessions.query = q.trim();
    await s.reloadSessions();
  });
  cmd("piSessions.searchAll", () => searchAll(rpc, (hit) => s.revealEntry(hit.session, hit.entryId)));
  cmd("piSessions.clearSessionSearch", async () => {
    sessions.query = "";
    await s.reloadSessions();
  });
  cmd("piSessions.setFilter", async (arg?: Filter) => {
    const filter =
      arg ??
      (await ui.pick(
        FILTERS.map((f) => ({ label: f === tree.filter ? `$(check) ${f}` : f, description: FILTER_HELP[f], value: f })),
        { title: "Tree filter" },
      ));
    if (filter) await tree.setFilter(filter);
  });
  cmd("piSessions.searchTree", async () => {
    const q = await api.showInputBox({ title: "Search the tree", prompt: "Words that must all appear (empty clears)", value: tree.search });
    if (q !== undefined) await tree.setSearch(q);
  });
  cmd("piSessions.clearTreeSearch", () => tree.setSearch(""));
  cmd("piSessions.loadMore", () => tree.loadMore());
  cmd("piSessions.fold", (arg) => tree.setFolded(s.rowOf(arg).id, true));
  cmd("piSessions.unfold", (arg) => tree.setFolded(s.rowOf(arg).id, false));
  cmd("piSessions.continueHere", async (arg) => {
    const session = s.treeSession();
    const res = await actions.continueAt(rpc, ui, session, s.rowOf(arg));
    if (res === undefined || tree.session !== session) return; // cancelled, or a fork opened another session
    await tree.reload();
    await s.revealLeaf(); // the selection follows the leaf
  });
  cmd("piSessions.fork", (arg) => actions.fork(rpc, ui, s.treeSession(), s.rowOf(arg)));
  cmd("piSessions.setLabel", async (arg) => {
    if (await actions.setLabel(rpc, ui, s.treeSession(), s.rowOf(arg))) await tree.reload();
  });
  cmd("piSessions.clearLabel", async (arg) => {
    await actions.clearLabel(rpc, ui, s.treeSession(), s.rowOf(arg));
    await tree.reload();
  });
  cmd("piSessions.summarizeBranch", (arg) => actions.summarize(rpc, ui, s.treeSession(), s.rowOf(arg)));
  cmd("piSessions.persistBranch", async (arg) => {
    const el = s.elementOf(arg);
    const session = el?.kind === "row" ? s.treeSession() : s.sessionOf(arg);
    const target = el?.kind === "row" ? el.row.id : session === tree.session ? tree.leafId : (sessions.find(session)?.leafId ?? null);
    await actions.persist(rpc, ui, session, target);
    if (session === tree.session) await tree.reload();
  });
  cmd("piSessions.renameSession", async (arg) => {
    const session = s.sessionOf(arg);
    if (await actions.rename(rpc, ui, session, sessions.find(session)?.name)) await s.reloadSessions();
  });
  cmd("piSessions.compact", async (arg) => {
    const session = s.sessionOf(arg);
    if (await actions.compact(rpc, ui, session)) {
      await s.reloadSessions();
      if (session === tree.session) await tree.reload();
    }
  });
  cmd("piSessions.copyContext", (arg) => {
    const el = s.elementOf(arg);
    if (el?.kind === "row") return actions.copyContext(rpc, ui, s.treeSession(), el.row.id);
    return actions.copyContext(rpc, ui, s.sessionOf(arg), undefined);
  });
  cmd("piSessions.omitFromContext", async (arg) => {
    await contextEdits.omit(rpc, ui, s.treeSession(), s.rowOf(arg));
    await tree.reload();
    await s.revealLeaf(); // the edit is the new leaf
  });
  cmd("piSessions.restoreToContext", async (arg) => {
    await contextEdits.restore(rpc, ui, s.treeSession(), s.rowOf(arg));
    await tree.reload();
    await s.revealLeaf();
  });
  // a row: the prompt at that entry; the title bar: at the leaf, named, so the document is that leaf's
  cmd("piSessions.showSystemPrompt", (arg) => {
    const el = s.elementOf(arg);
    if (el?.kind === "row") return openSystem(s.treeSession(), el.row.id);
    const session = s.sessionOf(arg);
    const leaf = session === tree.session ? tree.leafId : sessions.find(session)?.leafId;
    return openSystem(session, leaf ?? undefined);
  });
  cmd("piSessions.showStats", async (arg) => {
    const session = s.sessionOf(arg);
    const stats = await fetchStats(rpc, session);
    if (!stats) throw new Error("This pi-server has no session stats (pi/getSessionStats): update it.");
    ui.info(statsMessage(stats));
    return stats;
  });
  cmd("piSessions.openEntry", (arg) => openEntry(s.treeSession(), s.rowOf(arg).id));
  cmd("piSessions.openSessionFile", (arg) => openSessionFile(s.sessionOf(arg)));
  registerChatCommands(subscriptions, d);
  cmd("piSessions.showLog", () => d.showLog());
  cmd("piSessions.restartServer", () => d.restartServer());
}

/** Asks before a chat on a row moves the session's leaf there; false keeps the leaf. */
async function confirmMove(ui: Ui, row: TreeRow): Promise<boolean> {
  const choice = await ui.pick(
    [
      { label: "$(debug-step-into) Chat from this entry", description: "moves the session's leaf here", value: true },
      { label: "$(comment-discussion) Chat at the current leaf", description: "the session stays where it is", value: false },
    ],
    { title: `pi: ${oneLine(row.title, 60)}`, placeholder: "Where should the chat continue?" },
  );
  if (choice === undefined) throw new CancelledError();
  return choice;
}

function registerChatCommands(subscriptions: { dispose(): unknown }[], d: CommandDeps): void {
  const { rpc, sidebar: s, chats } = d;
  // the title bar passes no row: the chat opens at the session's leaf, whatever row is selected
  command(subscriptions, "piSessions.openChat", async (arg) => {
    const el = arg as TreeElement | SessionsElement | undefined;
    if (el?.kind !== "row") return chats.open(s.sessionOf(arg), undefined);
    const session = s.treeSession();
    if (el.row.id === s.tree.leafId || !(await confirmMove(d.ui, el.row))) return chats.open(session, undefined);
    const res = await rpc.request<SwitchResult>("pi/switchBranch", { session, targetId: el.row.id });
    await s.tree.reload();
    await s.revealLeaf();
    const panel = await chats.open(session, undefined);
    if (res.editorText) void panel.panel.webview.postMessage({ type: "draft", text: res.editorText });
    return panel;
  });
  command(subscriptions, "piSessions.newChat", async () => {
    const folder = api.firstWorkspaceFolder();
    const cwd = await api.showInputBox({ title: "New pi session", prompt: "Project folder (the session's cwd)", value: folder ?? os.homedir() });
    if (cwd) await chats.open(undefined, cwd);
  });
}
