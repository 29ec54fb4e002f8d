/**
 * The API server's time, as the Date headers of its answers tell it, carried forward on this process's
 * monotonic clock. Plans compare it with times other components wrote (a pod's creation, its Ready
 * condition) and with times an earlier leader wrote (a node's rollout memory): this process's wall clock can
 * be stepped, or differ from the other replica's by minutes, and a grace or deadline measured against it
 * then ends at once or never. The server's clock is the one every writer's timestamps share.
 *
 * A Date header has whole seconds, and the answer left the server before it arrived here: the server's
 * time is at least the header's from the moment the answer is read. The clock keeps that lower bound, so
 * that a grace measured with it is never shorter than asked (up to a second longer).
 */
export class ServerClock {
  /** The server's time (lower bound) at a moment of the monotonic clock. */
  private anchor: { serverMs: number; monoMs: number } | undefined;
  private readonly monotonic: () => number;
  private readonly wall: () => number;

  constructor(clocks: { monotonic?: () => number; wall?: () => number } = {}) {
    this.monotonic = clocks.monotonic ?? (() => performance.now());
    this.wall = clocks.wall ?? (() => Date.now());
  }

  /** An answer's Date header (absent or unreadable: nothing learnt). */
  observe(dateHeader: string | undefined): void {
    if (!dateHeader) return;
    const serverMs = Date.parse(dateHeader);
    if (Number.isNaN(serverMs)) return;
    const monoMs = this.monotonic();
    const carried = this.anchor ? this.anchor.serverMs + (monoMs - this.anchor.monoMs) : undefined;
    // A header up to two seconds behind the carried bound is its rounding to whole seconds: the carried
    // bound is the tighter one. Further behind, the server's clock itself went back (stepped, or another
    // API server answered): it is followed.
    if (carried === undefined || serverMs > carried || carried - serverMs > 2000) this.anchor = { serverMs, monoMs };
  }

  /** The server's time now; this process's wall clock until the server has answered once. */
  now(): Date {
    if (!this.anchor) return new Date(this.wall());
    return new Date(this.anchor.serverMs + (this.monotonic() - this.anchor.monoMs));
  }
}
