// When the server dies: restart it, and say so, unless it keeps dying.
export class RestartPolicy {
  private crashes: number[] = [];

  constructor(
    readonly maxRestarts = 4,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** Records a crash at `now`; true when the server should be started again. */
  crashed(now: number = Date.now()): boolean {
    this.crashes = this.crashes.filter((t) => now - t < this.windowMs);
    this.crashes.push(now);
    return this.crashes.length <= this.maxRestarts;
  }

  message(restarting: boolean): string {
    return restarting
      ? "pi-server stopped unexpectedly and is restarting. Its log is in the 'pi-server' output."
      : `pi-server stopped ${this.crashes.length} times in ${Math.round(this.windowMs / 60_000)} minutes and will not be restarted. See the 'pi-server' output, then run 'Pi Sessions: Restart Server'.`;
  }
}
