// The structure of src/: no import cycle (type imports count too), and only vscodeapi.ts touches `vscode`.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const SRC = path.resolve(__dirname, "..", "..", "src");
const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?[^;]*?\sfrom\s+"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g;

type Edge = { to: string; typeOnly: boolean };

/** Every module of `dir` with what it imports: local modules by file stem, packages by name. */
export function importGraph(dir: string): Map<string, Edge[]> {
  const graph = new Map<string, Edge[]>();
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
    const text = readFileSync(path.join(dir, name), "utf8");
    const edges: Edge[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[3] ?? m[4];
      edges.push({ to: spec.startsWith("./") ? spec.slice(2) : spec, typeOnly: !!m[2] });
    }
    graph.set(name.replace(/\.ts$/, ""), edges);
  }
  return graph;
}

/** The cycles among local modules, each as the path that closes it. */
export function cycles(graph: Map<string, Edge[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const { to } of graph.get(node) ?? []) {
      if (!graph.has(to)) continue; // a package
      if (state.get(to) === "open") found.push([...stack.slice(stack.indexOf(to)), to]);
      else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

test("the cycle check finds a cycle, type-only imports included", () => {
  const g = new Map<string, Edge[]>([
    ["extension", [{ to: "languageClient", typeOnly: false }]],
    ["languageClient", [{ to: "extension", typeOnly: true }, { to: "vscode", typeOnly: false }]],
    ["format", []],
  ]);
  assert.deepEqual(cycles(g), [["extension", "languageClient", "extension"]]);
  g.set("languageClient", [{ to: "vscode", typeOnly: false }]);
  assert.deepEqual(cycles(g), []);
});

test("src/ has no import cycle", () => {
  const graph = importGraph(SRC);
  assert.ok(graph.size > 10, `read the modules of ${SRC}`);
  assert.ok(graph.get("extension")!.some((e) => e.to === "commands"), "the parser sees imports");
  assert.ok(graph.get("serverStart")!.some((e) => e.to === "languageClient"), "the parser sees dynamic imports");
  assert.deepEqual(cycles(graph), []);
});

test("only vscodeapi.ts uses the vscode namespace at run time; the others import its types only", () => {
  const graph = importGraph(SRC);
  const users = [...graph].filter(([, edges]) => edges.some((e) => e.to === "vscode" && !e.typeOnly)).map(([m]) => m);
  assert.deepEqual(users, ["vscodeapi"]);
});
