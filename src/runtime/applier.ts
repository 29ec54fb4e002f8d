import { objectName } from '../api/meta.ts';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import type { KubeObject } from '../kube/types.ts';
import { mapLimit } from './concurrency.ts';
import type { Informer } from './informer.ts';
import type { RuntimeMetrics } from './metrics.ts';
import { applyStatusIfChanged, type StatusShare, type WithStatus } from './status.ts';

/**
 * The one way a controller writes (docs/architecture.md, "One apply path"). A controller plans its writes
 * as data (Write[]) from what its caches show, and hands them to its Applier, which:
 *
 * - server-side applies the objects the controller owns, under the controller's own field manager, with
 *   force (the controller is the authority on every field it names); a field it applied before and names no
 *   longer is removed by the server;
 * - merge-patches the few keys it keeps in objects that others own (a ConfigMap's annotation, a node's
 *   labels), where an apply would make osc the owner of the whole key set it names; a patch that says what
 *   the object shows once it is made (`shows`) is not made when the cache shows that already;
 * - creates an object someone else may own once made (an AlreadyExists is no error);
 * - server-side applies its share of an object's status (src/runtime/status.ts) when it differs;
 * - deletes, with a UID precondition so that an object made again under the same name is not the one deleted;
 * - makes no write when the cache already shows it: an applied object whose digest annotation and every
 *   named field match, a delete of what is gone or going;
 * - remembers each write to a watched kind, and the server's answer, until its cache shows the version the
 *   write made (or another writer's), so that a pass planned from a cache one event behind does not make the
 *   same write again; `latest` answers an object as this controller last wrote it, for the plan to read. A
 *   kind the controller does not cache has nothing to lag behind: nothing is remembered, but for creates,
 *   which are remembered until a pass no longer plans them (`settleCreates`).
 *
 * It catches nothing: a 409 (someone else's newer version, a precondition) or a transient error ends the
 * pass and the controller's work queue retries the key (src/runtime/controller.ts: a few quick retries for
 * conflicts, then the rate-limited backoff every error gets). That is the only conflict policy.
 */

export {
  APPLIED_DIGEST_ANNOTATION,
  type ApplyWrite,
  appliedForm,
  type CacheLookup,
  type CreateWrite,
  cacheShows,
  covers,
  type DeleteWrite,
  nameOf,
  namespaceOf,
  type PatchWrite,
  type PlannedWrite,
  type StatusWrite,
  showsApplied,
  showsPatch,
  type Write,
  type WriteOutcome,
} from './writes.ts';

import {
  appliedForm,
  type CacheLookup,
  nameOf,
  namespaceOf,
  type PlannedWrite,
  type StatusWrite,
  skipped,
  type WriteOutcome,
  whatOf,
} from './writes.ts';

export interface ApplierOptions {
  client: KubeClient;
  /** The controller's field manager: the server records it as the owner of every field it applies. */
  fieldManager: string;
  metrics?: RuntimeMetrics;
  /** How long a write the cache has not shown is remembered (then the next pass may make it again). */
  expectationTtlMs?: number;
  /** A monotonic clock in ms (default performance.now): a step of the wall clock neither ends nor stretches a wait. */
  now?: () => number;
}

/** Versions kept per object for madeVersion: a status write's watch event comes long before four more writes. */
const OWN_VERSIONS_KEPT = 4;
const targetKey = (resource: ResourceType, name: string, namespace: string | undefined) =>
  `${resource.group}/${resource.plural}/${namespace ?? ''}/${name}`;
/** Which version of an object the cache holds ('-' for none): a write is shown once this changes. */
const cacheState = (o: KubeObject | undefined): string =>
  o ? `${o.metadata.uid ?? ''}/${o.metadata.resourceVersion ?? ''}/${o.metadata.deletionTimestamp ? 'deleting' : ''}` : '-';

