// Context edits from the Tree view (pi 1.6.0's context_edit): which rows are left out of the context or
// replaced, and the omit / restore requests. No vscode here, so the flows run the same in tests.
import type { Ui } from "./actions";
import type { ContextEdit, Rpc, TreeRow } from "./protocol";

/** "omitted": left out of the context; "replaced": sent with other content than the entry's own. */
export type EditState = "omitted" | "replaced";

const MESSAGE_ROLES = new Set(["user", "assistant", "toolResult"]);

/** Entries pi's appendContextEdit accepts as targets: user, assistant and tool-result messages, custom messages. */
export function editable(row: TreeRow): boolean {
  return row.type === "custom_message" || (row.type === "message" && MESSAGE_ROLES.has(row.role ?? ""));
}

/** The content pi sends for an entry when no edit is in force. */
function originalContent(entry: any): unknown {
  return entry?.type === "custom_message" ? entry.content : entry?.message?.content;
}

/** The edits in force on the path to the session's leaf, by target. A replacement equal to the entry's own
 * content is a restore, so that row counts as unedited. */
export async function editStates(rpc: Rpc, session: string): Promise<Map<string, EditState>> {
  const { edits } = await rpc.request<{ edits: ContextEdit[] }>("pi/getContextEdits", { session });
  const states = await Promise.all(
    edits.map(async (e): Promise<[string, EditState | undefined]> => {
      if (e.replacement === null) return [e.targetId, "omitted"];
      const { entry } = await rpc.request<{ entry: unknown }>("pi/getEntry", { session, id: e.targetId });
      const same = JSON.stringify(originalContent(entry)) === JSON.stringify(e.replacement.content);
      return [e.targetId, same ? undefined : "replaced"];
    }),
  );
  return new Map(states.filter((s): s is [string, EditState] => s[1] !== undefined));
}

interface WriteResult {
  entryId: string;
  queued: boolean;
}

/** Leaves the row's message out of the contexts after the session's leaf (a context_edit with no replacement). */
export async function omit(rpc: Rpc, ui: Ui, session: string, row: TreeRow): Promise<WriteResult> {
  const res = await rpc.request<WriteResult>("pi/editContext", { session, targetId: row.id, replacement: null });
  if (res.queued) ui.info("pi is mid-turn in this session: the edit is queued and lands when the turn ends.");
  return res;
}

/** Puts the row's message back as it was written: an edit whose replacement is the entry's own content
 * (the file stays append-only, so the earlier edit stays in it). */
export async function restore(rpc: Rpc, ui: Ui, session: string, row: TreeRow): Promise<WriteResult> {
  const { entry } = await rpc.request<{ entry: unknown }>("pi/getEntry", { session, id: row.id });
  const content = originalContent(entry);
  const res = await rpc.request<WriteResult>("pi/editContext", { session, targetId: row.id, replacement: { content } });
  if (res.queued) ui.info("pi is mid-turn in this session: the edit is queued and lands when the turn ends.");
  return res;
}
