// Makes `require("vscode")` load the stub, as the extension host would provide the real module.
import Module = require("node:module");
import * as path from "node:path";

const stub = path.join(__dirname, "vscode.js");
const mod = Module as unknown as { _resolveFilename: (req: string, ...rest: unknown[]) => string };
const original = mod._resolveFilename;
mod._resolveFilename = (request: string, ...rest: unknown[]) => (request === "vscode" ? stub : original(request, ...rest));
