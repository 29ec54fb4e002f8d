import { apiVersionOf, type KubeClient, type ResourceType } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import type { RuntimeMetrics } from './metrics.ts';
import { sameJson } from './samejson.ts';

export type WithStatus<S> = KubeObject & { status?: S };

/**
 * Writes obj's status only when it differs from what the cached object already holds. Answers the
 * updated object, or undefined when the write was skipped. A stale cache makes the write fail with
 * 409 Conflict, which the controller retries against the fresher cache. For a status with one writer;
 * a status that several controllers share is written with applyStatusIfChanged.
 */
export async function writeStatusIfChanged<T extends WithStatus<unknown>>(
  client: KubeClient,
  rt: ResourceType<T>,
  cached: T,
  status: NonNullable<T['status']>,
  metrics?: RuntimeMetrics,
): Promise<T | undefined> {
  if (sameJson(cached.status, status)) {
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'skipped' });
    return undefined;
  }
  try {
    const updated = await client.updateStatus(rt, { ...cached, status } as T);
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'written' });
    return updated;
  } catch (e) {
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'error' });
    throw e;
  }
}

/** One controller's share of a status that several controllers write (docs/architecture.md, "One writer per field"). */
export interface StatusShare<S> {
  /** The field manager the server records as the owner of what this controller applies. */
  fieldManager: string;
  /** The fields this controller owns, as they stand in a status (the cached one): what an apply is compared with. */
  owned(status: S | undefined): S;
  /**
   * The kind has no status subresource and this controller owns the object whole (a report such as a
   * KataNode): the status is applied to the object itself, with the owner references the object has, which
   * an apply under the same field manager that left them out would remove.
   */
  inObject?: boolean;
}

/**
 * Server-side applies `status` (only the fields the share owns: any other is dropped) to the status subresource (or,
 * for a kind without one, to the object: `inObject`) under the
 * share's field manager, unless the cached object already shows exactly these fields. The server keeps
 * every other manager's fields, and removes a field this manager applied before and applies no longer.
 * No resourceVersion is sent, so a write never fails for someone else's; the UID is, so that a
 * KataConfig deleted and made again under the same name is not written with the old one's status.
 * Answers the updated object, or undefined when the write was skipped.
 */
export async function applyStatusIfChanged<T extends WithStatus<unknown>>(
  client: KubeClient,
  rt: ResourceType<T>,
  cached: T,
  status: NonNullable<T['status']>,
  share: StatusShare<NonNullable<T['status']>>,
  metrics?: RuntimeMetrics,
): Promise<T | undefined> {
  // Only what the share owns is ever applied, in its canonical form (a map list in a fixed order).
  const applied = share.owned(status);
  if (sameJson(share.owned(cached.status as NonNullable<T['status']> | undefined), applied)) {
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'skipped' });
    return undefined;
  }
  const { name, namespace, uid, ownerReferences } = cached.metadata;
  const owners = share.inObject && ownerReferences?.length ? { ownerReferences } : {};
  const body = {
    apiVersion: apiVersionOf(rt),
    kind: rt.kind,
    metadata: { name, ...(namespace ? { namespace } : {}), ...(uid ? { uid } : {}), ...owners },
    status: applied,
  };
  try {
    const updated = await client.patch(rt, name ?? '', body, {
      namespace,
      type: 'apply',
      ...(share.inObject ? {} : { subresource: 'status' }),
      fieldManager: share.fieldManager,
      force: true,
    });
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'written' });
    return updated;
  } catch (e) {
    metrics?.statusWrites.inc({ resource: rt.plural, result: 'error' });
    throw e;
  }
}
