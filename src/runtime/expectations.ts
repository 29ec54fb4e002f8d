/**
 * Writes a controller has made that its cache does not show yet (the ReplicaSet controller's and
 * controller-runtime's "expectations"). A controller that requeues itself right after a batch of writes
 * reads a cache that may still lag behind them: without a record it would make the same writes again.
 * It notes each write after the server accepted it, and skips the same write while the cache does not
 * show it yet; the watch event that brings the value wakes it again. A record that the cache
 * never confirms (the object was changed again meanwhile, or went away) expires, so nothing waits forever.
 */
export class Expectations<V> {
  private readonly records = new Map<string, { value: V; at: number }>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(ttlMs = 30_000, now: () => number = Date.now) {
    this.ttlMs = ttlMs;
    this.now = now;
  }

  /** A write of `value` to `key` was accepted by the server. */
  expect(key: string, value: V): void {
    this.records.set(key, { value, at: this.now() });
  }

  /**
   * Whether this very write (`value` to `key`) is still on its way to the cache, which shows it when `shown`.
   * A record of another value is dropped too: the controller wants something else now, so that write goes.
   */
  awaiting(key: string, value: V, shown: boolean): boolean {
    const r = this.records.get(key);
    if (!r) return false;
    if (shown || r.value !== value || this.now() - r.at >= this.ttlMs) {
      this.records.delete(key);
      return false;
    }
    return true;
  }

  /** The value written to `key` that the cache has not shown yet, if any. */
  recorded(key: string): V | undefined {
    return this.records.get(key)?.value;
  }

  /** The cache shows the write to `key` (seen in a watch event): it is no longer awaited. */
  forget(key: string): void {
    this.records.delete(key);
  }

  /** Forgets every record but those of `keys`: what the controller no longer plans to write is not awaited. */
  retain(keys: ReadonlySet<string>): void {
    for (const key of this.records.keys()) if (!keys.has(key)) this.records.delete(key);
  }

  /** Records not yet confirmed (for tests and logs). */
  get size(): number {
    return this.records.size;
  }
}
