// The Sessions view's model: sessions grouped by project folder, forks nested under the session they came from.
import type { LiveInfo, Rpc, SessionInfo } from "./protocol";

export interface SessionNode {
  info: SessionInfo;
  forks: SessionNode[];
}

export interface ProjectGroup {
  cwd: string;
  sessions: SessionNode[];
  modified: string;
}

/** Groups by cwd (most recently touched project first); a fork goes under its `parentSession` when that is listed. */
export function groupSessions(list: SessionInfo[]): ProjectGroup[] {
  const nodes = new Map<string, SessionNode>();
  for (const info of list) nodes.set(info.session, { info, forks: [] });
  const roots: SessionNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.info.parentSession ? nodes.get(node.info.parentSession) : undefined;
    if (parent && !descends(parent, node, nodes)) parent.forks.push(node);
    else roots.push(node);
  }
  const groups = new Map<string, ProjectGroup>();
  for (const node of roots) {
    let g = groups.get(node.info.cwd);
    if (!g) groups.set(node.info.cwd, (g = { cwd: node.info.cwd, sessions: [], modified: node.info.modified }));
    g.sessions.push(node);
    if (node.info.modified > g.modified) g.modified = node.info.modified;
  }
  const newest = (a: { info: SessionInfo }, b: { info: SessionInfo }) => b.info.modified.localeCompare(a.info.modified);
  const sortDeep = (ns: SessionNode[]) => {
    ns.sort(newest);
    for (const n of ns) sortDeep(n.forks);
  };
  const out = [...groups.values()];
  for (const g of out) sortDeep(g.sessions);
  return out.sort((a, b) => b.modified.localeCompare(a.modified));
}

/** True when `parent` already sits under `child`: headers can name each other, and a cycle must not nest. */
function descends(parent: SessionNode, child: SessionNode, nodes: Map<string, SessionNode>): boolean {
  const seen = new Set<string>();
  let cur: SessionNode | undefined = parent;
  while (cur && !seen.has(cur.info.session)) {
    if (cur === child) return true;
    seen.add(cur.info.session);
    cur = cur.info.parentSession ? nodes.get(cur.info.parentSession) : undefined;
  }
  return false;
}

export class SessionsModel {
  query = "";
  groups: ProjectGroup[] = [];
  sessions: SessionInfo[] = [];
  private loading: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly rpc: Rpc,
    private readonly limit?: number,
  ) {}

  /** Reloads the list; calls while a load runs coalesce into one more load. */
  async load(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          const params: { query?: string; limit?: number } = {};
          if (this.query) params.query = this.query;
          if (this.limit) params.limit = this.limit;
          const res = await this.rpc.request<{ sessions: SessionInfo[] }>("pi/listSessions", params);
          this.sessions = res.sessions;
          this.groups = groupSessions(res.sessions);
        } while (this.again);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  find(session: string): SessionInfo | undefined {
    return this.sessions.find((s) => s.session === session);
  }

  /** Marks a listed session live (or a plain file again, for null) from pi/sessionUpdated, ahead of the next list; true when it changed. */
  setLive(session: string, live: LiveInfo | null): boolean {
    const info = this.find(session);
    if (!info || JSON.stringify(info.live ?? null) === JSON.stringify(live)) return false;
    if (live) {
      info.live = live;
      info.leafId = live.leafId;
    } else delete info.live;
    return true;
  }
}
