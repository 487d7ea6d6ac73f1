// Which process to start: the configured command, else `pi-server` on PATH, else `python -m pi_server`.
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

export interface ServerSettings {
  path?: string; // the pi-server executable (or any command); empty: look it up
  args?: string[]; // extra arguments after the command
  python?: string; // interpreter for `-m pi_server` (the selected Python when empty)
  sessionDirs?: string[];
  stateDir?: string;
}

export interface ServerCommand {
  command: string;
  args: string[];
  how: "setting" | "path" | "python";
}

export function findOnPath(name: string, pathVar: string | undefined = process.env.PATH): string | undefined {
  for (const dir of (pathVar ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export function resolveServer(
  s: ServerSettings,
  selectedPython: string | undefined,
  pathVar: string | undefined = process.env.PATH,
): ServerCommand {
  const flags = [...(s.sessionDirs ?? []).flatMap((d) => ["--sessions-dir", d]), ...(s.stateDir ? ["--state-dir", s.stateDir] : [])];
  const extra = [...(s.args ?? []), ...flags];
  if (s.path?.trim()) return { command: s.path.trim(), args: extra, how: "setting" };
  const onPath = findOnPath("pi-server", pathVar);
  if (onPath) return { command: onPath, args: extra, how: "path" };
  const python = s.python?.trim() || selectedPython || (findOnPath("python3", pathVar) ? "python3" : "python");
  return { command: python, args: ["-m", "pi_server", ...extra], how: "python" };
}

/** Why the server did not start, where it was looked for, and how to point the editor at it. */
export function startFailure(cmd: ServerCommand, cause: string, pathVar: string | undefined = process.env.PATH): string {
  const found =
    cmd.how === "setting"
      ? `'${cmd.command}' (from 'piSessions.server.path')`
      : cmd.how === "path"
        ? `'${cmd.command}' (found on PATH)`
        : `'${cmd.command} -m pi_server' (no pi-server on PATH: ${(pathVar ?? "").split(delimiter).filter(Boolean).join(delimiter) || "empty"})`;
  const fix =
    cmd.how === "setting"
      ? "Check 'piSessions.server.path'."
      : "Install pi-server (pipx install pi-server, or pip install pi-server in a venv) and set 'piSessions.server.path' to its full path, e.g. ~/.local/bin/pi-server.";
  return `pi-server could not start: ${cause}. Tried ${found}. ${fix}`;
}
