// The real connection: pi-server started over stdio by vscode-languageclient.
import { existsSync } from "node:fs";
import * as path from "node:path";
import type * as vscode from "vscode";
import {
  CloseAction,
  type CloseHandlerResult,
  ErrorAction,
  type ErrorHandlerResult,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import type { Connection } from "./protocol";
import { RestartPolicy } from "./restartPolicy";
import { type ServerCommand, startFailure } from "./serverCommand";
import type { EditorTool } from "./tools";
import * as api from "./vscodeapi";

/** A language client that leaves the notifications of a failed first start to the extension (one message, with its cause) and logs a clean exit as information. */
class PiLanguageClient extends LanguageClient {
  started = false;

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    if (/^Server process exited with code 0\b/.test(message)) return this.info(message, data, false);
    super.error(message, data, this.started ? showNotification : false);
  }
}

/** The output channel, also keeping the last lines the server wrote (the client's own log lines come by appendLine): the cause of a failed start. */
function tailing(out: vscode.OutputChannel): { channel: vscode.OutputChannel; tail(): string[] } {
  let text = "";
  const keep = (s: string) => {
    text = (text + s).slice(-4000);
  };
  const channel: vscode.OutputChannel = {
    name: out.name,
    append: (s) => {
      keep(s);
      out.append(s);
    },
    appendLine: (s) => out.appendLine(s),
    replace: (s) => out.replace(s),
    clear: () => out.clear(),
    show: (...args: unknown[]) => out.show(...(args as [boolean])),
    hide: () => out.hide(),
    dispose: () => out.dispose(),
  };
  return { channel, tail: () => text.split("\n").map((l) => l.trim()).filter(Boolean) };
}

/** Why the process did not run when it wrote nothing: most often a path that is not there. */
function spawnFailure(cmd: ServerCommand, err: unknown): string {
  if (path.isAbsolute(cmd.command) && !existsSync(cmd.command)) return `there is no file ${cmd.command}`;
  const msg = typeof err === "string" ? err : (err as { message?: string } | undefined)?.message;
  return msg || `${cmd.command} exited at once`;
}

export async function startLanguageClient(
  cmd: ServerCommand,
  init: Record<string, unknown>,
  documentPatterns: string[],
  out: vscode.OutputChannel,
  tools: EditorTool[],
): Promise<Connection> {
  const server: ServerOptions = { command: cmd.command, args: cmd.args, transport: TransportKind.stdio };
  const policy = new RestartPolicy();
  const log = tailing(out);
  let client: PiLanguageClient | undefined;
  const options: LanguageClientOptions = {
    // the server is also an LSP server for the session files: outline, diagnostics, hover, go to parent
    documentSelector: documentPatterns.map((pattern) => ({ scheme: "file", pattern })),
    initializationOptions: init,
    outputChannel: log.channel,
    errorHandler: {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
      closed: (): CloseHandlerResult => {
        // a server that never started is reported once, by the caller, with its cause
        if (!client?.started) return { action: CloseAction.DoNotRestart, handled: true };
        const restart = policy.crashed();
        const message = policy.message(restart);
        if (restart) void api.showWarningMessage(message);
        else void api.showErrorMessage(message, "Show Logs").then((a) => a && out.show());
        return { action: restart ? CloseAction.Restart : CloseAction.DoNotRestart, handled: true };
      },
    },
  };
  client = new PiLanguageClient("piSessions", "pi-server", server, options);
  const lc = client;
  // tells the server which tools this editor runs for it (pi/executeTool)
  lc.registerFeature({
    fillClientCapabilities: (caps) => {
      caps.experimental = { ...(caps.experimental as object | undefined), piTools: { tools } };
    },
    initialize: () => {},
    getState: () => ({ kind: "static" }),
    clear: () => {},
  });
  const readyListeners: (() => void)[] = [];
  lc.onDidChangeState((e) => {
    if (e.newState === State.Running) for (const l of readyListeners) l();
  });
  out.appendLine(`starting ${cmd.command} ${cmd.args.join(" ")} (${cmd.how})`);
  try {
    await lc.start();
  } catch (err) {
    void lc.dispose().catch(() => {});
    throw new Error(startFailure(cmd, log.tail().at(-1) ?? spawnFailure(cmd, err)));
  }
  lc.started = true;
  const caps = lc.initializeResult?.capabilities.experimental as { piSessions?: { protocolVersion?: number } } | undefined;
  if (caps?.piSessions?.protocolVersion !== 1)
    void api.showWarningMessage(`pi-server speaks protocol ${caps?.piSessions?.protocolVersion ?? "unknown"}; this extension expects 1.`);
  return {
    // a trailing undefined would be sent as a second positional parameter
    request: (method, params, token) =>
      token ? lc.sendRequest(method, params, token as vscode.CancellationToken) : lc.sendRequest(method, params),
    onNotification: (method, handler) => lc.onNotification(method, handler),
    onRequest: (method, handler) => lc.onRequest(method, (params, token) => handler(params, token)),
    onReady: (listener) => {
      readyListeners.push(listener);
    },
    stop: () => lc.stop(),
    restart: () => lc.restart(),
  };
}
