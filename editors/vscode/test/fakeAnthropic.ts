// A loopback fake of the Anthropic Messages API: real HTTP, SSE streams, scripted replies, recorded requests.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type Reply =
  | { text: string; delayMs?: number }
  | { tool: { id: string; name: string; input: unknown }; text?: string }
  | { status: number; error: string };

export interface FakeAnthropic {
  url: string;
  replies: Reply[];
  requests: any[];
  close(): Promise<void>;
}

function sse(events: [string, object][]): string {
  return events.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join("");
}

function stream(reply: Exclude<Reply, { status: number }>): [string, object][] {
  const start: [string, object] = [
    "message_start",
    { message: { id: "msg_fake", type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } },
  ];
  const out: [string, object][] = [start];
  let index = 0;
  const text = "text" in reply ? reply.text : undefined;
  if (text !== undefined) {
    out.push(["content_block_start", { index, content_block: { type: "text", text: "" } }]);
    for (let i = 0; i < text.length; i += 6) out.push(["content_block_delta", { index, delta: { type: "text_delta", text: text.slice(i, i + 6) } }]);
    out.push(["content_block_stop", { index }]);
    index++;
  }
  if ("tool" in reply) {
    out.push(["content_block_start", { index, content_block: { type: "tool_use", id: reply.tool.id, name: reply.tool.name, input: {} } }]);
    out.push(["content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.tool.input) } }]);
    out.push(["content_block_stop", { index }]);
  }
  out.push(["message_delta", { delta: { stop_reason: "tool" in reply ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: 9 } }]);
  out.push(["message_stop", {}]);
  return out;
}

export async function fakeAnthropic(): Promise<FakeAnthropic> {
  const fake: FakeAnthropic = { url: "", replies: [], requests: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", async () => {
      fake.requests.push(JSON.parse(body || "{}"));
      const reply = fake.replies.shift() ?? { text: "Done." };
      if ("status" in reply) {
        res.writeHead(reply.status, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "overloaded_error", message: reply.error } }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const ev of stream(reply)) {
        res.write(sse([ev]));
        if ("delayMs" in reply && reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      }
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}
