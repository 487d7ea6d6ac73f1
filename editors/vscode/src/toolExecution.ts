// pi/executeTool: edit, write and bash run here, in the session's cwd, when the user allows them.
import * as os from "node:os";
import type { Cancel, Connection } from "./protocol";
import type { SessionsModel } from "./sessionsModel";
import { describe, EDITOR_TOOLS, type EditorTool, runTool, type ToolPolicy, type ToolRequest, type ToolResult } from "./tools";
import * as api from "./vscodeapi";

const refuse = (text: string): ToolResult => ({ content: [{ type: "text", text }], isError: true });

export function registerToolExecution(
  rpc: Connection,
  sessions: SessionsModel,
  reloadSessions: () => Promise<void>,
  policy: (tool: EditorTool) => ToolPolicy,
): { dispose(): unknown } | undefined {
  const allowed = new Set<string>(); // "session\0tool" allowed for the rest of this window
  return rpc.onRequest?.("pi/executeTool", async (req: ToolRequest, token: Cancel) => {
    const name = req.name as EditorTool;
    if (!EDITOR_TOOLS.includes(name) || policy(name) === "off") return refuse(`Tool ${req.name} is not available in this editor`);
    let cwd = sessions.find(req.session)?.cwd;
    if (!cwd) {
      await reloadSessions();
      cwd = sessions.find(req.session)?.cwd;
    }
    if (!cwd) return refuse("Unknown session");
    const key = `${req.session}\0${name}`;
    if (policy(name) === "ask" && !allowed.has(key)) {
      const answer = await api.askModal(`pi wants to ${describe(req)} in ${cwd}.`, "Allow", "Allow for this session");
      if (answer === "Allow for this session") allowed.add(key);
      else if (answer !== "Allow") return refuse("The user refused this tool call.");
    }
    const abort = new AbortController();
    token.onCancellationRequested(() => abort.abort());
    return runTool(req, cwd, os.homedir(), abort.signal);
  });
}
