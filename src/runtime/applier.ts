import { createHash } from 'node:crypto';
import { apiVersionOf, type KubeClient, type PatchType, type ResourceType } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeObject } from '../kube/types.ts';
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
 *   status), where an apply would make osc the owner of the whole key set it names;
 * - deletes, with a UID precondition so that an object made again under the same name is not the one deleted;
 * - makes no write when the cache already shows it: an applied object whose digest annotation and every
 *   named field match, a delete of what is gone or going;
 * - remembers each write to a watched kind until its cache has an event for the object (or no longer shows
 *   the version the write replaced), so that a pass planned from a cache one event behind does not make the
 *   same write again. A kind the controller does not cache has nothing to lag behind: nothing is remembered.
 *
 * It catches nothing: a 409 (someone else's newer version, a precondition) or a transient error ends the
 * pass and the controller's work queue retries the key (src/runtime/controller.ts: a few quick retries for
 * conflicts, then the rate-limited backoff every error gets). That is the only conflict policy.
 */

/** On every object the applier applies: a digest of what was applied, to tell a changed plan from an unchanged one. */
export const APPLIED_DIGEST_ANNOTATION = 'kataconfiguration.openshift.io/applied-digest';

/** An object the controller owns, as a whole: server-side applied. */
export interface ApplyWrite<T extends KubeObject = KubeObject> {
  op: 'apply';
  resource: ResourceType<T>;
  object: T;
  /**
   * What makes a write due: `fields` (the default), the plan changed or a field it names was edited (the
   * edit is corrected); `plan`, only the plan changed (its digest), so an administrator's edit of the object
   * stays until osc wants something else, as for a workload an administrator may restart or debug.
   */
  rewriteOn?: 'fields' | 'plan';
}

/** Keys in an object someone else owns: a merge (or JSON) patch, optionally pinned to a resourceVersion inside it. */
export interface PatchWrite {
  op: 'patch';
  resource: ResourceType;
  name: string;
  namespace?: string;
  patch: unknown;
  type?: Extract<PatchType, 'merge' | 'json'>;
  subresource?: string;
}

export interface DeleteWrite {
  op: 'delete';
  resource: ResourceType;
  name: string;
  namespace?: string;
  /** The UID the plan saw: only that object is deleted. */
  uid?: string;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
}

export type Write = ApplyWrite | PatchWrite | DeleteWrite;

/** What the applier did with one write. */
export type WriteOutcome = 'written' | 'unchanged' | 'awaited' | 'gone';

/** The cached copy of a write's target (undefined when the cache has none). */
export type CacheLookup = (resource: ResourceType, name: string, namespace: string | undefined) => KubeObject | undefined;

export interface ApplierOptions {
  client: KubeClient;
  /** The controller's field manager: the server records it as the owner of every field it applies. */
  fieldManager: string;
  metrics?: RuntimeMetrics;
  /** How long a write the cache has not shown is remembered (then the next pass may make it again). */
  expectationTtlMs?: number;
  now?: () => number;
}

const digest = (v: unknown): string => createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 16);
const targetKey = (resource: ResourceType, name: string, namespace: string | undefined) =>
  `${resource.group}/${resource.plural}/${namespace ?? ''}/${name}`;
/** Which version of an object the cache holds ('-' for none): a write is shown once this changes. */
const cacheState = (o: KubeObject | undefined): string =>
  o ? `${o.metadata.uid ?? ''}/${o.metadata.resourceVersion ?? ''}/${o.metadata.deletionTimestamp ? 'deleting' : ''}` : '-';

/**
 * Whether `have` holds every field of `want` with the same value (the API server adds defaults, which are
 * not ours to compare); arrays must match element by element.
 */
export function covers(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => covers(have[i], w));
  }
  if (want && typeof want === 'object') {
    if (!have || typeof have !== 'object' || Array.isArray(have)) return false;
    return Object.entries(want).every(([k, w]) => covers((have as Record<string, unknown>)[k], w));
  }
  return have === want;
}

/** The object as the applier sends it: with its apiVersion and kind, and the digest of the rest. */
export function appliedForm<T extends KubeObject>(resource: ResourceType<T>, object: T): T {
  const { apiVersion: _a, kind: _k, ...body } = object;
  const annotations = { ...object.metadata.annotations, [APPLIED_DIGEST_ANNOTATION]: digest(body) };
  return {
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    ...body,
    metadata: { ...object.metadata, annotations },
  } as unknown as T;
}

/**
 * Whether the cached object already is what applying `object` would make it: the same digest (so no field
 * this manager applied before has been dropped from the plan since) and every field it names with the named
 * value (so a hand edit of one of them is corrected). Fields others set are not ours to compare.
 */
export function showsApplied<T extends KubeObject>(
  cached: KubeObject | undefined,
  resource: ResourceType<T>,
  object: T,
  rewriteOn: ApplyWrite['rewriteOn'] = 'fields',
): boolean {
  if (!cached || cached.metadata.deletionTimestamp) return false;
  const { apiVersion: _a, kind: _k, metadata, ...body } = appliedForm(resource, object);
  if (rewriteOn === 'plan') {
    const key = APPLIED_DIGEST_ANNOTATION;
    return cached.metadata.annotations?.[key] === metadata.annotations?.[key];
  }
  const { namespace: _n, ...meta } = metadata;
  return covers(cached.metadata, meta) && covers(cached, body);
}

