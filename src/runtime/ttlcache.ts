/**
 * A bounded cache whose entries expire: a Map kept in recency order (a read moves its entry to the end),
 * so that finding, refreshing and evicting the least recently used entry are each O(1). Expired entries
 * are dropped when read and pushed out by newer ones; nothing ever scans the whole cache.
 */
export class TTLCache<V> extends Map<string, { value: V; until: number }> {
  private readonly max: number;
  private readonly now: () => number;

  constructor(max: number, now: () => number = () => performance.now()) {
    super();
    if (!(max >= 1)) throw new Error(`a TTLCache needs room for at least one entry, not ${max}`);
    this.max = max;
    this.now = now;
  }

  /** The value under `key` if it has not expired; it becomes the most recently used. */
  fresh(key: string): V | undefined {
    const e = super.get(key);
    if (!e) return undefined;
    super.delete(key);
    if (e.until <= this.now()) return undefined;
    super.set(key, e);
    return e.value;
  }

  /** Stores `value` for `ttlMs`, evicting the least recently used entries beyond the bound. */
  put(key: string, value: V, ttlMs: number): void {
    super.delete(key);
    super.set(key, { value, until: this.now() + ttlMs });
    while (this.size > this.max) {
      const oldest = this.keys().next().value;
      if (oldest === undefined) break;
      super.delete(oldest);
    }
  }
}
