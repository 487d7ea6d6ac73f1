// Read-only markdown documents of the system prompt and tools at a leaf:
// `pi-system:/System Prompt and Tools.md?session=<file>&leaf=<id>` (no leaf: the session's current leaf).
import type * as vscode from "vscode";
import { type ContextResult, errorMessage, type Rpc, type SystemPrompt } from "./protocol";
import * as api from "./vscodeapi";

export const SYSTEM_SCHEME = "pi-system";

export function systemUri(session: string, leafId: string | undefined): vscode.Uri {
  const q = new URLSearchParams({ session });
  if (leafId !== undefined) q.set("leaf", leafId);
  return api.Uri.from({ scheme: SYSTEM_SCHEME, path: "/System Prompt and Tools.md", query: q.toString() });
}

/** A fence longer than any backtick run in the text, so the text shows verbatim. */
function fenced(text: string, language: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text}\n${fence}\n`;
}

function modelName(model: unknown): string {
  if (model && typeof model === "object") {
    const m = model as { provider?: string; modelId?: string; id?: string };
    return [m.provider, m.modelId ?? m.id].filter(Boolean).join("/");
  }
  return model ? String(model) : "no model";
}

/** The system prompt and tool declarations of a pi/buildContext answer, as markdown. */
export function systemMarkdown(res: Pick<ContextResult, "leafId" | "model" | "thinkingLevel" | "system">): string {
  const head = `# System prompt and tools\n\nAt entry \`${res.leafId ?? "(before the first entry)"}\` · ${modelName(res.model)} · thinking ${res.thinkingLevel}\n\n`;
  const sys: SystemPrompt | null = res.system;
  if (!sys) {
    return `${head}No system prompt is recorded on this path: pi 1.6.0 writes one before a session's first message; files written by older pi have none.\n`;
  }
  const parts = [head, "## System prompt\n\n", fenced(sys.text, "text"), `\n## Tools (${sys.tools.length})\n`];
  for (const tool of sys.tools) {
    parts.push(`\n### ${tool.name}\n\n`);
    if (tool.description) parts.push(`${tool.description}\n\n`);
    if (tool.parameters !== undefined) parts.push(fenced(JSON.stringify(tool.parameters, null, 2), "json"));
  }
  return parts.join("");
}

export function registerSystemDocuments(rpc: Rpc): vscode.Disposable {
  return api.registerTextDocumentContentProvider(SYSTEM_SCHEME, {
    provideTextDocumentContent: async (uri) => {
      const q = new URLSearchParams(uri.query);
      const params: Record<string, unknown> = { session: q.get("session") ?? "", format: "llm" };
      if (q.has("leaf")) params.leafId = q.get("leaf");
      try {
        return systemMarkdown(await rpc.request<ContextResult>("pi/buildContext", params));
      } catch (err) {
        return `# System prompt and tools\n\n${errorMessage(err)}\n`;
      }
    },
  });
}

export async function openSystem(session: string, leafId: string | undefined): Promise<void> {
  const doc = await api.openDocument(systemUri(session, leafId));
  await api.setTextDocumentLanguage(doc, "markdown");
  await api.showTextDocument(doc, { preview: true });
}
