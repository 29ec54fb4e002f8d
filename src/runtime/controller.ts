import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ApiError, errorMessage, isConflict } from '../kube/errors.ts';
import type { KubeObject } from '../kube/types.ts';
import type { Informer } from './informer.ts';
import type { RuntimeMetrics } from './metrics.ts';
import { type BackoffOptions, defaultBackoff, WorkQueue } from './queue.ts';

/** How soon a key whose write hit a 409 Conflict is retried: long enough for the cache to catch up. */
export const CONFLICT_RETRY_MS = 20;
/**
 * Conflicts in a row that are retried at that fixed pace; past them the key goes through the rate limiter
 * like any error, so that a conflict that does not resolve (another writer fighting over a field) cannot
 * spin.
 */
export const MAX_FAST_CONFLICT_RETRIES = 5;

export interface ReconcileContext {
  /** Aborts when the manager stops or loses leadership: pass it to every API call. */
  signal: AbortSignal;
  /** A child logger carrying the controller, key and reconcile id. */
  log: Logger;
}

export interface ReconcileResult {
  /** Reconcile this key again after this long, even if nothing changes. */
  requeueAfterMs?: number;
  /**
   * The least time from this reconcile's start to the next one's (at least the controller's minGapMs): a
   * controller whose pass costs more on a larger cluster spaces its passes more.
   */
  paceMs?: number;
}

export interface Watch<T extends KubeObject = KubeObject> {
  informer: Informer<T>;
  /** Which keys of the controller's primary resource an object's change concerns. */
  keys(obj: T): string[];
  /** Whether an update matters at all (e.g. ignore node heartbeats); all updates count without it. */
  updated?(oldObj: T, newObj: T): boolean;
}

export interface ControllerSpec {
  name: string;
  workers?: number;
  /**
   * The least time between the starts of two reconciles of one key: what changes meanwhile is taken in by
   * the next one together (a controller whose pass reads every node, say, during an install). Default 0.
   */
  minGapMs?: number;
  backoff?: BackoffOptions;
  // biome-ignore lint/suspicious/noExplicitAny: watches span many object types
  watches: Watch<any>[];
  reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined>;
}

/**
 * Runs a reconcile function over a work queue fed by informers. The queue guarantees one reconcile per key
 * at a time; an error re-queues the key with backoff; a result may ask for a later requeue.
 */
export class Controller {
  readonly name: string;
  readonly queue: WorkQueue<string>;
  private readonly spec: ControllerSpec;
  private readonly log: Logger;
  private readonly metrics: RuntimeMetrics | undefined;
  /** Conflicts in a row per key, for the fast-retry cap. */
  private readonly conflicts = new Map<string, number>();
  /** Keys whose last pass failed because the API server did not answer (or shed it): retried once it answers. */
  private readonly awaitingServer = new Set<string>();
  /** When each key's next reconcile may start (performance.now()), from minGapMs and the last one's paceMs. */
  private readonly notBefore = new Map<string, number>();

  /**
   * `recovered`: hears the API server answer again after it was unavailable (KubeClient.onRecovered). A key
   * that failed for want of the server is then retried at once: no event may ever come for it, and its
   * backoff after a long outage reaches tens of seconds.
   */
  constructor(spec: ControllerSpec, log: Logger, metrics?: RuntimeMetrics, recovered?: (fn: () => void) => () => void) {
    this.spec = spec;
    recovered?.(() => {
      for (const key of this.awaitingServer) this.queue.expedite(key);
      this.awaitingServer.clear();
    });
    this.log = log;
    this.metrics = metrics;
    this.name = spec.name;
    const label = { name: spec.name };
    this.queue = new WorkQueue<string>(spec.backoff ?? defaultBackoff, {
      depth: (n) => metrics?.queueDepth.set(label, n),
      add: () => metrics?.queueAdds.inc(label),
      retry: () => metrics?.queueRetries.inc(label),
    });
    for (const w of spec.watches) {
      const enqueue = (obj: KubeObject) => {
        for (const k of w.keys(obj)) this.queue.add(k);
      };
      w.informer.addEventHandler({
        add: enqueue,
        update: (oldObj, newObj) => {
          if (w.updated && !w.updated(oldObj, newObj)) return;
          enqueue(oldObj);
          enqueue(newObj);
        },
        delete: enqueue,
      });
    }
  }

