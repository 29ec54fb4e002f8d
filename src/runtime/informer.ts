import type { Logger } from 'pino';
import { type KubeClient, type ResourceType, WatchIdleError } from '../kube/client.ts';
import { ApiError, errorMessage } from '../kube/errors.ts';
import { type KubeObject, keyOf } from '../kube/types.ts';
import { sleep } from './concurrency.ts';
import { type QuietWhileBusy, SilentWatchCheck } from './silentwatch.ts';

export interface EventHandler<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

export type IndexFunc<T> = (obj: T) => string[];

export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * A watch with no traffic at all (not even a bookmark) for this long is presumed dead. The API server
   * sends a bookmark to every watch that asks for them about once a minute, so a healthy watch is never
   * this quiet; a connection black-holed by a NAT or load balancer is, and nothing else would tell.
   */
  idleTimeoutMs?: number;
  /**
   * The server closes each watch after a random time between this and twice this, as client-go's reflector
   * asks (its minWatchTimeout, 5 minutes), so that watches spread over API servers again; a watch still open
   * WATCH_DEADLINE_GRACE_S after its time is abandoned by the client.
   */
  watchTimeoutSeconds?: number;
  backoff?: { initialMs: number; maxMs: number };
  /**
   * While `busy()` (work under way that waits on others' changes, such as a rollout), a watch silent for
   * `afterMs` is reconnected from the last version seen, instead of after idleTimeoutMs: a dead connection
   * then costs seconds, not a minute and a half, when it matters. Idle, nothing changes and nothing is asked.
   * Not for a watch of one object by name (`fieldSelector: metadata.name=x`), whose silence is the norm.
   */
  quietWhileBusy?: QuietWhileBusy;
  log?: Logger;
  /**
   * Reduces each object before it is cached (e.g. pods to the few fields a controller reads): a large
   * kind then costs little memory. Handlers see the reduced objects.
   */
  // biome-ignore lint/suspicious/noExplicitAny: applied to any kind
  transform?: (obj: any) => any;
}

class GoneError extends Error {}

/** A field selector naming one object (`metadata.name=x`, alone). */
const isSingleObject = (fieldSelector: string | undefined): boolean => /^metadata\.name=[^,]+$/.test(fieldSelector ?? '');

/** 1.5 bookmark periods: a watch this quiet lost its connection (see InformerOptions.idleTimeoutMs). */
export const DEFAULT_WATCH_IDLE_TIMEOUT_MS = 90_000;
/** How long past its timeoutSeconds a watch may stay open before the client ends it itself. */
export const WATCH_DEADLINE_GRACE_S = 10;
/**
 * How long a write of this process may take to show in the watch of its kind before the watch is presumed
 * dead. A connection that a NAT or load balancer forgot stays open and silent; bookmarks would reveal it only
 * after DEFAULT_WATCH_IDLE_TIMEOUT_MS, while a controller waits on exactly the event it lacks.
 */
export const WRITE_SHOW_TIMEOUT_MS = 15_000;
/** Objects per page of an informer's list. */
export const LIST_PAGE_SIZE = 100;

/** An ERROR event in a watch's stream (not 410 Gone): the server ended the watch with this status. */
class WatchEndedWithError extends ApiError {}

/**
 * Keeps an in-memory copy of one kind of resource in sync with the API server: list, then watch from the
 * list's resourceVersion; on 410 Gone (the version fell out of the server's window) list again; on any other
 * failure (errors, a dropped or silent connection) reconnect with exponential backoff. Handlers see every
 * change, including the differences found by a relist.
 */
export class Informer<T extends KubeObject> {
  readonly resource: ResourceType<T>;
  private readonly store = new Map<string, T>();
  /** The cache as snapshot() answered it, until the next change. */
  private snap: readonly T[] | undefined;
  private readonly handlers: EventHandler<T>[] = [];
  private readonly indexers = new Map<string, IndexFunc<T>>();
  private readonly indices = new Map<string, Map<string, Set<string>>>();
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private resourceVersion = '';
  private running: Promise<void> | undefined;
  /** Ends the watch in progress (to reconnect it at once), with why. */
  private currentWatch: { abort: AbortController; reason?: string; level?: 'warn' | 'debug' } | undefined;
  /** Writes of ours (key -> resourceVersion) the watch has not shown yet. */
  private readonly unshown = new Map<string, string>();
  private readonly opts: Required<
    Omit<InformerOptions, 'namespace' | 'labelSelector' | 'fieldSelector' | 'log' | 'transform' | 'quietWhileBusy'>
  > &
    InformerOptions;
  /** When the current watch last carried anything (an event or a bookmark). */
  private lastHeard = 0;
  /** The check of the watch's silence while work is under way (never for a watch of one object). */
  private silence: SilentWatchCheck | undefined;
  /** Counters that tests and metrics read. */
  readonly stats = { lists: 0, watches: 0, relistsOnGone: 0, relistsOnError: 0, reconnects: 0, events: 0 };

