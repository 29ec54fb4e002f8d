import { RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../api/confidential.ts';
import { objectName } from '../../api/meta.ts';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from '../../api/names.ts';
import type { Node, Pod, RuntimeClass } from '../../kube/resources.ts';
import { RuntimeClasses } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import type { Platform } from '../../platform/platform.ts';
import type { PlannedWrite } from '../../runtime/applier.ts';
import type { ExtraClasses } from './runtimeclasses.ts';
import { podsUsing } from './state.ts';

/**
 * The KataConfig controller's RuntimeClass plan (pure): the classes offered made (last, once kata is on the
 * nodes), adopted and guarded by the cleanup finalizer; those no longer offered deleted once no pod uses
 * them; a class whose handler must change deleted first, to be made again once gone. The writes go through
 * the runtime applier with the rest of a pass's plan (plan.ts).
 */

export interface RuntimeClassesObserved {
  /** status.runtimeClasses as the KataConfig shows it. */
  current: readonly string[];
  /** kata, kata-remote: what the spec asks for. */
  wanted: readonly string[];
  /** The classes beyond them (confidential.ts), when the confidential pass ran. */
  extra: ExtraClasses | undefined;
  /** Whether kata is on the selected nodes: classes are made only then. */
  installed: boolean;
  nodes: readonly Node[];
  /** The RuntimeClasses as this controller knows them (its own writes the cache does not show yet included). */
  runtimeClasses: readonly RuntimeClass[];
  pods: readonly Pod[];
  platform: Platform<unknown>;
  owner: OwnerReference;
}

export interface RuntimeClassesPlan {
  /** The classes made sure of this pass (made, or adopted and guarded). */
  ensure: string[];
  /** The writes that make sure of them. */
  writes: PlannedWrite[];
  /** Classes to delete (osc's own only: the reconciler checks the owner, with a live read if uncached). */
  delete: string[];
  /** status.runtimeClasses after this pass. */
  runtimeClasses: string[];
  /** Classes no longer wanted that pods still use: kept, and looked at again. */
  waitingForPods: { name: string; pods: string[] }[];
}

const ownedByKataConfig = (rc: RuntimeClass | undefined): boolean => !!rc?.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig');

/** One pass's RuntimeClasses: what to make sure of, what to delete, and what status.runtimeClasses says. */
export function planRuntimeClasses(obs: RuntimeClassesObserved): RuntimeClassesPlan {
  const { extra, installed } = obs;
  const byName = new Map(obs.runtimeClasses.map((rc) => [objectName(rc), rc]));
  let runtimeClasses = [...obs.current];
  const wanted = [...obs.wanted, ...(extra?.classes.map((c) => c.name) ?? [])];
  // A class whose handler must change (the TEE changed) goes first, and is made again once gone.
  const replaced = (extra?.classes ?? [])
    .filter((c) => {
      const existing = byName.get(c.name);
      return ownedByKataConfig(existing) && existing?.handler !== c.handler;
    })
    .map((c) => c.name);
  const plan: RuntimeClassesPlan = { ensure: [], writes: [], delete: [], runtimeClasses, waitingForPods: [] };
  if (installed) {
    // RuntimeClasses come last: before they exist, no pod can ask for kata and land on a node without it.
    for (const name of wanted) {
      if (replaced.includes(name)) continue;
      plan.ensure.push(name);
      const desired = extra?.classes.find((c) => c.name === name) ?? obs.platform.runtimeClass(name, obs.nodes);
      const write = ensureWrite(name, desired, byName.get(name), obs.owner);
      if (write) plan.writes.push(write);
      if (!runtimeClasses.includes(name)) runtimeClasses = [...runtimeClasses, name];
    }
  }
  // A RuntimeClass no longer offered (peer pods or a feature gate turned off) goes once no pod uses it.
  // status.runtimeClasses names what osc made, but a status can go back (etcd restored from a backup, a
  // write from a cache that had not seen the restore yet) while the class stays: kata or kata-remote still
  // owned by a KataConfig is osc's too, and goes as well.
  const frozen = extra?.frozen ?? [];
  const ownedBase = [KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS].filter(
    (n) =>
      !runtimeClasses.includes(n) &&
      !obs.wanted.includes(n) &&
      ownedByKataConfig(byName.get(n)) &&
      !byName.get(n)?.metadata.deletionTimestamp,
  );
  for (const name of [...runtimeClasses, ...ownedBase].filter(
    (n) => (!wanted.includes(n) && !frozen.includes(n)) || replaced.includes(n),
  )) {
    const using = podsUsing(obs.pods, new Set([name]));
    if (using.length) {
      plan.waitingForPods.push({ name, pods: using });
      continue;
    }
    plan.delete.push(name);
    runtimeClasses = runtimeClasses.filter((n) => n !== name);
  }
  plan.runtimeClasses = runtimeClasses;
  return plan;
}

/**
 * The write that makes sure of one class. Never an overwrite of an existing RuntimeClass: an administrator
 * may have tuned its overhead. One osc made gets its node selector's labels back, the cleanup finalizer if it
 * predates it, and the KataConfig in effect as its owner (one an earlier KataConfig made is adopted).
 */
function ensureWrite(
  name: string,
  spec: { handler: string; nodeSelector: Record<string, string>; overhead?: Record<string, string> },
  existing: RuntimeClass | undefined,
  owner: OwnerReference,
): PlannedWrite | undefined {
  const { nodeSelector } = spec;
  if (!existing) {
    const rc: RuntimeClass = {
      // The finalizer keeps the class while pods use it, whoever deletes it (runtimeclass-cleanup.ts).
      metadata: { name, ownerReferences: [owner], finalizers: [RUNTIME_CLASS_CLEANUP_FINALIZER] },
      handler: spec.handler,
      ...(spec.overhead ? { overhead: { podFixed: { ...spec.overhead } } } : {}),
      scheduling: { nodeSelector },
    };
    return { op: 'create', resource: RuntimeClasses, object: rc };
  }
  const refs = existing.metadata.ownerReferences ?? [];
  if (!ownedByKataConfig(existing)) return undefined;
  const shows: { scheduling?: { nodeSelector: Record<string, string> }; metadata?: Record<string, unknown> } = {};
  // Its node selector is what keeps kata pods off nodes without kata: the labels osc's nodes carry are put
  // back (an administrator may add others, narrowing it further).
  const have = existing.scheduling?.nodeSelector ?? {};
  if (Object.entries(nodeSelector).some(([k, v]) => have[k] !== v)) shows.scheduling = { nodeSelector };
  const metadata: Record<string, unknown> = {};
  // One osc made before it guarded its classes gets the guard (a merge patch replaces the whole list).
  const finalizers = existing.metadata.finalizers ?? [];
  if (!existing.metadata.deletionTimestamp && !finalizers.includes(RUNTIME_CLASS_CLEANUP_FINALIZER))
    metadata.finalizers = [...finalizers, RUNTIME_CLASS_CLEANUP_FINALIZER];
  if (!refs.some((r) => r.kind === 'KataConfig' && r.uid === owner.uid))
    metadata.ownerReferences = [...refs.filter((r) => r.kind !== 'KataConfig'), owner];
  if (Object.keys(metadata).length) shows.metadata = metadata;
  if (!shows.scheduling && !shows.metadata) return undefined;
  // A finalizer list is pinned to the version read, so that a concurrent change fails with 409 (and the pass
  // is retried) instead of losing someone else's finalizer.
  const pin = metadata.finalizers ? { resourceVersion: existing.metadata.resourceVersion } : {};
  const patch = { ...shows, ...(shows.metadata || pin.resourceVersion ? { metadata: { ...shows.metadata, ...pin } } : {}) };
  return { op: 'patch', resource: RuntimeClasses, name, patch, type: 'merge', shows };
}
