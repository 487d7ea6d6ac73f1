// A session file opened in the editor. A path that is UTF-8 opens as the file itself; a name that is not
// (the server sends it as its `file:` URI) cannot: VS Code decodes a URI's path as UTF-8 and keeps `%E9`
// as those three characters, so no URI names such a file to it ("Unable to resolve nonexistent file"). It opens read-only instead, its bytes read
// here by their path as bytes: `pi-session-file:/<path as shown>?session=<the URI>`.
import { readFile } from "node:fs/promises";
import type * as vscode from "vscode";
import { displayPath, fileUriBytes } from "./format";
import { errorMessage } from "./protocol";
import * as api from "./vscodeapi";

export const SESSION_FILE_SCHEME = "pi-session-file";

export function sessionFileUri(session: string): vscode.Uri {
  if (!fileUriBytes(session)) return api.Uri.file(session);
  const query = new URLSearchParams({ session }).toString();
  return api.Uri.from({ scheme: SESSION_FILE_SCHEME, path: displayPath(session), query });
}

export function registerSessionFileDocuments(): vscode.Disposable {
  return api.registerTextDocumentContentProvider(SESSION_FILE_SCHEME, {
    provideTextDocumentContent: async (uri) => {
      const bytes = fileUriBytes(new URLSearchParams(uri.query).get("session") ?? "");
      if (!bytes) return `// not a session file URI: ${uri.query}\n`;
      try {
        return await readFile(bytes, "utf8");
      } catch (err) {
        return `// ${uri.path}: ${errorMessage(err)}\n`;
      }
    },
  });
}

/** Opens the session's file: the file itself, or (a name that is not UTF-8) its read-only copy. */
export async function openSessionFile(session: string): Promise<void> {
  const doc = await api.openDocument(sessionFileUri(session));
  if (doc.uri.scheme === SESSION_FILE_SCHEME) await api.setTextDocumentLanguage(doc, "jsonl");
  await api.showTextDocument(doc);
}
