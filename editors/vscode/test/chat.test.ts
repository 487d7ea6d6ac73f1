// Chats: the webview's prompts run real turns in pi-server against a loopback Anthropic fake.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, test } from "node:test";
import type * as vscode from "vscode";
import type { ChatItem } from "../src/chatModel";
import { type Api, activate } from "../src/extension";
import { resolveInside, runTool, tail } from "../src/tools";
import { type FakeAnthropic, fakeAnthropic } from "./fakeAnthropic";
import { file, type Sandbox, sandbox, type Server, startServer, until } from "./server";
import * as stub from "./stub/vscode";

let box: Sandbox;
let server: Server;
let api: Api;
let fake: FakeAnthropic;
let project: string;
const subscriptions: { dispose(): unknown }[] = [];

before(async () => {
  box = sandbox();
  project = path.join(box.root, "project");
  mkdirSync(project);
  writeFileSync(path.join(project, "notes.md"), "# Notes\nfirst line\n");
  fake = await fakeAnthropic();
  api = await activate({ subscriptions } as unknown as vscode.ExtensionContext, {
    connect: async (_init, tools) =>
      (server = await startServer(box, { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: fake.url, PI_SERVER_RETRY_BASE_MS: "5" }, tools)),
  });
});
after(async () => {
  for (const s of subscriptions) await s.dispose();
  await fake.close();
  box.dispose();
});
beforeEach(() => {
  stub.resetRecorded();
  fake.requests.length = 0;
});

const lastPanel = () => stub.panels.at(-1)!;
const items = (): ChatItem[] => lastPanel().state?.items ?? [];
const idle = () => lastPanel().state && !lastPanel().state.running && items().length > 0;
/** Waits for the chat to go idle with an item matching `pred`; a timeout says what the page showed. */
async function turnDone(pred: (i: ChatItem) => boolean): Promise<void> {
  try {
    await until(() => idle() && items().some(pred), 20_000, "the turn");
  } catch (err) {
    const seen = { items: items(), shown: stub.recorded.messages, modelCalls: fake.requests.length };
    throw new Error(`${(err as Error).message}: ${JSON.stringify(seen)}`);
  }
}
const lines = (f: string) => readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

test("a new chat in a folder: a read and a write round trip, the write allowed by the user", async () => {
  stub.answers.inputs.push(project);
  await stub.commands.executeCommand("piSessions.newChat");
  fake.replies.push(
    { tool: { id: "toolu_1", name: "read", input: { path: "notes.md" } } },
    { tool: { id: "toolu_2", name: "write", input: { path: "out/hello.txt", content: "hello" } } },
    { text: "I read the notes and wrote hello.txt." },
  );
  stub.answers.warnings.push("Allow");
  lastPanel().fromPage.fire({ type: "send", text: "Read notes.md, then write out/hello.txt." });
  await turnDone((i) => i.kind === "assistant" && i.text.includes("wrote hello"));
  assert.equal(readFileSync(path.join(project, "out", "hello.txt"), "utf8"), "hello");
  const tools = items().flatMap((i) => (i.kind === "assistant" ? i.tools : []));
  assert.deepEqual(tools.map((t) => [t.name, t.isError]), [["read", false], ["write", false]]);
  assert.match(tools[0].result!, /first line/);
  assert.equal(tools[1].result, "Successfully wrote 5 bytes to out/hello.txt");
  assert.match(stub.recorded.messages.find((m) => m.kind === "warning")!.message, /write 5 bytes to out\/hello.txt/);
  // the model was offered the editor's tools, and saw the write's result
  assert.deepEqual(fake.requests[0].tools.map((t: { name: string }) => t.name), ["read", "bash", "edit", "write", "ls", "grep", "find"]);
  const lastReq = fake.requests.at(-1);
  assert.ok(JSON.stringify(lastReq.messages).includes("Successfully wrote 5 bytes"));
  // the session file the server wrote for this folder holds the turn
  const session = [...api.chats.keys()].find((k) => k.includes(path.basename(project)) || lines(k)[0].cwd === project)!;
  assert.ok(session, "the chat is bound to its new session");
  const written = lines(session);
  assert.equal(written[0].cwd, project);
  // as pi 1.6.0: the system prompt and tools as a message before the first user message
  assert.deepEqual(
    written.filter((e) => e.type === "message").map((e) => e.message.role),
    ["system", "user", "assistant", "toolResult", "assistant", "toolResult", "assistant"],
  );
});

