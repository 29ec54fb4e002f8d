/**
 * A work queue with client-go's guarantees:
 * - a key is queued at most once however many times it is added while waiting;
 * - a key is never handed to two workers at once: added while being processed, it is queued again
 *   only when the worker calls done();
 * - addRateLimited() delays a failing key by the larger of its own exponential backoff and an overall
 *   token bucket (client-go's default controller rate limiter): one key's backoff cannot be bypassed, and
 *   many failing keys together cannot retry faster than the bucket allows; forget() resets the key;
 * - addAfter() delays an add (requeueAfter); a key keeps only its earliest pending delayed add.
 */

export interface QueueObserver {
  depth?(n: number): void;
  add?(): void;
  retry?(): void;
}

export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultBackoff: BackoffOptions = { baseDelayMs: 5, maxDelayMs: 5 * 60_000 };

export interface BucketOptions {
  /** Sustained retries per second across all keys. */
  qps: number;
  /** Retries allowed at once before the rate applies. */
  burst: number;
}

/** client-go's default: 10 retries a second, bursts of 100. */
export const defaultBucket: BucketOptions = { qps: 10, burst: 100 };

/**
 * A token bucket in reservation form: each reserve() takes a token and answers how long to wait until that
 * token exists (0 while the bucket holds some). Tokens refill at qps up to burst.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly opts: BucketOptions;
  private readonly now: () => number;
  constructor(opts: BucketOptions = defaultBucket, now: () => number = () => performance.now()) {
    this.opts = opts;
    this.now = now;
    this.tokens = opts.burst;
    this.last = now();
  }

  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((t - this.last) / 1000) * this.opts.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.opts.qps) * 1000);
  }
}

/** Per-key exponential backoff: base * 2^failures, capped. */
export class ExponentialBackoff<K> {
  private readonly failures = new Map<K, number>();
  private readonly opts: BackoffOptions;
  constructor(opts: BackoffOptions = defaultBackoff) {
    this.opts = opts;
  }

  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.opts.baseDelayMs * 2 ** n, this.opts.maxDelayMs);
  }

  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly waiters: ((k: K | undefined) => void)[] = [];
  private readonly delayed = new Map<K, { at: number; timer: ReturnType<typeof setTimeout> }>();
  private readonly backoff: ExponentialBackoff<K>;
  private readonly bucket: TokenBucket;
  private shuttingDown = false;
  private readonly observer: QueueObserver;

  constructor(backoff: BackoffOptions = defaultBackoff, observer: QueueObserver = {}, bucket: BucketOptions = defaultBucket) {
    this.observer = observer;
    this.backoff = new ExponentialBackoff<K>(backoff);
    this.bucket = new TokenBucket(bucket);
  }

  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.observer.add?.();
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it
    this.push(key);
  }

  addAfter(key: K, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = performance.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  /** Adds a key waiting out a delay now (its delayed add dropped); one not waiting is left alone. */
  expedite(key: K): void {
    const pending = this.delayed.get(key);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.delayed.delete(key);
    this.add(key);
  }

  addRateLimited(key: K): void {
    this.observer.retry?.();
    this.addAfter(key, Math.max(this.backoff.when(key), this.bucket.reserve()));
  }

  forget(key: K): void {
    this.backoff.forget(key);
  }

  retries(key: K): number {
    return this.backoff.retries(key);
  }

  /** The next key to work on, or undefined once the queue is shut down. */
  get(): Promise<K | undefined> {
    if (this.queue.length > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) this.push(key);
  }

  get length(): number {
    return this.queue.length;
  }

  isProcessing(key: K): boolean {
    return this.processing.has(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  get isShutDown(): boolean {
    return this.shuttingDown;
  }

  private push(key: K): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
    this.observer.depth?.(this.queue.length);
  }

  private take(): K {
    const key = this.queue.shift() as K;
    this.dirty.delete(key);
    this.processing.add(key);
    this.observer.depth?.(this.queue.length);
    return key;
  }
}
