// The one module that touches the `vscode` namespace: every other module calls these thin wrappers,
// so the glue can run against a stub of the editor.
import * as vscode from "vscode";

// classes and enums the views build their items from
export const TreeItem = vscode.TreeItem;
export const TreeItemCollapsibleState = vscode.TreeItemCollapsibleState;
export const ThemeIcon = vscode.ThemeIcon;
export const ThemeColor = vscode.ThemeColor;
export const MarkdownString = vscode.MarkdownString;
export const EventEmitter = vscode.EventEmitter;
export const Uri = vscode.Uri;
export const CancellationTokenSource = vscode.CancellationTokenSource;

export function createOutputChannel(name: string): vscode.OutputChannel {
  return vscode.window.createOutputChannel(name);
}

export function getConfiguration(section: string): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(section);
}

export function registerCommand(id: string, fn: (...args: any[]) => unknown): vscode.Disposable {
  return vscode.commands.registerCommand(id, fn);
}

export function executeCommand<T = unknown>(id: string, ...args: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(id, ...args);
}

/** Sets a `when`-clause context key. */
export function setContext(key: string, value: unknown): void {
  void vscode.commands.executeCommand("setContext", key, value);
}

export function showErrorMessage(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(message, ...actions);
}

export function showWarningMessage(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message, ...actions);
}

/** A modal warning: the user must answer before the editor goes on. */
export function askModal(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message, { modal: true }, ...actions);
}

export function showInformationMessage(message: string): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message);
}

export function showQuickPick<T extends vscode.QuickPickItem>(items: T[], options: vscode.QuickPickOptions): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, options);
}

/** A quick pick the caller drives: its items change as the user types. */
export function createQuickPick<T extends vscode.QuickPickItem>(): vscode.QuickPick<T> {
  return vscode.window.createQuickPick<T>();
}

export function showInputBox(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox(options);
}

/** Runs a task with a cancellable progress notification. */
export function withProgress<R>(title: string, task: (token: vscode.CancellationToken) => Promise<R>): Thenable<R> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (_p, token) =>
    task(token),
  );
}

/** A status bar item on the left, hidden until shown. */
export function createStatusBarItem(id: string, name: string): vscode.StatusBarItem {
  const item = vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Left, 10);
  item.name = name;
  return item;
}

export function createTreeView<T>(id: string, options: vscode.TreeViewOptions<T>): vscode.TreeView<T> {
  return vscode.window.createTreeView(id, options);
}

/** A webview panel beside the active editor, its scripts enabled and its state kept while hidden. */
export function createWebviewPanel(viewType: string, title: string): vscode.WebviewPanel {
  return vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Beside, { enableScripts: true, retainContextWhenHidden: true });
}

export function openUntitled(content: string, language: string): Thenable<vscode.TextDocument> {
  return vscode.workspace.openTextDocument({ content, language });
}

export function openDocument(uri: vscode.Uri): Thenable<vscode.TextDocument> {
  return vscode.workspace.openTextDocument(uri);
}

export function setTextDocumentLanguage(doc: vscode.TextDocument, language: string): Thenable<vscode.TextDocument> {
  return vscode.languages.setTextDocumentLanguage(doc, language);
}

export function showTextDocument(doc: vscode.TextDocument, options?: vscode.TextDocumentShowOptions): Thenable<vscode.TextEditor> {
  return vscode.window.showTextDocument(doc, options);
}

export function registerTextDocumentContentProvider(scheme: string, provider: vscode.TextDocumentContentProvider): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(scheme, provider);
}

export function writeClipboard(text: string): Thenable<void> {
  return vscode.env.clipboard.writeText(text);
}

export function firstWorkspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

export function getExtension(id: string): vscode.Extension<any> | undefined {
  return vscode.extensions.getExtension(id);
}
