import { objectName } from '../api/meta.ts';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';

export const hasFinalizer = (obj: KubeObject, finalizer: string): boolean => obj.metadata.finalizers?.includes(finalizer) ?? false;

/**
 * Adds or removes a finalizer with a merge patch that carries the object's resourceVersion, so that a
 * concurrent change makes it fail with 409 Conflict (and the reconcile retry) instead of overwriting
 * someone else's finalizer list.
 */
async function setFinalizers<T extends KubeObject>(client: KubeClient, rt: ResourceType<T>, obj: T, finalizers: string[]): Promise<T> {
  return client.patch(
    rt,
    objectName(obj),
    { metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion } },
    { namespace: obj.metadata.namespace, type: 'merge' },
  );
}

export async function addFinalizer<T extends KubeObject>(client: KubeClient, rt: ResourceType<T>, obj: T, finalizer: string): Promise<T> {
  if (hasFinalizer(obj, finalizer)) return obj;
  return setFinalizers(client, rt, obj, [...(obj.metadata.finalizers ?? []), finalizer]);
}

export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  rt: ResourceType<T>,
  obj: T,
  finalizer: string,
): Promise<T> {
  if (!hasFinalizer(obj, finalizer)) return obj;
  return setFinalizers(
    client,
    rt,
    obj,
    (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer),
  );
}
