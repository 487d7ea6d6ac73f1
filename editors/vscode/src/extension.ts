// The extension's entry point: reads the settings, starts pi-server and wires the views, commands, chats and
// tools to it. The commands exist even when the server cannot start, so 'Restart Server' can try again.
import type * as vscode from "vscode";
import type { AgentEventParams } from "./chatModel";
import type { ChatPanel } from "./chatPanel";
import { Chats } from "./chats";
import { registerCommands } from "./commands";
import { registerEntryDocuments } from "./entryDocs";
import { registerSessionFileDocuments } from "./sessionFileDocs";
import { registerSystemDocuments } from "./systemDocs";
import { ServerLink } from "./link";
import { type Connection, errorMessage, type SessionsChanged, type SessionUpdated } from "./protocol";
import type { ServerSettings } from "./serverCommand";
import { startServer } from "./serverStart";
import { SessionsModel } from "./sessionsModel";
import { Sidebar } from "./sidebar";
import { registerToolExecution } from "./toolExecution";
import { EDITOR_TOOLS, type EditorTool, type ToolPolicy } from "./tools";
import { TreeModel } from "./treeModel";
import { debounce, editorUi, showError } from "./ui";
import * as api from "./vscodeapi";

export type { Connection } from "./protocol";
export { entryUri, parseEntryUri } from "./entryDocs";

export interface Deps {
  /** Opens the connection; the default starts pi-server with vscode-languageclient. `tools` are the editor tools to declare. */
  connect?: (init: Record<string, unknown>, tools: EditorTool[]) => Promise<Connection>;
}

/** What activate returns: the models, for other extensions and the tests. */
export interface Api {
  rpc: Connection;
  sessions: SessionsModel;
  tree: TreeModel;
  openSession(session: string | undefined): Promise<void>;
  chats: Map<string, ChatPanel>;
}

export async function activate(context: vscode.ExtensionContext, deps: Deps = {}): Promise<Api> {
  const subs = context.subscriptions;
  const out = api.createOutputChannel("pi-server");
  subs.push(out);
  const cfg = api.getConfiguration("piSessions");
  const toolPolicy = (name: EditorTool): ToolPolicy => api.getConfiguration("piSessions").get<ToolPolicy>(`tools.${name}`) ?? "ask";

  const rpc = new ServerLink();
  subs.push({ dispose: () => void rpc.stop() });
  const sessions = new SessionsModel(rpc, cfg.get<number>("sessions.limit") || undefined);
  const tree = new TreeModel(rpc, cfg.get<number>("tree.pageSize") || undefined);
  const sidebar = new Sidebar(sessions, tree, subs);
  const ui = editorUi(async (session) => {
    await sidebar.reloadSessions();
    await sidebar.openSession(session);
  });
  const chats = new Chats(rpc, sessions);

  /** Starts the server; a failure is one notification naming the cause, and the commands stay. */
  const start = async (): Promise<boolean> => {
    const { settings, init } = serverSettings(); // read again, so a fixed setting takes effect on Restart Server
    const tools = EDITOR_TOOLS.filter((t) => toolPolicy(t) !== "off");
    try {
      rpc.attach(deps.connect ? await deps.connect(init, tools) : await startServer(settings, init, out, tools));
      return true;
    } catch (err) {
      const cause = errorMessage(err);
      const msg = cause.startsWith("pi-server could not start") ? cause : `pi-server could not start: ${cause}`;
      out.appendLine(msg);
      rpc.fail(cause);
      sidebar.sessionsTv.message = `${msg} Then run 'Pi Sessions: Restart Server'.`;
      void api.showErrorMessage(msg, "Show Logs").then((a) => a && out.show());
      return false;
    }
  };
  registerCommands(subs, {
    rpc,
    sidebar,
    ui,
    chats,
    showLog: () => out.show(),
    // a new process with the settings as they are now; stopping the old one is no error
    restartServer: async () => {
      await rpc.stop().catch(() => {});
      if (!(await start())) return;
      await sidebar.reloadSessions();
      if (tree.session) await tree.reload();
    },
  });
  subs.push(registerEntryDocuments(rpc), registerSystemDocuments(rpc), registerSessionFileDocuments());

  const reloadTreeSoon = debounce(() => void tree.reload().catch(showError), 50); // live updates: a burst, one reload
  const reloadSessionsSoon = debounce(() => void sidebar.reloadSessions().catch(showError), 150);
  subs.push(
    rpc.onNotification("pi/sessionUpdated", (p: SessionUpdated) => {
      if (sidebar.markLive(p)) void sidebar.followLeaf(); // pi moved its leaf: no appends to wait for
      else if (p.session === tree.session) reloadTreeSoon();
      reloadSessionsSoon();
    }),
    rpc.onNotification("pi/sessionsChanged", (p: SessionsChanged) => {
      if (tree.session && p.removed.includes(tree.session)) void sidebar.openSession(undefined).catch(showError);
      reloadSessionsSoon();
    }),
    rpc.onNotification("pi/agentEvent", (p: AgentEventParams) => {
      chats.route(p);
      if (p.event.type === "agent_end" && p.session === tree.session) reloadTreeSoon();
    }),
    rpc.onNotification("pi/savePoint", (p: { session: string }) => {
      if (p.session === tree.session) reloadTreeSoon();
    }),
  );
  rpc.onReady(() => {
    reloadSessionsSoon();
    if (tree.session) reloadTreeSoon();
  });
  const tooling = registerToolExecution(rpc, sessions, () => sidebar.reloadSessions(), toolPolicy);
  if (tooling) subs.push(tooling);

  if (await start()) await sidebar.reloadSessions().catch(showError);
  return { rpc, sessions, tree, openSession: (s) => sidebar.openSession(s), chats: chats.bySession };
}

function serverSettings(): { settings: ServerSettings; init: Record<string, unknown> } {
  const cfg = api.getConfiguration("piSessions");
  const settings: ServerSettings = {
    path: cfg.get<string>("server.path"),
    args: cfg.get<string[]>("server.args"),
    python: cfg.get<string>("server.python"),
    sessionDirs: cfg.get<string[]>("sessionDirs"),
    stateDir: cfg.get<string>("stateDir"),
  };
  // more initializationOptions (compaction budgets, …; docs/protocol.md), under the folder settings
  const init: Record<string, unknown> = { ...(cfg.get<Record<string, unknown>>("serverOptions") ?? {}) };
  if (settings.sessionDirs?.length) init.sessionDirs = settings.sessionDirs;
  if (settings.stateDir) init.stateDir = settings.stateDir;
  return { settings, init };
}

export function deactivate(): void {
  // the connection is disposed with the extension's subscriptions
}
