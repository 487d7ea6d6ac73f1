// The VS Code glue: views, commands and live updates over a connection to pi-server.
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import * as actions from "./actions";
import { type AgentEventParams, ChatModel } from "./chatModel";
import { ChatPanel } from "./chatPanel";
import type { Choice, Ui } from "./actions";
import { oneLine, sessionTitle } from "./format";
import { type Cancel, errorMessage, FILTERS, type Filter, type Rpc, type SessionsChanged, type SessionUpdated } from "./protocol";
import { describe, EDITOR_TOOLS, type EditorTool, runTool, type ToolPolicy, type ToolRequest } from "./tools";
import { resolveServer, type ServerSettings } from "./serverCommand";
import { SessionsModel } from "./sessionsModel";
import { TreeModel } from "./treeModel";
import { type SessionsElement, SessionsProvider, type TreeElement, TreeProvider } from "./views";

export interface Connection extends Rpc {
  /** Answers a request the server sends (pi/executeTool). */
  onRequest?(method: string, handler: (params: any, token: Cancel) => Promise<unknown>): { dispose(): unknown };
  stop(): Promise<void>;
  restart?(): Promise<void>;
  /** Called each time the server is (re)started and ready. */
  onReady?(listener: () => void): void;
}

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

const FILTER_HELP: Record<Filter, string> = {
  default: "what pi shows: no settings entries",
  "no-tools": "also hides tool results",
  "user-only": "only your messages",
  "labeled-only": "only labeled entries",
  all: "every entry",
};

const ENTRY_SCHEME = "pi-entry";

