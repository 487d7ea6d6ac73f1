// A server that cannot start: one error naming the cause, with "Show Logs"; the commands exist and Restart Server starts it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import type * as vscode from "vscode";
import { type Api, activate } from "../src/extension";
import { startFailure } from "../src/serverCommand";
import { type Sandbox, sandbox, type Server, startServer, until } from "./server";
import * as stub from "./stub/vscode";

let box: Sandbox;
let server: Server | undefined;
let api: Api;
let attempts = 0;
const subscriptions: { dispose(): unknown }[] = [];

before(async () => {
  box = sandbox();
  api = await activate({ subscriptions } as unknown as vscode.ExtensionContext, {
    connect: async () => {
      attempts++;
      if (attempts === 1) throw new Error("pi-server: error: unrecognized arguments: --stdio");
      return (server = await startServer(box));
    },
  });
});
after(async () => {
  for (const s of subscriptions) await s.dispose();
  if (server) await until(() => server!.proc.exitCode !== null || server!.proc.signalCode !== null, 10_000, "the server to stop");
  box.dispose();
});

test("a failed start is one error naming the cause, with Show Logs; every command is registered", async () => {
  const errors = stub.recorded.messages.filter((m) => m.kind === "error" || m.kind === "warning");
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.match(errors[0].message, /^pi-server could not start: .*unrecognized arguments: --stdio/);
  assert.deepEqual(errors[0].actions, ["Show Logs"]);
  const pkg = JSON.parse(readFileSync(`${__dirname}/../../package.json`, "utf8"));
  const contributed: string[] = pkg.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual(stub.commands.registered().sort(), [...contributed].sort());
  assert.match(stub.treeView("piSessions.sessions").message ?? "", /Restart Server/);
});

test("a command while the server is down says why instead of hanging", async () => {
  stub.resetRecorded();
  await stub.commands.executeCommand("piSessions.refresh");
  assert.match(stub.recorded.messages[0].message, /pi-server is not running: .*--stdio.*Restart Server/);
});

test("Restart Server starts it, and the views fill", async () => {
  stub.resetRecorded();
  await stub.commands.executeCommand("piSessions.restartServer");
  assert.equal(attempts, 2);
  assert.deepEqual(stub.recorded.messages, []);
  assert.ok(api.sessions.sessions.length > 0);
  assert.equal(stub.treeView("piSessions.sessions").message, undefined);
});

test("the not-found error says where pi-server was looked for and how to set its path", () => {
  const msg = startFailure({ command: "python3", args: ["-m", "pi_server"], how: "python" }, "No module named pi_server", "/usr/bin:/bin");
  assert.match(msg, /No module named pi_server/);
  assert.match(msg, /no pi-server on PATH: \/usr\/bin:\/bin/);
  assert.match(msg, /pipx install pi-server/);
  assert.match(msg, /'piSessions\.server\.path'/);
  assert.match(startFailure({ command: "/opt/x", args: [], how: "setting" }, "spawn /opt/x ENOENT"), /from 'piSessions.server.path'/);
});
