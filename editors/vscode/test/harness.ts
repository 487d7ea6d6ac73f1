// The extension activated on the stub of the vscode API and connected to a real server over a sandbox
// store: the hooks every such test file needs, and the Tree view's rows.
import { after, before, beforeEach } from "node:test";
import type * as vscode from "vscode";
import { type Api, activate } from "../src/extension";
import type { TreeElement } from "../src/views";
import { type Sandbox, sandbox, type Server, startServer, until } from "./server";
import * as stub from "./stub/vscode";

export interface Harness {
  box: Sandbox;
  server: Server;
  api: Api;
}

/** Registers the file's hooks; `prepare` puts files in the sandbox before the extension starts. */
export function activated(prepare?: (box: Sandbox) => void): Harness {
  const h = {} as Harness;
  const subscriptions: { dispose(): unknown }[] = [];
  before(async () => {
    h.box = sandbox();
    prepare?.(h.box);
    h.api = await activate({ subscriptions } as unknown as vscode.ExtensionContext, {
      connect: async () => (h.server = await startServer(h.box)),
    });
  });
  after(async () => {
    for (const s of subscriptions) await s.dispose();
    await until(() => h.server.proc.exitCode !== null || h.server.proc.signalCode !== null, 10_000, "the server to stop");
    h.box.dispose();
  });
  beforeEach(() => stub.resetRecorded());
  return h;
}

/** Every row of the Tree view, depth first. */
export function allRows(parent?: TreeElement): TreeElement[] {
  return stub.treeView<TreeElement>("piSessions.tree").provider.getChildren(parent).flatMap((el: TreeElement) => [el, ...allRows(el)]);
}
