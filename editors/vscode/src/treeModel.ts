// The Tree view's model: pi's /tree rows for one session, loaded by window, nested for a tree widget.
import { type EditState, editStates } from "./contextEdits";
import { expandGutters } from "./format";
import type { Filter, LiveInfo, Rpc, TreeResult, TreeRow } from "./protocol";
import { fetchStats, type SessionStats } from "./stats";

export const PAGE = 500;

export class TreeModel {
  session: string | undefined;
  filter: Filter = "default";
  search = "";
  readonly folded = new Set<string>();
  rows: TreeRow[] = [];
  total = 0;
  leafId: string | null = null;
  /** The pi that holds the session, as the last answer or pi/sessionUpdated told (undefined: none). */
  live: LiveInfo | undefined;
  /** Context edits in force on the path to the leaf, by target entry. */
  edits = new Map<string, EditState>();
  /** Tokens and cost of the file and of the branch to the leaf (undefined: a server without pi/getSessionStats). */
  stats: SessionStats | undefined;
  private byId = new Map<string, TreeRow>();
  private kids = new Map<string | null, TreeRow[]>();
  private nest = new Map<string, string | null>();
  private listeners: (() => void)[] = [];
  private generation = 0;
  /** The newest reload: an older one that it overtook waits for it, so "reload done" means the newest answer is shown. */
  private latest: Promise<void> = Promise.resolve();

  constructor(
    private readonly rpc: Rpc,
    readonly pageSize: number = PAGE,
  ) {}

  onChange(listener: () => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }

  /** Shows another session, with folds and search cleared (the filter stays, as a view setting). */
  async open(session: string | undefined): Promise<void> {
    this.session = session;
    this.folded.clear();
    this.search = "";
    await this.reload(this.pageSize);
  }

  async setFilter(filter: Filter): Promise<void> {
    this.filter = filter;
    await this.reload();
  }

  async setSearch(search: string): Promise<void> {
    this.search = search.trim();
    await this.reload();
  }

  /** Folds or unfolds a row: the server's `folded` set, so rows under it are not sent at all. */
  async setFolded(id: string, folded: boolean): Promise<void> {
    if (folded === this.folded.has(id)) return;
    if (folded) this.folded.add(id);
    else this.folded.delete(id);
    await this.reload();
  }

  /** pi took or let go of the session, or its state changed: shown at once; a leaf move comes with the reload that follows. */
  setLive(live: LiveInfo | null): void {
    if (JSON.stringify(this.live ?? null) === JSON.stringify(live)) return;
    this.live = live ?? undefined;
    for (const l of this.listeners) l();
  }

  /** Fetches the next window of rows. */
  async loadMore(): Promise<void> {
    if (!this.session || this.rows.length >= this.total) return;
    const gen = this.generation;
    const res = await this.fetch(this.rows.length, this.pageSize);
    if (gen !== this.generation) return this.latest; // a reload started meanwhile; its rows win
    this.apply(res, [...this.rows, ...res.rows]);
  }

  /** Re-reads the rows already shown (at least one page), e.g. after the file grew. */
  reload(count: number = Math.max(this.pageSize, this.rows.length)): Promise<void> {
    const gen = ++this.generation;
    this.latest = this.load(gen, count);
    return this.latest;
  }

  private async load(gen: number, count: number): Promise<void> {
    if (!this.session) {
      this.edits = new Map();
      this.stats = undefined;
      this.apply({ leafId: null, total: 0, offset: 0, rows: [] }, []);
      return;
    }
    const [res, edits, stats] = await Promise.all([this.fetch(0, count), this.fetchEdits(this.session), fetchStats(this.rpc, this.session)]);
    // overtaken by a newer reload (a live update, say): callers wait for the newest answer
    if (gen !== this.generation) return this.latest;
    this.edits = edits;
    this.stats = stats;
    this.apply(res, res.rows);
  }

  /** Rows a tree widget shows under `parent` (top level for undefined): a row nests under its nearest foldable visible ancestor, so collapsing it hides exactly what pi's fold hides. */
  children(parent?: TreeRow): TreeRow[] {
    return this.kids.get(parent ? parent.id : null) ?? [];
  }

  parent(row: TreeRow): TreeRow | undefined {
    const p = this.nest.get(row.id);
    return p ? this.byId.get(p) : undefined;
  }

  row(id: string): TreeRow | undefined {
    return this.byId.get(id);
  }

  /** The row of entry `id`, loading further windows until it is among them (undefined: this filter hides it). */
  async find(id: string): Promise<TreeRow | undefined> {
    while (!this.byId.has(id) && this.hasMore) {
      const shown = this.rows.length;
      await this.loadMore();
      if (this.rows.length <= shown) break; // no progress: a reload replaced the rows meanwhile
    }
    return this.byId.get(id);
  }

  get hasMore(): boolean {
    return this.rows.length < this.total;
  }

  /** A server from before context edits (MethodNotFound) still shows its rows, without edit marks. */
  private fetchEdits(session: string): Promise<Map<string, EditState>> {
    return editStates(this.rpc, session).catch((err) => {
      if ((err as { code?: number })?.code === -32601) return new Map<string, EditState>();
      throw err;
    });
  }

  private fetch(offset: number, limit: number): Promise<TreeResult> {
    // gutters once per window: a deep tree's rows would carry ~100 each
    const params: Record<string, unknown> = { session: this.session, filter: this.filter, offset, limit, sharedGutters: true };
    if (this.search) params.search = this.search;
    if (this.folded.size) params.folded = [...this.folded];
    return this.rpc.request<TreeResult>("pi/getTree", params).then(expandGutters);
  }

  private apply(res: TreeResult, rows: TreeRow[]): void {
    this.rows = rows;
    this.total = res.total;
    this.leafId = res.leafId;
    this.live = res.live;
    this.byId = new Map(rows.map((r) => [r.id, r]));
    this.kids = new Map();
    this.nest = new Map();
    for (const row of rows) {
      // visible parents precede their children in pi's order, so one pass suffices
      const vp = row.visibleParentId ? this.byId.get(row.visibleParentId) : undefined;
      const at = vp ? (canFold(vp) ? vp.id : (this.nest.get(vp.id) ?? null)) : null;
      this.nest.set(row.id, at);
      let list = this.kids.get(at);
      if (!list) this.kids.set(at, (list = []));
      list.push(row);
    }
    for (const l of this.listeners) l();
  }
}

/** pi reports a folded row as not foldable (it has no visible children then); a widget still shows it collapsed. */
export function canFold(row: TreeRow): boolean {
  return row.foldable || row.folded;
}