/**
 * Whether the cache already shows a write done: an applied object as applied, a deleted one gone or going.
 * A patch of someone else's object is not known to be done (its plan compares the keys it patches).
 */
export function cacheShows(w: Write, cached: KubeObject | undefined): boolean {
  if (w.op === 'apply') return showsApplied(cached, w.resource, w.object, w.rewriteOn);
  if (w.op === 'delete') return !cached || !!cached.metadata.deletionTimestamp;
  return false;
}

export class Applier {
  readonly fieldManager: string;
  private readonly client: KubeClient;
  private readonly metrics: RuntimeMetrics | undefined;
  private readonly ttlMs: number;
  private readonly now: () => number;
  /** Writes the cache has not shown yet: the cached version they replaced, and what was written. */
  private readonly inFlight = new Map<string, { replaced: string; write: string; at: number }>();
  /** The kinds whose cache events the applier sees (watch()). */
  private readonly watched = new Set<ResourceType>();

  constructor(opts: ApplierOptions) {
    this.client = opts.client;
    this.fieldManager = opts.fieldManager;
    this.metrics = opts.metrics;
    this.ttlMs = opts.expectationTtlMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The cache the controller reads `resource` from: any event it has for an object ends the wait for a write
   * to that object. (Comparing versions alone would not do: a cache that showed an object made and then
   * deleted again shows its absence as before the create.)
   */
  watch<T extends KubeObject>(resource: ResourceType<T>, informer: Pick<Informer<T>, 'addEventHandler'>): void {
    this.watched.add(resource);
    const seen = (o: KubeObject) => this.inFlight.delete(targetKey(resource, o.metadata.name ?? '', o.metadata.namespace));
    informer.addEventHandler({ add: seen, update: (_old, o) => seen(o), delete: seen });
  }

  /**
   * Whether the cache still shows `cached` as it stood before a write of ours (to resource/name) that the
   * server accepted: a plan that reads this object reads it one write behind.
   */
  awaits(resource: ResourceType, name: string, namespace: string | undefined, cached: KubeObject | undefined): boolean {
    return this.record(targetKey(resource, name, namespace), cached) !== undefined;
  }

  /** Writes not yet shown by the caches (for tests and logs). */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Carries out the writes in order; answers what became of each. The first error ends the run. */
  async run(writes: readonly Write[], lookup: CacheLookup, signal?: AbortSignal): Promise<WriteOutcome[]> {
    const outcomes: WriteOutcome[] = [];
    for (const w of writes) outcomes.push(await this.write(w, lookup(w.resource, nameOf(w), namespaceOf(w)), signal));
    return outcomes;
  }

  async write(w: Write, cached: KubeObject | undefined, signal?: AbortSignal): Promise<WriteOutcome> {
    const name = nameOf(w);
    const namespace = namespaceOf(w);
    const key = targetKey(w.resource, name, namespace);
    const what = digest(w.op === 'apply' ? w.object : w.op === 'patch' ? w.patch : 'delete');
    if (this.record(key, cached)?.write === what) return this.count(w, 'awaited');
    switch (w.op) {
      case 'apply': {
        if (cacheShows(w, cached)) return this.count(w, 'unchanged');
        const written = await this.client.patch(w.resource, name, appliedForm(w.resource, w.object), {
          namespace,
          type: 'apply',
          force: true,
          fieldManager: this.fieldManager,
          signal,
        });
        this.remember(w, key, cached, written, what);
        return this.count(w, 'written');
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
        if (!cached || cacheShows(w, cached)) return this.count(w, 'unchanged');
        const uid = w.uid ?? cached.metadata.uid;
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
  applyStatus<T extends WithStatus<unknown>>(
    resource: ResourceType<T>,
    cached: T,
    status: NonNullable<T['status']>,
    share: StatusShare<NonNullable<T['status']>>,
  ): Promise<T | undefined> {
    return applyStatusIfChanged(this.client, resource, cached, status, share, this.metrics);
  }

  private record(key: string, cached: KubeObject | undefined) {
    const r = this.inFlight.get(key);
    if (!r) return undefined;
    if (r.replaced !== cacheState(cached) || this.now() - r.at >= this.ttlMs) {
      this.inFlight.delete(key);
      return undefined;
    }
    return r;
  }

  private remember(w: Write, key: string, cached: KubeObject | undefined, written: KubeObject | undefined, what: string): void {
    if (!this.watched.has(w.resource)) return;
    // A write the server found already made changes no version: no event will come, none is awaited.
    if (written && cached && written.metadata.resourceVersion === cached.metadata.resourceVersion) return;
    this.inFlight.set(key, { replaced: cacheState(cached), write: what, at: this.now() });
  }

  private count(w: Write, outcome: WriteOutcome): WriteOutcome {
    this.metrics?.applierWrites.inc({ resource: w.resource.plural, op: w.op, result: outcome });
    return outcome;
  }
}

const nameOf = (w: Write): string => (w.op === 'apply' ? (w.object.metadata.name ?? '') : w.name);
const namespaceOf = (w: Write): string | undefined => (w.op === 'apply' ? w.object.metadata.namespace : w.namespace);
