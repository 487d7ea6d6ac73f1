// The real connection: pi-server started over stdio by vscode-languageclient.
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
import type { ServerCommand } from "./serverCommand";
import type { EditorTool } from "./tools";
import * as api from "./vscodeapi";

export async function startLanguageClient(
  cmd: ServerCommand,
  init: Record<string, unknown>,
  documentPatterns: string[],
  out: vscode.OutputChannel,
  tools: EditorTool[],
): Promise<Connection> {
  const server: ServerOptions = { command: cmd.command, args: cmd.args, transport: TransportKind.stdio };
  const policy = new RestartPolicy();
  const options: LanguageClientOptions = {
    // the server is also an LSP server for the session files: outline, diagnostics, hover, go to parent
    documentSelector: documentPatterns.map((pattern) => ({ scheme: "file", pattern })),
    initializationOptions: init,
    outputChannel: out,
    errorHandler: {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
      closed: (): CloseHandlerResult => {
        const restart = policy.crashed();
        const message = policy.message(restart);
        if (restart) void api.showWarningMessage(message);
        else void api.showErrorMessage(message, "Show Log").then((a) => a && out.show());
        return { action: restart ? CloseAction.Restart : CloseAction.DoNotRestart, handled: true };
      },
    },
  };
  const client = new LanguageClient("piSessions", "pi-server", server, options);
  // tells the server which tools this editor runs for it (pi/executeTool)
  client.registerFeature({
    fillClientCapabilities: (caps) => {
      caps.experimental = { ...(caps.experimental as object | undefined), piTools: { tools } };
    },
    initialize: () => {},
    getState: () => ({ kind: "static" }),
    clear: () => {},
  });
  const readyListeners: (() => void)[] = [];
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) for (const l of readyListeners) l();
  });
  out.appendLine(`starting ${cmd.command} ${cmd.args.join(" ")} (${cmd.how})`);
  await client.start();
  const caps = client.initializeResult?.capabilities.experimental as { piSessions?: { protocolVersion?: number } } | undefined;
  if (caps?.piSessions?.protocolVersion !== 1)
    void api.showWarningMessage(`pi-server speaks protocol ${caps?.piSessions?.protocolVersion ?? "unknown"}; this extension expects 1.`);
  return {
    // a trailing undefined would be sent as a second positional parameter
    request: (method, params, token) =>
      token ? client.sendRequest(method, params, token as vscode.CancellationToken) : client.sendRequest(method, params),
    onNotification: (method, handler) => client.onNotification(method, handler),
    onRequest: (method, handler) => client.onRequest(method, (params, token) => handler(params, token)),
    onReady: (listener) => {
      readyListeners.push(listener);
    },
    stop: () => client.stop(),
    restart: () => client.restart(),
  };
}