export async function activate(context: vscode.ExtensionContext, deps: Deps = {}): Promise<Api> {
  const out = vscode.window.createOutputChannel("pi-server");
  context.subscriptions.push(out);
  const cfg = vscode.workspace.getConfiguration("piSessions");
  const settings: ServerSettings = {
    path: cfg.get<string>("server.path"),
    args: cfg.get<string[]>("server.args"),
    python: cfg.get<string>("server.python"),
    sessionDirs: cfg.get<string[]>("sessionDirs"),
    stateDir: cfg.get<string>("stateDir"),
  };
  const init: Record<string, unknown> = {};
  if (settings.sessionDirs?.length) init.sessionDirs = settings.sessionDirs;
  if (settings.stateDir) init.stateDir = settings.stateDir;

  const toolPolicy = (name: EditorTool): ToolPolicy => cfg.get<ToolPolicy>(`tools.${name}`) ?? "ask";
  const tools = EDITOR_TOOLS.filter((t) => toolPolicy(t) !== "off");
  let rpc: Connection;
  try {
    rpc = deps.connect ? await deps.connect(init, tools) : await startDefault(settings, init, out, tools);
  } catch (err) {
    const msg = `pi-server could not start: ${errorMessage(err)}. Set 'piSessions.server.path' or install pi-server (pip install pi-server).`;
    void vscode.window.showErrorMessage(msg, "Show Log").then((a) => a && out.show());
    throw err;
  }
  context.subscriptions.push({ dispose: () => void rpc.stop() });

  const sessions = new SessionsModel(rpc, cfg.get<number>("sessions.limit") || undefined);
  const tree = new TreeModel(rpc, cfg.get<number>("tree.pageSize") || undefined);
  const sessionsView = new SessionsProvider(sessions);
  const treeView = new TreeProvider(tree);
  const sessionsTv = vscode.window.createTreeView("piSessions.sessions", { treeDataProvider: sessionsView, showCollapseAll: true });
  const treeTv = vscode.window.createTreeView("piSessions.tree", { treeDataProvider: treeView });
  context.subscriptions.push(sessionsTv, treeTv);

  const describeTree = () => {
    const info = tree.session ? sessions.find(tree.session) : undefined;
    const parts = [info ? oneLine(sessionTitle(info), 40) : tree.session ? path.basename(tree.session) : ""];
    if (tree.filter !== "default") parts.push(tree.filter);
    if (tree.search) parts.push(`“${tree.search}”`);
    treeTv.description = parts.filter(Boolean).join(" · ");
    treeTv.message = !tree.session
      ? "Pick a session in the Sessions view."
      : tree.total === 0
        ? tree.search
          ? `No entries match “${tree.search}”.`
          : "No entries under this filter."
        : undefined;
    void vscode.commands.executeCommand("setContext", "piSessions.treeSearch", !!tree.search);
    void vscode.commands.executeCommand("setContext", "piSessions.hasTree", !!tree.session);
  };
  tree.onChange(describeTree);
  describeTree();

  const reloadSessions = async () => {
    await sessions.load();
    sessionsTv.description = sessions.query ? `“${sessions.query}”` : undefined;
    sessionsTv.message = sessions.sessions.length
      ? undefined
      : sessions.query
        ? `No sessions match “${sessions.query}”.`
        : "No pi sessions found. Run pi, or set 'piSessions.sessionDirs'.";
    void vscode.commands.executeCommand("setContext", "piSessions.sessionSearch", !!sessions.query);
    sessionsView.refresh();
    describeTree();
  };

  const openSession = async (session: string | undefined) => {
    sessionsView.selected = session;
    sessionsView.refresh();
    await tree.open(session);
    // the leaf, or where pi's /tree puts the cursor when a filter hides it: its nearest shown ancestor
    const leaf = (tree.leafId ? tree.row(tree.leafId) : undefined) ?? tree.rows.filter((r) => r.onActivePath).at(-1);
    if (leaf && treeTv.visible) await treeTv.reveal(treeView.element(leaf), { select: true, focus: false });
  };

  const ui: Ui = {
    async pick<T>(items: Choice<T>[], opts: { title: string; placeholder?: string }) {
      const picked = await vscode.window.showQuickPick(
        items.map((i) => ({ label: i.label, description: i.description, detail: i.detail, value: i.value })),
        { title: opts.title, placeHolder: opts.placeholder },
      );
      return picked?.value;
    },
    input: (opts) =>
      Promise.resolve(vscode.window.showInputBox({ title: opts.title, prompt: opts.prompt, value: opts.value, placeHolder: opts.placeholder })),
    info: (message) => void vscode.window.showInformationMessage(message),
    progress: (title, task) =>
      Promise.resolve(
        vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (_p, token) => task(token)),
      ),
    copy: (text) => Promise.resolve(vscode.env.clipboard.writeText(text)),
    async showText(text, language) {
      const doc = await vscode.workspace.openTextDocument({ content: text, language });
      await vscode.window.showTextDocument(doc, { preview: false });
    },
    async resubmit(text) {
      await vscode.env.clipboard.writeText(text);
      const doc = await vscode.workspace.openTextDocument({ content: text, language: "markdown" });
      await vscode.window.showTextDocument(doc, { preview: false });
      void vscode.window.showInformationMessage("The message is in a new editor and on the clipboard, ready to send again.");
    },
    openSession: async (session) => {
      await reloadSessions();
      await openSession(session);
    },
  };

  // --- arguments: a context-menu element, else the selection, else the current session
  const rowOf = (arg: unknown) => {
    const el = (arg as TreeElement | undefined) ?? treeTv.selection[0];
    if (el?.kind === "row") return el.row;
    throw new Error("Select an entry in the Tree view first.");
  };
  const sessionOf = (arg: unknown): string => {
    if (typeof arg === "string") return arg;
    const el = arg as SessionsElement | undefined;
    if (el?.kind === "session") return el.node.info.session;
    if (tree.session) return tree.session;
    throw new Error("Pick a session in the Sessions view first.");
  };
  const treeSession = (): string => {
    if (!tree.session) throw new Error("Pick a session in the Sessions view first.");
    return tree.session;
  };

  const command = (id: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await fn(...args);
        } catch (err) {
          if (isCancel(err)) return undefined;
          void vscode.window.showErrorMessage(errorMessage(err));
          return undefined;
        }
      }),
    );

  command("piSessions.refresh", async () => {
    await reloadSessions();
    await tree.reload();
  });
  command("piSessions.openSession", (arg) => openSession(sessionOf(arg)));
  command("piSessions.searchSessions", async () => {
    const q = await vscode.window.showInputBox({ title: "Search sessions", prompt: "Words that must all appear in the name or messages", value: sessions.query });
    if (q === undefined) return;
    sessions.query = q.trim();
    await reloadSessions();
  });
  command("piSessions.clearSessionSearch", async () => {
    sessions.query = "";
    await reloadSessions();
  });
  command("piSessions.setFilter", async (arg?: Filter) => {
    const filter =
      arg ??
      (await ui.pick(
        FILTERS.map((f) => ({ label: f === tree.filter ? `$(check) ${f}` : f, description: FILTER_HELP[f], value: f })),
        { title: "Tree filter" },
      ));
    if (filter) await tree.setFilter(filter);
  });
  command("piSessions.searchTree", async () => {
    const q = await vscode.window.showInputBox({ title: "Search the tree", prompt: "Words that must all appear (empty clears)", value: tree.search });
    if (q !== undefined) await tree.setSearch(q);
  });
  command("piSessions.clearTreeSearch", () => tree.setSearch(""));
  command("piSessions.loadMore", () => tree.loadMore());
  command("piSessions.fold", (arg) => tree.setFolded(rowOf(arg).id, true));
  command("piSessions.unfold", (arg) => tree.setFolded(rowOf(arg).id, false));
  command("piSessions.continueHere", async (arg) => {
    const res = await actions.continueAt(rpc, ui, treeSession(), rowOf(arg));
    if (res !== undefined) await tree.reload();
  });
  command("piSessions.fork", (arg) => actions.fork(rpc, ui, treeSession(), rowOf(arg)));
  command("piSessions.setLabel", async (arg) => {
    if (await actions.setLabel(rpc, ui, treeSession(), rowOf(arg))) await tree.reload();
  });
  command("piSessions.clearLabel", async (arg) => {
    await actions.clearLabel(rpc, ui, treeSession(), rowOf(arg));
    await tree.reload();
  });
  command("piSessions.summarizeBranch", (arg) => actions.summarize(rpc, ui, treeSession(), rowOf(arg)));
  command("piSessions.persistBranch", async (arg) => {
    const el = (arg as TreeElement | undefined) ?? treeTv.selection[0];
    const session = el?.kind === "row" ? treeSession() : sessionOf(arg);
    const target = el?.kind === "row" ? el.row.id : session === tree.session ? tree.leafId : (sessions.find(session)?.leafId ?? null);
    await actions.persist(rpc, ui, session, target);
    if (session === tree.session) await tree.reload();
  });
  command("piSessions.renameSession", async (arg) => {
    const session = sessionOf(arg);
    if (await actions.rename(rpc, ui, session, sessions.find(session)?.name)) await reloadSessions();
  });
  command("piSessions.compact", async (arg) => {
    const session = sessionOf(arg);
    if (await actions.compact(rpc, ui, session)) {
      await reloadSessions();
      if (session === tree.session) await tree.reload();
    }
  });
  command("piSessions.copyContext", (arg) => {
    const el = (arg as TreeElement | SessionsElement | undefined) ?? treeTv.selection[0];
    if (el?.kind === "row") return actions.copyContext(rpc, ui, treeSession(), el.row.id);
    return actions.copyContext(rpc, ui, sessionOf(arg), undefined);
  });
  command("piSessions.openEntry", async (arg) => {
    const row = rowOf(arg);
    const uri = entryUri(treeSession(), row.id);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "json");
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
  });
  command("piSessions.openSessionFile", async (arg) => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(sessionOf(arg)));
    await vscode.window.showTextDocument(doc);
  });
  // chats: one panel per session, bound to its current leaf (an entry chosen first becomes the leaf)
  const chats = new Map<string, ChatPanel>();
  const unbound = new Set<ChatPanel>(); // new-session chats waiting for their file
  const openChat = async (session: string | undefined, cwd: string | undefined) => {
    const existing = session ? chats.get(session) : undefined;
    if (existing) {
      existing.panel.reveal();
      await existing.model.loadHistory();
      return existing;
    }
    const info = session ? sessions.find(session) : undefined;
    const model = new ChatModel(rpc, session);
    const panel = new ChatPanel(model, `pi: ${info ? oneLine(sessionTitle(info), 30) : "new session"}`, cwd ?? info?.cwd);
    const key = () => model.session ?? "";
    if (session) chats.set(session, panel);
    else unbound.add(panel);
    model.onChange(() => {
      if (model.session && !chats.has(model.session)) {
        chats.set(model.session, panel); // a new session got its file
        unbound.delete(panel);
      }
    });
    panel.panel.onDidDispose(() => {
      chats.delete(key());
      unbound.delete(panel);
    });
    await model.loadHistory();
    return panel;
  };
  command("piSessions.openChat", async (arg) => {
    const el = (arg as TreeElement | SessionsElement | undefined) ?? treeTv.selection[0];
    if (el?.kind === "row") {
      const session = treeSession();
      if (el.row.id !== tree.leafId) {
        const res = await rpc.request<{ editorText?: string }>("pi/switchBranch", { session, targetId: el.row.id });
        await tree.reload();
        const panel = await openChat(session, undefined);
        if (res.editorText) void panel.panel.webview.postMessage({ type: "draft", text: res.editorText });
        return;
      }
      await openChat(session, undefined);
      return;
    }
    await openChat(sessionOf(arg), undefined);
  });
  command("piSessions.newChat", async () => {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const cwd = await vscode.window.showInputBox({ title: "New pi session", prompt: "Project folder (the session's cwd)", value: folder ?? os.homedir() });
    if (cwd) await openChat(undefined, cwd);
  });

  command("piSessions.showLog", () => out.show());
  command("piSessions.restartServer", async () => {
    if (!rpc.restart) throw new Error("This connection cannot be restarted.");
    await rpc.restart();
  });

  // read-only JSON documents for entries
  const entryChanged = new vscode.EventEmitter<vscode.Uri>();
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(ENTRY_SCHEME, {
      onDidChange: entryChanged.event,
      provideTextDocumentContent: async (uri) => {
        const { session, id } = parseEntryUri(uri);
        try {
          return await actions.entryJson(rpc, session, id);
        } catch (err) {
          return `// ${errorMessage(err)}\n`;
        }
      },
    }),
  );

  // folding in the widget is pi's fold: the server leaves the folded rows out
  context.subscriptions.push(
    treeTv.onDidCollapseElement((e) => void foldSafely(e.element, true)),
    treeTv.onDidExpandElement((e) => void foldSafely(e.element, false)),
  );
  const foldSafely = async (el: TreeElement, folded: boolean) => {
    if (el.kind !== "row") return;
    try {
      await tree.setFolded(el.row.id, folded);
    } catch (err) {
      void vscode.window.showErrorMessage(errorMessage(err));
    }
  };

  // live updates; bursts of appends coalesce into one reload per view
  const reloadTreeSoon = debounce(() => void tree.reload().catch(showError), 50);
  const reloadSessionsSoon = debounce(() => void reloadSessions().catch(showError), 150);
  context.subscriptions.push(
    rpc.onNotification("pi/sessionUpdated", (p: SessionUpdated) => {
      if (p.session === tree.session) reloadTreeSoon();
      reloadSessionsSoon();
    }),
    rpc.onNotification("pi/sessionsChanged", (p: SessionsChanged) => {
      if (tree.session && p.removed.includes(tree.session)) void openSession(undefined).catch(showError);
      reloadSessionsSoon();
    }),
    rpc.onNotification("pi/agentEvent", (p: AgentEventParams) => {
      const chat = chats.get(p.session) ?? [...unbound].find((c) => c.model.running && !c.model.session);
      chat?.model.apply(p);
      if (p.event.type === "agent_end" && p.session === tree.session) reloadTreeSoon();
    }),
    rpc.onNotification("pi/savePoint", (p: { session: string }) => {
      if (p.session === tree.session) reloadTreeSoon();
    }),
  );
  rpc.onReady?.(() => {
    reloadSessionsSoon();
    if (tree.session) reloadTreeSoon();
  });

  // edit, write and bash run here, in the session's cwd, when the user allows them
  const allowed = new Set<string>(); // "session\0tool" allowed for the rest of this window
  rpc.onRequest?.("pi/executeTool", async (req: ToolRequest, token: Cancel) => {
    const name = req.name as EditorTool;
    if (!EDITOR_TOOLS.includes(name) || toolPolicy(name) === "off")
      return { content: [{ type: "text", text: `Tool ${req.name} is not available in this editor` }], isError: true };
    let cwd = sessions.find(req.session)?.cwd;
    if (!cwd) {
      await reloadSessions();
      cwd = sessions.find(req.session)?.cwd;
    }
    if (!cwd) return { content: [{ type: "text", text: "Unknown session" }], isError: true };
    const key = `${req.session}\0${name}`;
    if (toolPolicy(name) === "ask" && !allowed.has(key)) {
      const answer = await vscode.window.showWarningMessage(
        `pi wants to ${describe(req)} in ${cwd}.`,
        { modal: true },
        "Allow",
        "Allow for this session",
      );
      if (answer === "Allow for this session") allowed.add(key);
      else if (answer !== "Allow") return { content: [{ type: "text", text: "The user refused this tool call." }], isError: true };
    }
    const abort = new AbortController();
    token.onCancellationRequested(() => abort.abort());
    return runTool(req, cwd, os.homedir(), abort.signal);
  });

  await reloadSessions().catch(showError);
  return { rpc, sessions, tree, openSession, chats };
}