test("a new chat's tab is named after its first message once its file exists", async () => {
  const panel = stub.panels.find((p) => p.title.startsWith("pi: Read notes.md"));
  assert.ok(panel, `titles: ${stub.panels.map((p) => p.title).join(", ")}`);
});

test("a refused tool is an error result for the model, and nothing runs", async () => {
  const session = [...api.chats.keys()][0];
  await stub.commands.executeCommand("piSessions.openChat", session);
  fake.replies.push({ tool: { id: "toolu_3", name: "bash", input: { command: "touch refused.txt" } } }, { text: "Understood." });
  stub.answers.warnings.push(undefined); // the dialog dismissed
  lastPanel().fromPage.fire({ type: "send", text: "Touch a file." });
  await turnDone((i) => i.kind === "assistant" && i.text === "Understood.");
  const bash = items().flatMap((i) => (i.kind === "assistant" ? i.tools : [])).find((t) => t.id === "toolu_3")!;
  assert.equal(bash.isError, true);
  assert.equal(bash.result, "The user refused this tool call.");
  assert.throws(() => readFileSync(path.join(project, "refused.txt")));
});

test("stop mid-stream: the message is written aborted", async () => {
  const session = [...api.chats.keys()][0];
  await stub.commands.executeCommand("piSessions.openChat", session);
  fake.replies.push({ text: "A long answer that streams slowly, word by word, until it is stopped.", delayMs: 150 });
  lastPanel().fromPage.fire({ type: "send", text: "Tell me a long story." });
  await until(() => items().some((i) => i.kind === "assistant" && i.streaming && i.text.length > 0), 20_000, "streaming text");
  lastPanel().fromPage.fire({ type: "abort" });
  await until(() => idle(), 20_000, "the turn to stop");
  const last = items().at(-1)!;
  assert.equal(last.kind === "assistant" && last.stopReason, "aborted");
  const entry = lines(session).filter((e) => e.type === "message").at(-1);
  assert.equal(entry.message.stopReason, "aborted");
});

test("opening a chat on an existing session shows its context at the leaf", async () => {
  const shop = file(box, "01a22bae");
  await stub.commands.executeCommand("piSessions.openChat", shop);
  const shown = items();
  const ctx = await server.request<{ messages: any[] }>("pi/buildContext", { session: shop });
  assert.equal(shown.filter((i) => i.kind === "user").length, ctx.messages.filter((m) => m.role === "user").length);
  assert.ok(shown.some((i) => i.kind === "note" && i.text.startsWith("Compacted context")));
});

test("editor tools: pi's results, and paths outside the folder refused", async () => {
  const cwd = project;
  writeFileSync(path.join(cwd, "a.txt"), "one\r\ntwo\r\nthree\r\n");
  const ok = await runTool({ session: "s", toolCallId: "t", name: "edit", arguments: { path: "a.txt", edits: [{ oldText: "two", newText: "2" }] } }, cwd, box.home);
  assert.deepEqual(ok.content, [{ type: "text", text: "Successfully replaced 1 block(s) in a.txt." }]);
  assert.equal(readFileSync(path.join(cwd, "a.txt"), "utf8"), "one\r\n2\r\nthree\r\n");
  const missing = await runTool({ session: "s", toolCallId: "t", name: "edit", arguments: { path: "a.txt", edits: [{ oldText: "zzz", newText: "" }] } }, cwd, box.home);
  assert.equal(missing.isError, true);
  const fail = await runTool({ session: "s", toolCallId: "t", name: "bash", arguments: { command: "echo out; exit 3" } }, cwd, box.home);
  assert.deepEqual(fail, { content: [{ type: "text", text: "out\n\nCommand exited with code 3" }], isError: true });
  await assert.rejects(resolveInside(cwd, "../escape.txt", box.home), /outside/);
  await assert.rejects(resolveInside(cwd, "~/x", box.home), /outside/);
  const outside = await runTool({ session: "s", toolCallId: "t", name: "write", arguments: { path: "/tmp/pi-escape.txt", content: "x" } }, cwd, box.home);
  assert.equal(outside.isError, true);
  assert.equal(tail(Array.from({ length: 2500 }, (_, i) => `${i}`).join("\n")).text.split("\n").length, 2000);
});
