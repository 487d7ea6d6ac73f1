// The one connection the views and commands hold. It forwards to the running pi-server and keeps every
// handler across restarts, so the commands exist (and say why) even while the server could not start.
import type { Cancel, Connection } from "./protocol";

type Binding = { method: string; bind: (c: Connection) => { dispose(): unknown } | undefined; live?: { dispose(): unknown } };

export class ServerLink implements Connection {
  private conn: Connection | undefined;
  private failure: string | undefined;
  private readonly bindings: Binding[] = [];
  private readonly readyListeners: (() => void)[] = [];

  get connected(): boolean {
    return this.conn !== undefined;
  }

  /** Uses a newly started server: every handler registered so far is bound to it. */
  attach(conn: Connection): void {
    this.conn = conn;
    this.failure = undefined;
    for (const b of this.bindings) b.live = b.bind(conn);
    conn.onReady?.(() => this.fireReady());
  }

  /** Records why the server is not running; requests fail with that reason until a server is attached. */
  fail(reason: string): void {
    this.conn = undefined;
    this.failure = reason;
  }

  request<R>(method: string, params: object, token?: Cancel): Promise<R> {
    if (!this.conn) {
      const why = this.failure ? `: ${this.failure}` : "";
      return Promise.reject(new Error(`pi-server is not running${why}. Run 'Pi Sessions: Restart Server' once it is fixed.`));
    }
    return this.conn.request<R>(method, params, token);
  }

  onNotification(method: string, handler: (params: any) => void): { dispose(): unknown } {
    return this.add({ method, bind: (c) => c.onNotification(method, handler) });
  }

  onRequest(method: string, handler: (params: any, token: Cancel) => Promise<unknown>): { dispose(): unknown } {
    return this.add({ method, bind: (c) => c.onRequest?.(method, handler) });
  }

  onReady(listener: () => void): void {
    this.readyListeners.push(listener);
  }

  async stop(): Promise<void> {
    const conn = this.conn;
    this.conn = undefined;
    await conn?.stop();
  }

  private add(b: Binding): { dispose(): unknown } {
    this.bindings.push(b);
    if (this.conn) b.live = b.bind(this.conn);
    return {
      dispose: () => {
        b.live?.dispose();
        this.bindings.splice(this.bindings.indexOf(b), 1);
      },
    };
  }

  private fireReady(): void {
    for (const l of this.readyListeners) l();
  }
}