export function deactivate(): void {
  // the connection is disposed with the extension's subscriptions
}

async function startDefault(
  settings: ServerSettings,
  init: Record<string, unknown>,
  out: vscode.OutputChannel,
  tools: EditorTool[],
): Promise<Connection> {
  const python = await selectedPython();
  const cmd = resolveServer(settings, python);
  const patterns = [path.join(os.homedir(), ".pi", "agent", "sessions", "**", "*.jsonl")];
  if (process.env.PI_CODING_AGENT_DIR) patterns.push(path.join(process.env.PI_CODING_AGENT_DIR, "sessions", "**", "*.jsonl"));
  for (const d of settings.sessionDirs ?? []) patterns.push(path.join(d, "**", "*.jsonl"));
  // loaded here so that the tests, which connect on their own, never load vscode-languageclient
  const { startLanguageClient } = await import("./languageClient");
  return startLanguageClient(cmd, init, patterns, out, tools);
}

/** The interpreter chosen in the Python extension, when it is installed. */
async function selectedPython(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  try {
    if (ext) {
      const api = ext.isActive ? ext.exports : await ext.activate();
      const env = api?.environments?.getActiveEnvironmentPath?.();
      if (env?.path) return env.path as string;
    }
  } catch {
    // fall back to the setting below
  }
  return vscode.workspace.getConfiguration("python").get<string>("defaultInterpreterPath") || undefined;
}

export function entryUri(session: string, id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/${id}.json`, query: new URLSearchParams({ session }).toString() });
}

export function parseEntryUri(uri: vscode.Uri): { session: string; id: string } {
  const session = new URLSearchParams(uri.query).get("session") ?? "";
  const id = uri.path.replace(/^\//, "").replace(/\.json$/, "");
  return { session, id };
}

function showError(err: unknown): void {
  void vscode.window.showErrorMessage(errorMessage(err));
}

function isCancel(err: unknown): boolean {
  return !!err && typeof err === "object" && (err as { code?: number }).code === -32800;
}

function debounce(fn: () => void, ms: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      fn();
    }, ms);
  };
}
