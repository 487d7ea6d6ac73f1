// A small stand-in for the `vscode` API: enough of it for the extension's glue, with every call recorded
// so tests can answer prompts and read what the user would see.
/* eslint-disable @typescript-eslint/no-explicit-any */

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

/** A webview panel that records what the extension posts and lets tests post as the page would. */
export class StubWebviewPanel {
  readonly posted: any[] = [];
  readonly fromPage = new EventEmitter<any>();
  readonly disposed = new EventEmitter<void>();
  readonly webview = {
    html: "",
    postMessage: async (m: any) => {
      this.posted.push(m);
      return true;
    },
    onDidReceiveMessage: this.fromPage.event,
  };
  readonly onDidDispose = this.disposed.event;
  revealed = 0;
  constructor(
    readonly viewType: string,
    public title: string,
  ) {}
  reveal(): void {
    this.revealed++;
  }
  dispose(): void {
    this.disposed.fire();
  }
  /** The last state the page was sent. */
  get state(): any {
    return [...this.posted].reverse().find((m) => m.type === "state");
  }
}

export const panels: StubWebviewPanel[] = [];

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  value = "";
  appendMarkdown(s: string): this {
    this.value += s;
    return this;
  }
  appendText(s: string): this {
    this.value += s;
    return this;
  }
  appendCodeblock(s: string, lang = ""): this {
    this.value += `\n\`\`\`${lang}\n${s}\n\`\`\`\n`;
    return this;
  }
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  resourceUri?: Uri;
  constructor(
    readonly label: string | { label: string; highlights?: [number, number][] },
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

// VS Code's own decoding (its uri.ts): a run that is not UTF-8 stays encoded, three characters at a time.
function decodeGraceful(str: string): string {
  try {
    return decodeURIComponent(str);
  } catch {
    return str.length > 3 ? str.slice(0, 3) + decodeGraceful(str.slice(3)) : str;
  }
}
function percentDecode(str: string): string {
  return str.replace(/(%[0-9A-Za-z][0-9A-Za-z])+/g, decodeGraceful);
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", p, "");
  }
  static from(c: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(c.scheme, c.path ?? "", c.query ?? "");
  }
  /** As VS Code parses: the path percent-decoded as UTF-8, a `%XX` that is not left as those characters. */
  static parse(value: string): Uri {
    const m = /^(([^:/?#]+?):)?(\/\/([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?/.exec(value)!;
    return new Uri(m[2] ?? "", percentDecode(m[5] ?? ""), percentDecode(m[7] ?? ""));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  private cancelled = false;
  readonly token = {
    get isCancellationRequested(): boolean {
      return false;
    },
    onCancellationRequested: this.emitter.event,
  };
  constructor() {
    const self = this;
    Object.defineProperty(this.token, "isCancellationRequested", { get: () => self.cancelled });
  }
  cancel(): void {
    this.cancelled = true;
    this.emitter.fire();
  }
}

// ---- what the user sees and answers

export interface Shown {
  kind: "info" | "warning" | "error";
  message: string;
  /** The buttons offered with it. */
  actions?: string[];
}

export const recorded = {
  messages: [] as Shown[],
  quickPicks: [] as { items: any[]; options: any }[],
  /** Every quick pick made with createQuickPick, the newest last. */
  livePicks: [] as StubQuickPick[],
  inputs: [] as any[],
  documents: [] as { content: string; language?: string; uri?: Uri }[],
  clipboard: "",
  contexts: new Map<string, unknown>(),
  progress: [] as string[],
};

/** Answers for the next prompts, in order: a quick pick answer is the picked item's index or a predicate. */
export const answers = {
  picks: [] as (number | ((item: any) => boolean) | undefined)[],
  inputs: [] as (string | undefined)[],
  /** Answers to warning dialogs (the button chosen), in order. */
  warnings: [] as (string | undefined)[],
  /** Cancels the next withProgress as soon as it starts. */
  cancelProgress: false,
};

export function resetRecorded(): void {
  recorded.messages.length = 0;
  recorded.quickPicks.length = 0;
  recorded.livePicks.length = 0;
  recorded.inputs.length = 0;
  recorded.documents.length = 0;
  recorded.progress.length = 0;
  recorded.clipboard = "";
}

/** A quick pick made with createQuickPick: a test types into it (`type`) and accepts an item (`accept`). */
export class StubQuickPick<T = any> {
  private readonly changedValue = new EventEmitter<string>();
  private readonly accepted = new EventEmitter<void>();
  private readonly hidden = new EventEmitter<void>();
  readonly onDidChangeValue = this.changedValue.event;
  readonly onDidAccept = this.accepted.event;
  readonly onDidHide = this.hidden.event;
  value = "";
  items: T[] = [];
  selectedItems: T[] = [];
  activeItems: T[] = [];
  title: string | undefined;
  placeholder: string | undefined;
  busy = false;
  matchOnDescription = false;
  matchOnDetail = false;
  shown = false;
  disposed = false;
  show(): void {
    this.shown = true;
  }
  hide(): void {
    if (!this.shown) return;
    this.shown = false;
    this.hidden.fire();
  }
  dispose(): void {
    this.disposed = true;
  }
  type(value: string): void {
    this.value = value;
    this.changedValue.fire(value);
  }
  accept(item: T): void {
    this.selectedItems = [item];
    this.accepted.fire();
  }
}

const treeViews = new Map<string, StubTreeView<any>>();

export class StubTreeView<T> {
  readonly collapse = new EventEmitter<{ element: T }>();
  readonly expand = new EventEmitter<{ element: T }>();
  readonly onDidCollapseElement = this.collapse.event;
  readonly onDidExpandElement = this.expand.event;
  selection: T[] = [];
  visible = true;
  description: string | undefined;
  message: string | undefined;
  revealed: T[] = [];
  changes = 0;
  constructor(readonly provider: any) {
    provider.onDidChangeTreeData?.(() => this.changes++);
  }
  async reveal(el: T): Promise<void> {
    this.revealed.push(el);
    this.selection = [el];
  }
  dispose(): void {}
}

export function treeView<T = any>(id: string): StubTreeView<T> {
  const tv = treeViews.get(id);
  if (!tv) throw new Error(`no tree view ${id}`);
  return tv;
}

/** Status bar items by id: what they say and whether they are shown. */
export const statusItems = new Map<string, { text: string; tooltip?: string; command?: string; name?: string; visible: boolean }>();

export const window = {
  createStatusBarItem: (id: string) => {
    const item = {
      text: "",
      tooltip: undefined as string | undefined,
      command: undefined as string | undefined,
      name: undefined as string | undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        statusItems.delete(id);
      },
    };
    statusItems.set(id, item);
    return item;
  },
  createOutputChannel: (name: string) => ({
    name,
    lines: [] as string[],
    appendLine(s: string) {
      this.lines.push(s);
    },
    append(s: string) {
      this.lines.push(s);
    },
    show() {},
    dispose() {},
  }),
  createTreeView: (id: string, opts: { treeDataProvider: any }) => {
    const tv = new StubTreeView(opts.treeDataProvider);
    treeViews.set(id, tv);
    return tv;
  },
  showInformationMessage: async (message: string) => {
    recorded.messages.push({ kind: "info", message });
    return undefined;
  },
  showWarningMessage: async (message: string, ..._items: unknown[]) => {
    recorded.messages.push({ kind: "warning", message });
    return answers.warnings.shift();
  },
  showErrorMessage: async (message: string, ...actions: string[]) => {
    recorded.messages.push({ kind: "error", message, actions });
    return undefined;
  },
  showQuickPick: async (items: any[], options: any) => {
    recorded.quickPicks.push({ items, options });
    const a = answers.picks.shift();
    if (a === undefined) return undefined;
    return typeof a === "number" ? items[a] : items.find(a);
  },
  createQuickPick: () => {
    const qp = new StubQuickPick();
    recorded.livePicks.push(qp);
    return qp;
  },
  showInputBox: async (options: any) => {
    recorded.inputs.push(options);
    return answers.inputs.shift();
  },
  withProgress: async (opts: { title: string }, task: (p: unknown, token: unknown) => Promise<unknown>) => {
    recorded.progress.push(opts.title);
    const source = new CancellationTokenSource();
    const run = task({ report() {} }, source.token);
    if (answers.cancelProgress) {
      answers.cancelProgress = false;
      setTimeout(() => source.cancel(), 50);
    }
    return run;
  },
  showTextDocument: async (doc: unknown) => doc,
  createWebviewPanel: (viewType: string, title: string) => {
    const p = new StubWebviewPanel(viewType, title);
    panels.push(p);
    return p;
  },
};

const providers = new Map<string, { provideTextDocumentContent(uri: Uri): Promise<string> | string }>();

export const workspace = {
  settings: {} as Record<string, unknown>,
  workspaceFolders: undefined as { uri: Uri }[] | undefined,
  getConfiguration: (section: string) => ({
    get: <T>(key: string): T | undefined => workspace.settings[`${section}.${key}`] as T | undefined,
  }),
  openTextDocument: async (arg: Uri | { content: string; language?: string }) => {
    if (arg instanceof Uri) {
      const p = providers.get(arg.scheme);
      const content = p ? await p.provideTextDocumentContent(arg) : "";
      const doc = { content, uri: arg, language: undefined as string | undefined };
      recorded.documents.push(doc);
      return doc;
    }
    recorded.documents.push({ content: arg.content, language: arg.language });
    return arg;
  },
  registerTextDocumentContentProvider: (scheme: string, p: any) => {
    providers.set(scheme, p);
    return { dispose: () => providers.delete(scheme) };
  },
};

export const languages = {
  setTextDocumentLanguage: async (doc: any, language: string) => {
    doc.language = language;
    return doc;
  },
};

const registered = new Map<string, (...args: any[]) => unknown>();

export const commands = {
  registerCommand: (id: string, fn: (...args: any[]) => unknown) => {
    registered.set(id, fn);
    return { dispose: () => registered.delete(id) };
  },
  executeCommand: async (id: string, ...args: any[]) => {
    if (id === "setContext") {
      recorded.contexts.set(args[0], args[1]);
      return undefined;
    }
    const fn = registered.get(id);
    if (!fn) throw new Error(`command ${id} is not registered`);
    return fn(...args);
  },
  registered: () => [...registered.keys()],
};

export const env = {
  clipboard: {
    readText: async () => recorded.clipboard,
    writeText: async (s: string) => {
      recorded.clipboard = s;
    },
  },
};

export const extensions = {
  getExtension: (_id: string) => undefined,
};
