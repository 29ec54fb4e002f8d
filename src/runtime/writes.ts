import { createHash } from 'node:crypto';
import { objectName } from '../api/meta.ts';
import { apiVersionOf, type PatchType, type ResourceType } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { sameJson } from './samejson.ts';
import type { StatusShare, WithStatus } from './status.ts';

/**
 * The writes a controller plans (docs/architecture.md, "One apply path"), as data, and when a cached object
 * already shows one done: what the applier (applier.ts) compares before it sends anything.
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
   * stays until osc wants something else, as for a workload an administrator may restart or debug;
   * `metadata`, the object is made whole, and once made only the metadata the plan names is compared (a
   * report whose status the controller writes as it changes, with a status write): no digest annotation.
   */
  rewriteOn?: 'fields' | 'plan' | 'metadata';
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
  /**
   * What the object shows once the patch is made (a partial object; null: the key is absent). The patch is
   * not made when the cache shows it, and a patch planned again with the same `shows` (its other keys, a
   * time say, differing) is a repeat. Absent: the whole patch is compared.
   */
  shows?: unknown;
}

export interface DeleteWrite {
  op: 'delete';
  resource: ResourceType;
  name: string;
  namespace?: string;
  /** The UID the plan saw: only that object is deleted. */
  uid?: string;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Delete even when the cache shows no object (it may lag behind a recent create): a 404 is fine. */
  uncached?: boolean;
}

/** An object to make when it does not exist, and never to change once it does (an administrator may tune it). */
export interface CreateWrite<T extends KubeObject = KubeObject> {
  op: 'create';
  resource: ResourceType<T>;
  object: T;
}

/** The controller's share of an object's status: applied when what the share owns differs. */
export interface StatusWrite<S = unknown> {
  op: 'status';
  resource: ResourceType;
  name: string;
  namespace?: string;
  status: S;
  share: StatusShare<S>;
}

export type Write = ApplyWrite | PatchWrite | DeleteWrite;

/** Every write the applier makes: the common three, creates and status shares. */
export type PlannedWrite = Write | CreateWrite | StatusWrite;

/** What the applier did with one write. */
export type WriteOutcome = 'written' | 'unchanged' | 'awaited' | 'gone';

/** The cached copy of a write's target (undefined when the cache has none). */
export type CacheLookup = (resource: ResourceType, name: string, namespace: string | undefined) => KubeObject | undefined;

const digest = (v: unknown): string => createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 16);
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

/** Whether `have` shows what a merge patch `want` writes: every named key with its value, a null one absent. */
export function showsPatch(have: unknown, want: unknown): boolean {
  if (want === null) return have === undefined || have === null;
  if (want && typeof want === 'object' && !Array.isArray(want)) {
    if (!have || typeof have !== 'object' || Array.isArray(have)) return false;
    return Object.entries(want).every(([k, w]) => showsPatch((have as Record<string, unknown>)[k], w));
  }
  return covers(have, want);
}

/** The object as the applier sends it: with its apiVersion and kind, and the digest of the rest. */
export function appliedForm<T extends KubeObject>(resource: ResourceType<T>, object: T, rewriteOn?: ApplyWrite['rewriteOn']): T {
  const { apiVersion: _a, kind: _k, ...body } = object;
  if (rewriteOn === 'metadata') return { apiVersion: apiVersionOf(resource), kind: resource.kind, ...body } as unknown as T;
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
  if (rewriteOn === 'metadata') {
    const { name: _n, namespace: _ns, ...meta } = object.metadata;
    return covers(cached.metadata, meta);
  }
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
export function cacheShows(w: PlannedWrite, cached: KubeObject | undefined): boolean {
  if (w.op === 'apply') return showsApplied(cached, w.resource, w.object, w.rewriteOn);
  if (w.op === 'delete') return !cached || !!cached.metadata.deletionTimestamp;
  if (w.op === 'create') return !!cached && !cached.metadata.deletionTimestamp;
  if (w.op === 'status') return !!cached && statusShows(cached as WithStatus<unknown>, w);
  return w.shows !== undefined && !!cached && showsPatch(cached, w.shows);
}

const statusShows = (o: WithStatus<unknown>, w: StatusWrite): boolean => sameJson(w.share.owned(o.status), w.share.owned(w.status));

export const nameOf = (w: PlannedWrite): string => (w.op === 'apply' || w.op === 'create' ? objectName(w.object) : w.name);
export const namespaceOf = (w: PlannedWrite): string | undefined =>
  w.op === 'apply' || w.op === 'create' ? w.object.metadata.namespace : w.namespace;
/** What tells a repeat of a write from another write to the same object. */
export const whatOf = (w: PlannedWrite): unknown => {
  if (w.op === 'apply' || w.op === 'create') return [w.op, w.object];
  if (w.op === 'patch') return w.shows !== undefined ? ['shows', w.shows] : w.patch;
  if (w.op === 'status') return ['status', w.share.owned(w.status)];
  return 'delete';
};

/**
 * What write() answers without a request, if it makes none (else undefined): the same write of ours is on
 * its way to the cache (`awaited`), or the object as the writer knows it (`seen`: the cached one, or the
 * answer to its last write) shows it already, or has gone (a status or a delete). A delete of an object the
 * writer does not cache (`uncached`) always goes to the API server.
 */
export function skipped(
  w: PlannedWrite,
  r: { write: string } | undefined,
  seen: KubeObject | undefined,
  what: string,
): WriteOutcome | undefined {
  if (r?.write === what) return 'awaited';
  if (w.op === 'delete' && w.uncached) return undefined;
  if (!seen && w.op === 'status') return 'gone';
  if (!seen && w.op === 'delete') return 'unchanged';
  return cacheShows(w, seen) ? 'unchanged' : undefined;
}