  private readonly client: KubeClient;

  constructor(client: KubeClient, resource: ResourceType<T>, opts: InformerOptions = {}) {
    this.client = client;
    this.resource = resource;
    this.opts = {
      idleTimeoutMs: DEFAULT_WATCH_IDLE_TIMEOUT_MS,
      watchTimeoutSeconds: 5 * 60,
      backoff: { initialMs: 200, maxMs: 30_000 },
      ...opts,
    };
  }

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
    // A handler added late still hears about what is already known.
    for (const obj of this.store.values()) h.add?.(obj);
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    this.indexers.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.indices.set(name, index);
    for (const [key, obj] of this.store) for (const v of fn(obj)) addTo(index, v, key);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /**
   * The cached objects as one array that stays the same (the same array) until the cache changes: a pass
   * that reads a thousand objects several times, or passes that follow one another with nothing changed,
   * neither copy the cache nor tell a changed input from an unchanged one by looking inside it. Never to be
   * changed by its reader.
   */
  snapshot(): readonly T[] {
    this.snap ??= [...this.store.values()];
    return this.snap;
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indices.get(name)?.get(value);
    if (!keys) {
      if (!this.indices.has(name)) throw new Error(`no index named ${name} on ${this.resource.plural}`);
      return [];
    }
    return [...keys].map((k) => this.store.get(k) as T);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  get lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      });
    });
  }

  /** Runs until signal aborts. Idempotent: a second call answers the same promise. */
  run(signal: AbortSignal): Promise<void> {
    if (!this.running) {
      // A watch of one object by name is silent nearly always (a ClusterVersion, peer-pods-cm): its silence
      // says nothing, and restarting it each time cost a request per such watch every afterMs while busy and
      // once more in the first idle minute. A dead connection under it is still found: by the idle timeout,
      // and at once when any request of the process finds the API server unavailable (onRecovered).
      const quiet = isSingleObject(this.opts.fieldSelector) ? undefined : this.opts.quietWhileBusy;
      this.silence =
        quiet &&
        new SilentWatchCheck(quiet, this.opts.idleTimeoutMs, {
          open: () => !!this.currentWatch,
          lastHeard: () => this.lastHeard,
          // Often a healthy watch of a quiet kind: not worth a warning.
          restart: (reason) => this.restartWatch(reason, 'debug'),
        });
      const stop = this.client.onWritten?.((rt, obj) => {
        this.expectShown(rt, obj);
        this.silence?.arm();
      });
      signal.addEventListener(
        'abort',
        () => {
          stop?.();
          this.silence?.stop();
        },
        { once: true },
      );
      this.running = this.loop(signal);
    }
    return this.running;
  }

  /**
   * A write of this process answered with `obj`: its event must come through this informer's watch. If it
   * has not within WRITE_SHOW_TIMEOUT_MS, the watch is reconnected (from the last version seen: nothing is
   * listed again, nothing is lost). Costs nothing while nothing is written. An informer with a label or field
   * selector cannot tell whether the object is its to see, and does not check.
   */
  private expectShown(rt: { group: string; plural: string }, obj: KubeObject): void {
    if (rt.group !== this.resource.group || rt.plural !== this.resource.plural) return;
    if (!this.synced || this.opts.labelSelector || this.opts.fieldSelector) return;
    if (this.opts.namespace && obj.metadata.namespace !== this.opts.namespace) return;
    const key = keyOf(obj);
    const rv = obj.metadata.resourceVersion ?? '';
    if (this.store.get(key)?.metadata.resourceVersion === rv) return; // shown already, or a write that changed nothing
    this.unshown.set(key, rv);
    setTimeout(() => {
      if (this.unshown.get(key) !== rv) return;
      this.unshown.clear();
      this.restartWatch(`a write of ours (${key} at ${rv}) did not show in ${WRITE_SHOW_TIMEOUT_MS / 1000}s`);
    }, WRITE_SHOW_TIMEOUT_MS).unref();
  }

  /** Ends the current watch; the loop reconnects at once from the last version seen. */
  private restartWatch(reason: string, level: 'warn' | 'debug' = 'warn'): void {
    const w = this.currentWatch;
    if (!w || w.abort.signal.aborted) return;
    w.reason = reason;
    w.level = level;
    w.abort.abort();
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const log = this.opts.log?.child({ informer: this.resource.plural });
    let delay = this.opts.backoff.initialMs;
    // The API server answering again after a request of this client found it unavailable (any request: the
    // leader's lease renewals come every 2 s) ends a backoff early, and reconnects a watch open since before:
    // what cut the other request (a restart, a black hole, a partition) may have left this watch silent,
    // which only the idle timeout would otherwise tell. After an outage the caches are back within a moment
    // of the server; while all is well this costs nothing.
    let recovered: (() => void) | undefined;
    const stopListening = this.client.onRecovered?.(() => {
      // The backoff grown while the server was away is not a measure of it now: a refusal it answers just
      // after its start (its authorizer's caches not yet filled: 403) is retried within a moment, not
      // after the outage's doubled delay, with the cache meanwhile stale.
      delay = this.opts.backoff.initialMs;
      recovered?.();
      this.restartWatch('the API server answered again after being unavailable', 'debug');
    });
    if (stopListening) signal.addEventListener('abort', stopListening, { once: true });
    // A relist asked for (KubeClient.relistAll): the watch is ended and the loop lists before watching again.
    let relistRequested = false;
    const stopRelist = this.client.onRelistRequested?.(() => {
      relistRequested = true;
      recovered?.();
      this.restartWatch('a relist was requested', 'debug');
    });
    if (stopRelist) signal.addEventListener('abort', stopRelist, { once: true });
    const backoff = async () => {
      this.stats.reconnects++;
      const wait = new AbortController();
      recovered = () => wait.abort();
      await sleep(delay * (0.8 + Math.random() * 0.4), AbortSignal.any([signal, wait.signal]));
      recovered = undefined;
      delay = Math.min(delay * 2, this.opts.backoff.maxMs);
    };
    let needList = true;
    while (!signal.aborted) {
      try {
        if (relistRequested) {
          relistRequested = false;
          needList = true;
        }
        if (needList) {
          await this.relist(signal);
          needList = false;
          delay = this.opts.backoff.initialMs;
        }
        if (relistRequested) continue; // asked for while this list was under way
        const cut = await this.watchOnce(signal);
        if (cut) {
          // The server never ended it, or it never showed a write of ours: the connection is presumed dead.
          this.stats.reconnects++;
          log?.[cut.level]({ resourceVersion: this.resourceVersion, reason: cut.reason }, 'watch presumed dead; reconnecting');
        }
        delay = this.opts.backoff.initialMs; // a watch that ended normally is healthy
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof GoneError || (e instanceof ApiError && e.status === 410)) {
          this.stats.relistsOnGone++;
          log?.info({ resourceVersion: this.resourceVersion }, 'watch expired (410 Gone); listing again');
          needList = true;
          this.client.watchExpired?.();
          continue;
        }
        if (e instanceof WatchEndedWithError) {
          // The server ended the watch with an error of its own (a 500: without its watch cache, an event
          // whose previous value etcd compacted, as after a restore): watching again from the same version
          // meets the same event. Listed again, the watch starts past it; client-go's reflector does the same.
          this.stats.relistsOnError++;
          log?.warn({ resourceVersion: this.resourceVersion, err: errorMessage(e) }, 'watch ended with an error; listing again');
          needList = true;
          await backoff();
          continue;
        }
        const reason = e instanceof WatchIdleError ? 'watch silent; reconnecting' : 'list/watch failed; retrying with backoff';
        log?.warn({ err: errorMessage(e) }, reason);
        await backoff();
      }
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    this.stats.lists++;
    const list = await this.client.list(this.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      signal,
      // Reduced page by page: a thousand whole Nodes are never in memory at once. Pages of 100: a page of
      // 500 Nodes is a 5 MB body parsed into about 25 MB of objects at once, the operator's peak heap.
      limit: LIST_PAGE_SIZE,
      map: (item) => this.prepare(item),
    });
    const seen = new Set<string>();
    for (const obj of list.items) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.store.get(key);
      if (!old) this.apply('ADDED', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.apply('MODIFIED', obj);
    }
    for (const [key, old] of [...this.store]) if (!seen.has(key)) this.apply('DELETED', old);
    this.resourceVersion = list.metadata.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /**
   * One watch, until the server ends it (answers undefined) or the client ends it (answers why: the deadline
   * passed, or a write of ours never showed).
   */
  private async watchOnce(signal: AbortSignal): Promise<{ reason: string; level: 'warn' | 'debug' } | undefined> {
    this.stats.watches++;
    const timeoutSeconds = Math.floor(this.opts.watchTimeoutSeconds * (1 + Math.random()));
    const current: { abort: AbortController; reason?: string; level?: 'warn' | 'debug' } = { abort: new AbortController() };
    this.currentWatch = current;
    this.lastHeard = performance.now();
    this.silence?.arm();
    const timer = setTimeout(
      () => {
        current.reason = 'it outlived its timeout';
        current.abort.abort();
      },
      (timeoutSeconds + WATCH_DEADLINE_GRACE_S) * 1000,
    );
    try {
      await this.watchUntil(timeoutSeconds, AbortSignal.any([signal, current.abort.signal]));
      return undefined;
    } catch (e) {
      if (current.abort.signal.aborted && !signal.aborted)
        return { reason: current.reason ?? 'ended by the client', level: current.level ?? 'warn' };
      throw e;
    } finally {
      clearTimeout(timer);
      if (this.currentWatch === current) this.currentWatch = undefined;
    }
  }

  private async watchUntil(timeoutSeconds: number, signal: AbortSignal): Promise<void> {
    await this.client.watch(
      this.resource,
      {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        resourceVersion: this.resourceVersion,
        timeoutSeconds,
        idleTimeoutMs: this.opts.idleTimeoutMs,
        signal,
      },
      (ev) => {
        this.lastHeard = performance.now();
        if (ev.type === 'ERROR') {
          const status = ev.object as unknown as { code?: number; message?: string; reason?: string };
          if (status.code === 410) throw new GoneError(status.message ?? 'Gone');
          throw new WatchEndedWithError(status.code ?? 500, status.reason ?? '', status.message ?? 'watch error', status);
        }
        const rv = ev.object.metadata?.resourceVersion;
        if (ev.type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
        } else {
          this.stats.events++;
          this.silence?.heardEvent();
          this.apply(ev.type, this.prepare(ev.object));
          if (rv) this.resourceVersion = rv;
        }
        // After the cache took the event in: it may be what makes the process busy (a KataConfig created).
        this.silence?.arm();
      },
    );
  }

  private prepare(obj: T): T {
    const stripped = strip(obj);
    return this.opts.transform ? (this.opts.transform(stripped) as T) : stripped;
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void {
    const key = keyOf(obj);
    this.unshown.delete(key);
    const old = this.store.get(key);
    this.snap = undefined;
    if (type === 'DELETED') {
      if (!old) return;
      this.store.delete(key);
      this.reindex(key, old, undefined);
      for (const h of this.handlers) safely(() => h.delete?.(obj), this.opts.log);
      return;
    }
    this.store.set(key, obj);
    this.reindex(key, old, obj);
    if (old) for (const h of this.handlers) safely(() => h.update?.(old, obj), this.opts.log);
    else for (const h of this.handlers) safely(() => h.add?.(obj), this.opts.log);
  }

  private reindex(key: string, old: T | undefined, cur: T | undefined): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name) as Map<string, Set<string>>;
      if (old) for (const v of fn(old)) index.get(v)?.delete(key);
      if (cur) for (const v of fn(cur)) addTo(index, v, key);
      if (old) for (const v of fn(old)) if (index.get(v)?.size === 0) index.delete(v);
    }
  }
}

/** An informer's snapshot(), or a copy of its list for a stand-in that has none (a unit test's cache). */
export const snapshotOf = <T extends KubeObject>(i: Pick<Informer<T>, 'list'> & { snapshot?: () => readonly T[] }): readonly T[] =>
  i.snapshot ? i.snapshot() : i.list();

function addTo(index: Map<string, Set<string>>, value: string, key: string): void {
  let set = index.get(value);
  if (!set) {
    set = new Set();
    index.set(value, set);
  }
  set.add(key);
}

/** managedFields are large and never read by osc: dropping them roughly halves the cache's memory. */
function strip<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}

function safely(fn: () => void, log?: Logger): void {
  try {
    fn();
  } catch (e) {
    log?.error({ err: errorMessage(e) }, 'informer event handler threw');
  }
}

/** An index function for "objects carrying label L", keyed by the label's value. */
export const labelIndex =
  <T extends KubeObject>(label: string): IndexFunc<T> =>
  (obj) => {
    const v = obj.metadata.labels?.[label];
    return v === undefined ? [] : [v];
  };
