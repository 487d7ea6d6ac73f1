// The prompts the actions ask through (`Ui`), drawn with the editor's quick picks, input boxes and notifications.
import type { Ui } from "./actions";
import { errorMessage } from "./protocol";
import * as api from "./vscodeapi";

export function editorUi(openSession: (session: string) => Promise<void>): Ui {
  return {
    async pick(items, opts) {
      const picked = await api.showQuickPick(
        items.map((i) => ({ label: i.label, description: i.description, detail: i.detail, value: i.value })),
        { title: opts.title, placeHolder: opts.placeholder },
      );
      return picked?.value;
    },
    input: (opts) =>
      Promise.resolve(api.showInputBox({ title: opts.title, prompt: opts.prompt, value: opts.value, placeHolder: opts.placeholder })),
    info: (message) => void api.showInformationMessage(message),
    progress: (title, task) => Promise.resolve(api.withProgress(title, task)),
    copy: (text) => Promise.resolve(api.writeClipboard(text)),
    async showText(text, language) {
      await api.showTextDocument(await api.openUntitled(text, language), { preview: false });
    },
    async resubmit(text) {
      await api.writeClipboard(text);
      await api.showTextDocument(await api.openUntitled(text, "markdown"), { preview: false });
      void api.showInformationMessage("The message is in a new editor and on the clipboard, ready to send again.");
    },
    openSession,
  };
}

export function showError(err: unknown): void {
  void api.showErrorMessage(errorMessage(err));
}

/** The user dismissed a prompt: the command stops without a message. */
export class CancelledError extends Error {
  readonly code = -32800;
}

/** A request or prompt the user cancelled (JSON-RPC RequestCancelled): nothing to report. */
export function isCancel(err: unknown): boolean {
  return !!err && typeof err === "object" && (err as { code?: number }).code === -32800;
}

export function debounce(fn: () => void, ms: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      fn();
    }, ms);
  };
}
