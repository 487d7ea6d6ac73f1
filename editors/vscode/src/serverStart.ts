// Starts pi-server the way a user's editor finds it: the setting, else `pi-server` on PATH, else `python -m pi_server`.
import * as os from "node:os";
import * as path from "node:path";
import type * as vscode from "vscode";
import type { Connection } from "./protocol";
import { resolveServer, type ServerSettings } from "./serverCommand";
import type { EditorTool } from "./tools";
import * as api from "./vscodeapi";

export async function startServer(
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
  const ext = api.getExtension("ms-python.python");
  try {
    if (ext) {
      const pyApi = ext.isActive ? ext.exports : await ext.activate();
      const env = pyApi?.environments?.getActiveEnvironmentPath?.();
      if (env?.path) return env.path as string;
    }
  } catch {
    // fall back to the setting below
  }
  return api.getConfiguration("python").get<string>("defaultInterpreterPath") || undefined;
}
