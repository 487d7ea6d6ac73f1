// The chat webview: draws a ChatModel and sends the user's prompts and aborts back to it.
import type * as vscode from "vscode";
import type { ChatModel } from "./chatModel";
import { showError } from "./ui";
import * as api from "./vscodeapi";

export type FromWebview = { type: "send"; text: string } | { type: "abort" } | { type: "ready" };

export class ChatPanel {
  readonly panel: vscode.WebviewPanel;
  private readonly disposables: { dispose(): unknown }[] = [];

  constructor(
    readonly model: ChatModel,
    title: string,
    private readonly cwd: string | undefined,
  ) {
    this.panel = api.createWebviewPanel("piSessions.chat", title);
    this.panel.webview.html = html(nonce());
    this.disposables.push(
      model.onChange(() => this.post()),
      this.panel.webview.onDidReceiveMessage((m: FromWebview) => void this.receive(m)),
      this.panel.onDidDispose(() => this.dispose()),
    );
  }

  async receive(m: FromWebview): Promise<void> {
    try {
      if (m.type === "send" && m.text.trim()) await this.model.send(m.text, this.cwd);
      else if (m.type === "abort") await this.model.abort();
      else if (m.type === "ready") this.post();
    } catch (err) {
      showError(err);
    }
  }

  post(): void {
    void this.panel.webview.postMessage({ type: "state", items: this.model.items, running: this.model.running });
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

function nonce(): string {
  let s = "";
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (let i = 0; i < 32; i++) s += chars[Math.floor(Math.random() * chars.length)];
  return s;
}

function html(n: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${n}'; script-src 'nonce-${n}';">
<style nonce="${n}">
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px 96px; }
.msg { margin: 10px 0; white-space: pre-wrap; line-height: 1.45; }
.user { border-left: 3px solid var(--vscode-charts-blue); padding-left: 8px; }
.note { color: var(--vscode-descriptionForeground); font-style: italic; }
details { color: var(--vscode-descriptionForeground); margin: 4px 0; }
.tool { font-family: var(--vscode-editor-font-family); font-size: 0.92em; background: var(--vscode-textCodeBlock-background); padding: 4px 8px; margin: 4px 0; }
.tool.error { border-left: 3px solid var(--vscode-errorForeground); }
.stop { color: var(--vscode-errorForeground); }
form { position: fixed; bottom: 0; left: 0; right: 0; padding: 8px 12px; background: var(--vscode-sideBar-background); display: flex; gap: 6px; }
textarea { flex: 1; min-height: 48px; color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); }
</style></head>
<body><div id="log"></div>
<form id="f"><textarea id="t" placeholder="Message pi (Enter sends, Shift+Enter breaks the line)"></textarea>
<button id="send" type="submit">Send</button><button id="abort" type="button" hidden>Stop</button></form>
<script nonce="${n}">
const vscode = acquireVsCodeApi();
const log = document.getElementById("log"), t = document.getElementById("t");
const send = document.getElementById("send"), abort = document.getElementById("abort");
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
function render(items, running) {
  log.replaceChildren();
  for (const it of items) {
    if (it.kind === "user") log.append(el("div", "msg user", it.text));
    else if (it.kind === "note") log.append(el("div", "msg note", it.text));
    else {
      const box = el("div", "msg assistant");
      if (it.thinking) { const d = el("details"); d.append(el("summary", "", "thinking"), el("div", "", it.thinking)); box.append(d); }
      if (it.text) box.append(el("div", "", it.text));
      for (const tool of it.tools) {
        const d = el("details", "tool" + (tool.isError ? " error" : ""));
        d.append(el("summary", "", tool.name + " " + JSON.stringify(tool.args ?? {}) + (tool.running ? " …" : "")));
        if (tool.result !== undefined) d.append(el("div", "", tool.result));
        box.append(d);
      }
      if (it.stopReason === "aborted" || it.stopReason === "error") box.append(el("div", "stop", it.errorMessage || it.stopReason));
      log.append(box);
    }
  }
  send.hidden = running; abort.hidden = !running;
  window.scrollTo(0, document.body.scrollHeight);
}
window.addEventListener("message", (e) => {
  if (e.data.type === "state") render(e.data.items, e.data.running);
  else if (e.data.type === "draft") { t.value = e.data.text; t.focus(); }
});
document.getElementById("f").addEventListener("submit", (e) => { e.preventDefault(); vscode.postMessage({ type: "send", text: t.value }); t.value = ""; });
t.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("f").requestSubmit(); } });
abort.addEventListener("click", () => vscode.postMessage({ type: "abort" }));
vscode.postMessage({ type: "ready" });
</script></body></html>`;
}
