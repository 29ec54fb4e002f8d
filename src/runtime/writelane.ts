import type { Logger } from './log.ts';

/**
 * Writes that must not hold up a controller's worker, made beside it: one value per key, the latest
 * submitted winning over one not yet written, one write per key at a time, a bounded number in flight.
 * A failed write is tried again after a per-key backoff unless a newer value came first. The worker
 * plans and submits; the lane only persists, so a slow API server delays these writes, never the
 * worker's next pass (the KataConfig status).
 */
export interface WriteLaneOptions<V> {
  write: (key: string, value: V, signal: AbortSignal) => Promise<void>;
  /** Writes in flight at once. */
  inFlight: number;
  /** A value submitted while an older one waits: what to write instead (default: the newer). */
  merge?: (pending: V, next: V) => V;
  log?: Logger;
  /** First retry delay after a failure; doubled per failure of the same key up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

interface Pending<V> {
  value: V;
  /** Not before this time (epoch ms): a retry's backoff. */
  notBefore: number;
}

export class WriteLane<V> {
  private readonly opts: Required<Omit<WriteLaneOptions<V>, 'log' | 'merge'>> & Pick<WriteLaneOptions<V>, 'log' | 'merge'>;
  private readonly pending = new Map<string, Pending<V>>();
  /** Keys being written, with the value. */
  private readonly writing = new Map<string, V>();
  private readonly failures = new Map<string, number>();
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private signal: AbortSignal | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: WriteLaneOptions<V>) {
    this.opts = { retryMs: 500, maxRetryMs: 30_000, ...opts };
  }

  /** The value `key` should have; replaces one not yet written. Writes go until `signal` aborts. */
  submit(key: string, value: V, signal: AbortSignal): void {
    this.signal = signal;
    const waiting = this.pending.get(key);
    // A new value does not wait out the backoff of a failed write it replaces.
    this.pending.set(key, { value: waiting && this.opts.merge ? this.opts.merge(waiting.value, value) : value, notBefore: 0 });
    this.failures.delete(key);
    this.pump();
  }

  /** Keys with a value not yet written, or being written. */
  get size(): number {
    return new Set([...this.pending.keys(), ...this.writing]).size;
  }

  /** Whether `key` has a write pending or in flight. */
  has(key: string): boolean {
    return this.pending.has(key) || this.writing.has(key);
  }

  /** The value `key` will have once its writes are made (the pending one, else the one in flight). */
  upcoming(key: string): V | undefined {
    return this.pending.get(key)?.value ?? this.writing.get(key);
  }

  /** Drops every write not yet started and answers once those in flight have ended. */
  async clear(): Promise<void> {
    this.pending.clear();
    this.failures.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    await this.idle();
  }

  /** Answers once nothing is pending or in flight (for tests and orderly stops). */
  idle(): Promise<void> {
    if (this.running === 0 && this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    const signal = this.signal;
    if (!signal || signal.aborted) {
      this.pending.clear();
      this.settle();
      return;
    }
    const now = Date.now();
    let wakeAt = Number.POSITIVE_INFINITY;
    for (const [key, p] of this.pending) {
      if (this.running >= this.opts.inFlight) return;
      if (this.writing.has(key)) continue;
      if (p.notBefore > now) {
        wakeAt = Math.min(wakeAt, p.notBefore);
        continue;
      }
      this.pending.delete(key);
      this.start(key, p.value, signal);
    }
    if (wakeAt < this.timerAt) {
      if (this.timer) clearTimeout(this.timer);
      this.timerAt = wakeAt;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      }, wakeAt - now);
      this.timer.unref();
    }
    this.settle();
  }

  private start(key: string, value: V, signal: AbortSignal): void {
    this.running++;
    this.writing.set(key, value);
    this.opts
      .write(key, value, signal)
      .then(
        () => this.failures.delete(key),
        (e: unknown) => {
          if (signal.aborted) return;
          const n = (this.failures.get(key) ?? 0) + 1;
          this.failures.set(key, n);
          const delay = Math.min(this.opts.maxRetryMs, this.opts.retryMs * 2 ** (n - 1));
          this.opts.log?.warn({ key, err: e instanceof Error ? e.message : String(e), retryInMs: delay }, 'write failed: trying again');
          // A value submitted meanwhile goes instead, merged over this one (a failed create stays a create).
          const next = this.pending.get(key);
          const merged = next && this.opts.merge ? this.opts.merge(value, next.value) : (next?.value ?? value);
          this.pending.set(key, { value: merged, notBefore: next ? 0 : Date.now() + delay });
        },
      )
      .finally(() => {
        this.running--;
        this.writing.delete(key);
        this.pump();
      });
  }

  private settle(): void {
    if (this.running > 0 || this.pending.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
