// Chats: one panel per session, bound to its current leaf; a new-session chat waits for its file.
import { type AgentEventParams, ChatModel } from "./chatModel";
import { ChatPanel } from "./chatPanel";
import { oneLine, sessionTitle } from "./format";
import type { Rpc } from "./protocol";
import type { SessionsModel } from "./sessionsModel";

const NEW = "pi: new session";

export class Chats {
  readonly bySession = new Map<string, ChatPanel>();
  private readonly unbound = new Set<ChatPanel>(); // new-session chats waiting for their file

  constructor(
    private readonly rpc: Rpc,
    private readonly sessions: SessionsModel,
  ) {}

  /** Shows the session's chat (a new session's when `session` is undefined), loading its history. */
  async open(session: string | undefined, cwd: string | undefined): Promise<ChatPanel> {
    const existing = session ? this.bySession.get(session) : undefined;
    if (existing) {
      existing.panel.reveal();
      await existing.model.loadHistory();
      return existing;
    }
    const info = session ? this.sessions.find(session) : undefined;
    const model = new ChatModel(this.rpc, session);
    const panel = new ChatPanel(model, info ? `pi: ${oneLine(sessionTitle(info), 30)}` : NEW, cwd ?? info?.cwd);
    const key = () => model.session ?? "";
    if (session) this.bySession.set(session, panel);
    else this.unbound.add(panel);
    model.onChange(() => {
      if (model.session && !this.bySession.has(model.session)) {
        this.bySession.set(model.session, panel); // a new session got its file
        this.unbound.delete(panel);
      }
      // once it has a file, a new session is named by its first message, as in the Sessions view
      const first = model.session && panel.panel.title === NEW ? model.items.find((i) => i.kind === "user") : undefined;
      if (first?.kind === "user") panel.panel.title = `pi: ${oneLine(first.text, 30)}`;
    });
    panel.panel.onDidDispose(() => {
      this.bySession.delete(key());
      this.unbound.delete(panel);
    });
    await model.loadHistory();
    return panel;
  }

  /** Routes one of pi's agent events to the chat of its session (or the new chat whose turn is running). */
  route(p: AgentEventParams): void {
    const chat = this.bySession.get(p.session) ?? [...this.unbound].find((c) => c.model.running && !c.model.session);
    chat?.model.apply(p);
  }
}
