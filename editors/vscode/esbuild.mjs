// Bundles the extension into dist/extension.js (vscode-languageclient included; `vscode` is the host's).
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const options = {
  entryPoints: ["src/extension.ts"],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node18",
  outfile: "dist/extension.js",
  external: ["vscode"],
  sourcemap: !production,
  minify: production,
  logLevel: "info",
};
if (process.argv.includes("--watch")) await (await esbuild.context(options)).watch();
else await esbuild.build(options);