  get informers(): Informer<KubeObject>[] {
    return this.spec.watches.map((w) => w.informer);
  }

  /** Runs workers until signal aborts; answers once in-flight reconciles have finished. */
  async run(signal: AbortSignal): Promise<void> {
    const stop = () => this.queue.shutDown();
    signal.addEventListener('abort', stop, { once: true });
    const workers = Array.from({ length: this.spec.workers ?? 1 }, () => this.worker(signal));
    await Promise.all(workers);
    signal.removeEventListener('abort', stop);
  }

  private async worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        const started = await this.pace(key, signal);
        if (signal.aborted) return;
        const paceMs = await this.reconcileOne(key, signal);
        if (paceMs !== undefined && paceMs > (this.spec.minGapMs ?? 0)) this.notBefore.set(key, started + paceMs);
      } finally {
        this.queue.done(key);
      }
      // A reconcile that made no request (its writes handed to a lane, or skipped as unchanged) and asked
      // to run again at once would otherwise chain on microtasks and starve every socket and timer.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Waits out the key's pacing (the key stays taken: adds meanwhile make one reconcile after this one). */
  private async pace(key: string, signal: AbortSignal): Promise<number> {
    // A timer runs on the event loop's clock, taken when the loop last woke: after a long turn it fires
    // early by as much. Looked at again until the time has come.
    for (let wait = (this.notBefore.get(key) ?? 0) - performance.now(); wait > 0 && !signal.aborted; ) {
      await delay(Math.ceil(wait), undefined, { signal }).catch(() => undefined);
      wait = (this.notBefore.get(key) ?? 0) - performance.now();
    }
    const started = performance.now();
    const gap = this.spec.minGapMs ?? 0;
    if (gap > 0) this.notBefore.set(key, started + gap);
    return started;
  }

  /** Answers the reconcile's paceMs, if it gave one. */
  private async reconcileOne(key: string, signal: AbortSignal): Promise<number | undefined> {
    const log = this.log.child({ controller: this.name, key, reconcileID: randomUUID() });
    const end = this.metrics?.reconcileDuration.startTimer({ controller: this.name });
    try {
      const result = await this.spec.reconcile(key, { signal, log });
      this.queue.forget(key);
      this.conflicts.delete(key);
      this.awaitingServer.delete(key);
      if (result?.requeueAfterMs !== undefined) {
        this.queue.addAfter(key, result.requeueAfterMs);
        this.metrics?.reconcileTotal.inc({ controller: this.name, result: 'requeue_after' });
      } else {
        this.metrics?.reconcileTotal.inc({ controller: this.name, result: 'success' });
      }
      return result?.paceMs;
    } catch (e) {
      if (signal.aborted) return;
      this.metrics?.reconcileTotal.inc({ controller: this.name, result: 'error' });
      this.metrics?.reconcileErrors.inc({ controller: this.name });
      // A conflict only means the cache was a step behind a write (often our own): routine, and retried
      // shortly without growing the key's backoff, which would otherwise reach seconds after a few in a row.
      if (isConflict(e)) {
        const inARow = (this.conflicts.get(key) ?? 0) + 1;
        this.conflicts.set(key, inARow);
        if (inARow <= MAX_FAST_CONFLICT_RETRIES) {
          log.debug({ err: errorMessage(e) }, 'conflict; retrying');
          this.queue.addAfter(key, CONFLICT_RETRY_MS);
          return;
        }
        log.warn({ err: errorMessage(e), conflicts: inARow }, 'conflicts keep coming; retrying with backoff');
        this.queue.addRateLimited(key);
        return;
      }
      log.error({ err: errorMessage(e), retries: this.queue.retries(key) }, 'reconcile failed; will retry');
      if (serverUnavailable(e)) this.awaitingServer.add(key);
      else this.awaitingServer.delete(key);
      this.queue.addRateLimited(key);
    } finally {
      end?.();
    }
  }
}

/** No answer at all (a connection refused or reset, a timeout), a 5xx or a 429: the server, not the request. */
export function serverUnavailable(e: unknown): boolean {
  if (e instanceof ApiError) return e.status >= 500 || e.status === 429;
  return true;
}
