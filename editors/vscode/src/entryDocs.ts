// Read-only JSON documents for entries: `pi-entry:/<id>.json?session=<file>`.
import type * as vscode from "vscode";
import { entryJson } from "./actions";
import { errorMessage, type Rpc } from "./protocol";
import * as api from "./vscodeapi";

export const ENTRY_SCHEME = "pi-entry";

export function entryUri(session: string, id: string): vscode.Uri {
  return api.Uri.from({ scheme: ENTRY_SCHEME, path: `/${id}.json`, query: new URLSearchParams({ session }).toString() });
}

export function parseEntryUri(uri: vscode.Uri): { session: string; id: string } {
  const session = new URLSearchParams(uri.query).get("session") ?? "";
  const id = uri.path.replace(/^\//, "").replace(/\.json$/, "");
  return { session, id };
}

export function registerEntryDocuments(rpc: Rpc): vscode.Disposable {
  return api.registerTextDocumentContentProvider(ENTRY_SCHEME, {
    provideTextDocumentContent: async (uri) => {
      const { session, id } = parseEntryUri(uri);
      try {
        return await entryJson(rpc, session, id);
      } catch (err) {
        return `// ${errorMessage(err)}\n`;
      }
    },
  });
}

export async function openEntry(session: string, id: string): Promise<void> {
  const doc = await api.openDocument(entryUri(session, id));
  await api.setTextDocumentLanguage(doc, "json");
  await api.showTextDocument(doc, { preview: true, preserveFocus: true });
}
