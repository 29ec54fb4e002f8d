import { isDeepStrictEqual } from 'node:util';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import type { RuntimeMetrics } from './metrics.ts';

export type WithStatus<S> = KubeObject & { status?: S };

/**
 * Writes obj's status only when it differs from what the cached object already holds. Answers the
 * updated object, or undefined when the write was skipped. A stale cache makes the write fail with
 * 409 Conflict, which the controller retries against the fresher cache.
 */
export async function writeStatusIfChanged<T extends WithStatus<unknown>>(
  client: KubeClient,
  rt: ResourceType<T>,
  cached: T,
  status: NonNullable<T['status']>,
  metrics?: RuntimeMetrics,
): Promise<T | undefined> {
  if (isDeepStrictEqual(normalize(cached.status), normalize(status))) {
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

/** JSON round trip: drops undefined fields so that {a: undefined} equals {}. */
function normalize(v: unknown): unknown {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}
