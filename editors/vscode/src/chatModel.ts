// A chat on one session: its history at the leaf, then the turns pi-server runs, folded from pi's agent events.
import { contentText as textOf } from "./format";
import type { Rpc } from "./protocol";

export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
  result?: string;
  isError?: boolean;
  running: boolean;
}

export type ChatItem =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text: string; thinking: string; tools: ToolCall[]; stopReason?: string; errorMessage?: string; streaming: boolean }
  | { kind: "note"; text: string }; // summaries, compactions, bash runs: what the model sees as context

export interface AgentEventParams {
  session: string;
  turnId: string;
  event: { type: string; [k: string]: any };
}

type Block = { type: string; text?: string; thinking?: string; id?: string; name?: string; arguments?: unknown };


export class ChatModel {
  items: ChatItem[] = [];
  running = false;
  turnId: string | undefined;
  error: string | undefined;
  private tools = new Map<string, ToolCall>();
  private listeners: (() => void)[] = [];

  constructor(
    private readonly rpc: Rpc,
    public session: string | undefined,
  ) {}

  onChange(listener: () => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }

  /** The conversation as pi would continue it: the context of the current leaf. */
  async loadHistory(): Promise<void> {
    this.items = [];
    this.tools.clear();
    if (this.session) {
      const res = await this.rpc.request<{ messages: any[] }>("pi/buildContext", { session: this.session, format: "agent" });
      for (const m of res.messages) this.addMessage(m, false);
    }
    this.changed();
  }

  /** Starts a turn; a new session (no `session`) needs the project folder. */
  async send(text: string, cwd?: string): Promise<void> {
    this.error = undefined;
    const params: Record<string, unknown> = { text };
    if (this.session) params.session = this.session;
    else params.cwd = cwd;
    this.running = true;
    this.changed();
    try {
      const res = await this.rpc.request<{ turnId: string; session: string }>("pi/prompt", params);
      this.turnId = res.turnId;
      this.session = res.session;
      this.changed();
    } catch (err) {
      this.running = false;
      this.changed();
      throw err;
    }
  }

  async abort(): Promise<void> {
    if (this.session && this.running) await this.rpc.request("pi/abort", { session: this.session });
  }

  /** Folds one `pi/agentEvent` into the items; events of other sessions are ignored. */
  apply(p: AgentEventParams): void {
    if (!this.session && this.running) this.session = p.session; // a new session's events can precede pi/prompt's reply
    if (p.session !== this.session) return;
    const e = p.event;
    switch (e.type) {
      case "agent_start":
        this.running = true;
        this.turnId = p.turnId;
        break;
      case "message_start":
        this.addMessage(e.message, true);
        break;
      case "message_update":
      case "message_end":
        if (e.message?.role === "assistant") this.updateAssistant(e.message, e.type === "message_update");
        break;
      case "tool_execution_start": {
        const t = this.tools.get(e.toolCallId);
        if (t) t.running = true;
        break;
      }
      case "tool_execution_end": {
        const t = this.tools.get(e.toolCallId);
        if (t) {
          t.running = false;
          t.isError = !!e.isError;
          t.result = textOf(e.result?.content) || (typeof e.result === "string" ? e.result : "");
        }
        break;
      }
      case "agent_end":
        this.running = false;
        for (const item of this.items) if (item.kind === "assistant") item.streaming = false;
        break;
      default:
        return; // turn_start, turn_end, tool_execution_update: nothing new to show
    }
    this.changed();
  }

  private addMessage(m: any, live: boolean): void {
    switch (m?.role) {
      case "user":
        this.items.push({ kind: "user", text: textOf(m.content) });
        break;
      case "assistant":
        this.items.push({ kind: "assistant", text: "", thinking: "", tools: [], streaming: live });
        this.updateAssistant(m, live);
        break;
      case "toolResult": {
        const t = this.tools.get(m.toolCallId);
        if (t) {
          t.result = textOf(m.content);
          t.isError = !!m.isError;
          t.running = false;
        }
        break;
      }
      case "branchSummary":
        this.items.push({ kind: "note", text: `Branch summary: ${m.summary ?? ""}` });
        break;
      case "compactionSummary":
        this.items.push({ kind: "note", text: `Compacted context: ${m.summary ?? ""}` });
        break;
      case "bashExecution":
        this.items.push({ kind: "note", text: `$ ${m.command ?? ""}\n${m.output ?? ""}` });
        break;
      case "custom":
        if (m.display !== false) this.items.push({ kind: "note", text: textOf(m.content) });
        break;
    }
  }

  /** Replaces the last assistant item with the message as it stands (pi sends the whole partial message each update). */
  private updateAssistant(m: any, streaming: boolean): void {
    let item = this.items.at(-1);
    if (!item || item.kind !== "assistant") {
      item = { kind: "assistant", text: "", thinking: "", tools: [], streaming };
      this.items.push(item);
    }
    const blocks: Block[] = Array.isArray(m.content) ? m.content : [];
    item.text = blocks.filter((b) => b.type === "text").map((b) => b.text ?? "").join("");
    item.thinking = blocks.filter((b) => b.type === "thinking").map((b) => b.thinking ?? "").join("\n");
    item.tools = blocks
      .filter((b) => b.type === "toolCall" && b.id)
      .map((b) => {
        let t = this.tools.get(b.id as string);
        if (!t) this.tools.set(b.id as string, (t = { id: b.id as string, name: b.name ?? "", args: b.arguments, running: false }));
        t.args = b.arguments;
        return t;
      });
    item.stopReason = m.stopReason;
    item.errorMessage = m.errorMessage;
    item.streaming = streaming;
  }
}