/** A write the cache has not shown yet. */
interface Awaited {
  /** The cached version the first of these writes replaced. */
  replaced: string;
  /** What was written last (a digest), to tell a repeat. */
  write: string;
  at: number;
  /** The server's answer to the last write (undefined after a delete). */
  written: KubeObject | undefined;
  /** Versions our writes made before the last: a cache showing one of them is still behind. */
  ours: Set<string>;
  create?: boolean;
  /**
   * A create the server answered AlreadyExists: the object is there, whatever the cache shows, so the record's
   * end wakes nobody (a cache that never shows it would otherwise bring a pass and a create every 30 s).
   */
  exists?: boolean;
}

export class Applier {
  readonly fieldManager: string;
  private readonly client: KubeClient;
  private readonly metrics: RuntimeMetrics | undefined;
  private readonly ttlMs: number;
  private readonly now: () => number;
  /** Writes the cache has not shown yet, by target. */
  private readonly inFlight = new Map<string, Awaited>();
  /** The kinds whose cache events the applier sees (watch()). */
  private readonly watched = new Set<ResourceType>();
  /** Kinds whose own writes are told from others' (ownWrites), and the versions the last few made, by target. */
  private readonly ownKinds = new Set<ResourceType>();
  private readonly ownVersions = new Map<string, string[]>();
  /** Told when a write's record ends with its cache never having shown it (onUnshownExpired). */
  private readonly expiredListeners = new Set<() => void>();
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires (on this.now()'s clock); Infinity when none is armed. */
  private expiryAt = Number.POSITIVE_INFINITY;

  constructor(opts: ApplierOptions) {
    this.client = opts.client;
    this.fieldManager = opts.fieldManager;
    this.metrics = opts.metrics;
    this.ttlMs = opts.expectationTtlMs ?? 30_000;
    this.now = opts.now ?? (() => performance.now());
    // The caches are told to list again after an etcd restore (KubeClient.relistAll): a write made before it
    // may have been taken back, so none is awaited any longer; the listeners' passes make again what is
    // still wanted, without waiting out expectationTtlMs.
    this.client.onRelistRequested?.(() => this.forgetAll());
  }

  /** Every write is forgotten (none awaited); the listeners are told if there was one. */
  private forgetAll(): void {
    if (this.inFlight.size === 0) return;
    this.inFlight.clear();
    for (const fn of [...this.expiredListeners]) fn();
  }

  /**
   * The cache the controller reads `resource` from: any event it has for an object ends the wait for a write
   * to that object. (Comparing versions alone would not do: a cache that showed an object made and then
   * deleted again shows its absence as before the create.)
   */
  watch<T extends KubeObject>(resource: ResourceType<T>, informer: Pick<Informer<T>, 'addEventHandler'>): void {
    this.watched.add(resource);
    const key = (o: KubeObject) => targetKey(resource, objectName(o), o.metadata.namespace);
    // A version one of our earlier writes made is not yet the last one's: the wait goes on.
    const seen = (o: KubeObject) => {
      const r = this.inFlight.get(key(o));
      if (r && !r.ours.has(o.metadata.resourceVersion ?? '')) this.inFlight.delete(key(o));
    };
    informer.addEventHandler({ add: seen, update: (_old, o) => seen(o), delete: (o) => this.inFlight.delete(key(o)) });
  }

  /**
   * Keeps the versions this applier's writes to `resource` make (the last few per object), so that a watch
   * can tell the controller's own writes from everyone else's (madeVersion): a pass planned from everything
   * its own write shows need not run again for it.
   */
  ownWrites(resource: ResourceType): void {
    this.ownKinds.add(resource);
  }

  /**
   * Calls `fn` when the record of a write ends before any cache showed the write (its time, expectationTtlMs,
   * passed): a write that an etcd restore took back, or a create of a kind no cache shows. While the record
   * lasted, a pass planning the same write skipped it as awaited; nothing else will bring another pass (no
   * event is coming), so the controller is woken to plan again. A write its cache shows ends its record
   * without a call: while all is well this costs nothing.
   */
  onUnshownExpired(fn: () => void): () => void {
    this.expiredListeners.add(fn);
    return () => this.expiredListeners.delete(fn);
  }

  /**
   * Ends the records whose time has passed and tells the listeners if any did. Called by the applier's own
   * timer; public for tests that drive the clock.
   */
  expireUnshown(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    this.expiryAt = Number.POSITIVE_INFINITY;
    const now = this.now();
    let expired = false;
    let next = Number.POSITIVE_INFINITY;
    for (const [key, r] of this.inFlight) {
      if (now - r.at >= this.ttlMs) {
        this.inFlight.delete(key);
        if (!r.exists) expired = true;
      } else next = Math.min(next, r.at + this.ttlMs);
    }
    if (next < Number.POSITIVE_INFINITY) this.armExpiry(next);
    if (expired) for (const fn of [...this.expiredListeners]) fn();
  }

  /** A timer for the earliest record's end, when someone listens (one timer, however many writes). */
  private armExpiry(at: number): void {
    if (this.expiredListeners.size === 0 || at >= this.expiryAt) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryAt = at;
    this.expiryTimer = setTimeout(() => this.expireUnshown(), Math.max(0, at - this.now()) + 1);
    this.expiryTimer.unref?.();
  }

  /** Whether this version of the object is one a write of this applier made (see ownWrites). */
  madeVersion(resource: ResourceType, o: KubeObject): boolean {
    const version = o.metadata.resourceVersion;
    return !!version && !!this.ownVersions.get(targetKey(resource, objectName(o), o.metadata.namespace))?.includes(version);
  }

  private noteOwn(resource: ResourceType, written: KubeObject | undefined): void {
    const version = written?.metadata.resourceVersion;
    if (!version || !this.ownKinds.has(resource)) return;
    const key = targetKey(resource, objectName(written), written.metadata.namespace);
    const versions = [...(this.ownVersions.get(key) ?? []), version].slice(-OWN_VERSIONS_KEPT);
    this.ownVersions.set(key, versions);
  }

  /**
   * Whether the cache still shows `cached` as it stood before a write of ours (to resource/name) that the
   * server accepted: a plan that reads this object reads it one write behind.
   */
  awaits(resource: ResourceType, name: string, namespace: string | undefined, cached: KubeObject | undefined): boolean {
    return this.record(targetKey(resource, name, namespace), cached) !== undefined;
  }

  /**
   * The object as this controller knows it: the cached copy, or the server's answer to a write of ours the
   * cache does not show yet (undefined for a delete). A plan that reads its own earlier writes reads this.
   */
  latest<T extends KubeObject>(
    resource: ResourceType<T>,
    name: string,
    namespace: string | undefined,
    cached: T | undefined,
  ): T | undefined {
    const r = this.record(targetKey(resource, name, namespace), cached);
    return r ? (r.written as T | undefined) : cached;
  }

  /**
   * A cached list as this controller knows it (see latest): the objects it made that the cache does not show
   * yet included. The list itself when nothing of it is awaited (never to be changed by its reader).
   */
  latestList<T extends KubeObject>(resource: ResourceType<T>, cached: readonly T[]): readonly T[] {
    // Read on every pass of a thousand objects: only those with a write awaited are looked at.
    const prefix = `${resource.group}/${resource.plural}/`;
    const awaited = new Map<string, string>();
    for (const key of this.inFlight.keys()) if (key.startsWith(prefix)) awaited.set(key.slice(prefix.length), key);
    if (awaited.size === 0) return cached;
    const out: T[] = [];
    for (const o of cached) {
      const key = awaited.get(`${o.metadata.namespace ?? ''}/${objectName(o)}`);
      if (key === undefined) {
        out.push(o);
        continue;
      }
      awaited.delete(`${o.metadata.namespace ?? ''}/${objectName(o)}`);
      const r = this.record(key, o);
      const l = r ? (r.written as T | undefined) : o;
      if (l) out.push(l);
    }
    // Made by this controller, not in the cache yet.
    for (const key of awaited.values()) {
      const r = this.record(key, undefined);
      if (r?.written) out.push(r.written as T);
    }
    return out;
  }

  /**
   * The creates a pass planned: a remembered create it no longer plans is one its caches show (or no longer
   * wanted), so an object deleted later is created again at once.
   */
  settleCreates(planned: readonly PlannedWrite[]): void {
    const keys = new Set(planned.filter((w) => w.op === 'create').map((w) => targetKey(w.resource, nameOf(w), namespaceOf(w))));
    for (const [key, r] of this.inFlight) if (r.create && !this.watchedKey(key) && !keys.has(key)) this.inFlight.delete(key);
  }

  /** Carries out steps of writes: each step after the one before, its writes up to `inFlight` at a time. */
  async runSteps(
    steps: readonly (readonly PlannedWrite[])[],
    lookup: CacheLookup,
    inFlight: number,
    signal?: AbortSignal,
  ): Promise<WriteOutcome[][]> {
    const outcomes: WriteOutcome[][] = [];
    for (const step of steps)
      outcomes.push(await mapLimit(step, inFlight, (w) => this.write(w, lookup(w.resource, nameOf(w), namespaceOf(w)), signal)));
    return outcomes;
  }

  /** Writes not yet shown by the caches (for tests and logs). */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Carries out the writes in order; answers what became of each. The first error ends the run. */
  async run(writes: readonly PlannedWrite[], lookup: CacheLookup, signal?: AbortSignal): Promise<WriteOutcome[]> {
    const outcomes: WriteOutcome[] = [];
    for (const w of writes) outcomes.push(await this.write(w, lookup(w.resource, nameOf(w), namespaceOf(w)), signal));
    return outcomes;
  }

  /**
   * Whether write() would make no request for `w` now: the same write of ours is on its way to the cache, or
   * the object as this controller knows it shows it already (or, for a status, is gone). A work queue asks
   * before it queues a write again that each pass plans again until the cache shows it.
   */
  needless(w: PlannedWrite, cached: KubeObject | undefined): boolean {
    const r = this.record(targetKey(w.resource, nameOf(w), namespaceOf(w)), cached);
    return skipped(w, r, r ? r.written : cached, JSON.stringify(whatOf(w))) !== undefined;
  }

  async write(w: PlannedWrite, cached: KubeObject | undefined, signal?: AbortSignal): Promise<WriteOutcome> {
    const name = nameOf(w);
    const namespace = namespaceOf(w);
    const key = targetKey(w.resource, name, namespace);
    // What tells a repeat: the write's JSON, compared with the last one made to this target (no hash needed).
    const what = JSON.stringify(whatOf(w));
    const r = this.record(key, cached);
    // The object as our last write left it, where the cache does not show that yet.
    const seen = r ? r.written : cached;
    const without = skipped(w, r, seen, what);
    if (without) return this.count(w, without);
    switch (w.op) {
      case 'apply': {
        const written = await this.client.patch(w.resource, name, appliedForm(w.resource, w.object, w.rewriteOn), {
          namespace,
          type: 'apply',
          force: true,
          fieldManager: this.fieldManager,
          signal,
        });
        this.remember(w, key, cached, written, what);
        return this.count(w, 'written');
      }
      case 'create': {
        try {
          const written = await this.client.create(w.resource, w.object, { signal });
          this.remember(w, key, cached, written, what);
          return this.count(w, 'written');
        } catch (e) {
          // Made by someone else, or by us before a restart: it is there, which is all a create asks.
          if (!isAlreadyExists(e)) throw e;
          this.remember(w, key, cached, undefined, what, true);
          return this.count(w, 'unchanged');
        }
      }
      case 'status': {
        if (!seen) return this.count(w, 'gone');
        try {
          const written = await applyStatusIfChanged(
            this.client,
            w.resource as ResourceType<WithStatus<unknown>>,
            seen,
            w.status as never,
            w.share as never,
            this.metrics,
          );
          if (written) this.remember(w, key, cached, written, what);
          return this.count(w, written ? 'written' : 'unchanged');
        } catch (e) {
          if (isNotFound(e)) return this.count(w, 'gone');
          throw e;
        }
      }
      case 'patch': {
        try {
          const written = await this.client.patch(w.resource, name, w.patch, {
            namespace,
            type: w.type ?? 'merge',
            ...(w.subresource ? { subresource: w.subresource } : {}),
            fieldManager: this.fieldManager,
            signal,
          });
          this.remember(w, key, cached, written, what);
          return this.count(w, 'written');
        } catch (e) {
          // The object went away since the cache showed it: there is nothing left to patch.
          if (isNotFound(e)) return this.count(w, 'gone');
          throw e;
        }
      }
      case 'delete': {
        // Straight to the API server (the caller's cache may lag behind a recent create, or it read the
        // object live), whatever this applier remembers: a create answered AlreadyExists is remembered with
        // no object, which would read as "gone". Pinned to the UID the caller or our own last write knows.
        if (w.uncached) {
          const uid = w.uid ?? r?.written?.metadata.uid;
          const deleted = await this.client.delete(w.resource, name, {
            namespace,
            propagationPolicy: w.propagationPolicy ?? 'Background',
            ...(uid ? { preconditions: { uid } } : {}),
            signal,
          });
          return this.count(w, deleted ? 'written' : 'gone');
        }
        if (!seen) return this.count(w, 'unchanged');
        const uid = w.uid ?? seen.metadata.uid;
        const deleted = await this.client.delete(w.resource, name, {
          namespace,
          propagationPolicy: w.propagationPolicy ?? 'Background',
          ...(uid ? { preconditions: { uid } } : {}),
          signal,
        });
        this.remember(w, key, cached, undefined, what);
        return this.count(w, deleted ? 'written' : 'gone');
      }
    }
  }

  /**
   * Applies a controller's share of an object's status (src/runtime/status.ts): skipped when the cache
   * shows it, under the share's field manager, pinned to the cached object's UID.
   */
  async applyStatus<T extends WithStatus<unknown>>(
    resource: ResourceType<T>,
    cached: T,
    status: NonNullable<T['status']>,
    share: StatusShare<NonNullable<T['status']>>,
  ): Promise<T | undefined> {
    const key = targetKey(resource, objectName(cached), cached.metadata.namespace);
    const written = await applyStatusIfChanged(this.client, resource, cached, status, share, this.metrics);
    if (written) {
      const w: StatusWrite = { op: 'status', resource, name: objectName(cached), status, share };
      this.remember(w, key, cached, written, JSON.stringify(whatOf(w)));
    }
    return written;
  }

  private record(key: string, cached: KubeObject | undefined): Awaited | undefined {
    const r = this.inFlight.get(key);
    if (!r) return undefined;
    // The cache moved on: to our last write (shown), or to someone else's version (ours is stale). A
    // version an earlier write of ours made is the cache still on its way.
    const moved = r.replaced !== cacheState(cached) && !r.ours.has(cached?.metadata.resourceVersion ?? '');
    if (moved || this.now() - r.at >= this.ttlMs) {
      this.inFlight.delete(key);
      return undefined;
    }
    return r;
  }

  private watchedKey(key: string): boolean {
    for (const rt of this.watched) if (key.startsWith(`${rt.group}/${rt.plural}/`)) return true;
    return false;
  }

  private remember(
    w: PlannedWrite,
    key: string,
    cached: KubeObject | undefined,
    written: KubeObject | undefined,
    what: string,
    exists = false,
  ): void {
    this.noteOwn(w.resource, written);
    const create = w.op === 'create';
    if (!this.watched.has(w.resource) && !create) return;
    // A write the server found already made changes no version: no event will come, none is awaited.
    const rv = written?.metadata.resourceVersion;
    if (rv !== undefined && rv === cached?.metadata.resourceVersion) return;
    const before = this.inFlight.get(key);
    const ours = new Set(before?.ours);
    const last = before?.written?.metadata.resourceVersion;
    if (last) ours.add(last);
    const at = this.now();
    this.inFlight.set(key, {
      replaced: before?.replaced ?? cacheState(cached),
      write: what,
      at,
      written,
      ours,
      ...(create || before?.create ? { create: true } : {}),
      ...(exists ? { exists: true } : {}),
    });
    this.armExpiry(at + this.ttlMs);
  }

  private count(w: PlannedWrite, outcome: WriteOutcome): WriteOutcome {
    this.metrics?.applierWrites.inc({ resource: w.resource.plural, op: w.op, result: outcome });
    return outcome;
  }
}
