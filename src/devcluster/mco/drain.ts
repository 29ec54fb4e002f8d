import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ApiError, isNotFound } from '../../kube/errors.ts';
import { type Pod, Pods } from '../../kube/resources.ts';

/**
 * Draining a node as the machine config daemon does it (the kubectl drain helper with Force and
 * DeleteEmptyDirData): every pod bound to the node is evicted through the Eviction API, except pods a
 * DaemonSet controls (they belong on every node) and mirror pods (the kubelet's static pods); a
 * PodDisruptionBudget that refuses an eviction (429) is asked again later; the drain is over once every
 * evicted pod is gone.
 */

export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

export const podKey = (p: Pod): string => `${p.metadata.namespace ?? ''}/${objectName(p)}`;

/** Whether draining leaves this pod where it is. */
export function drainSkips(p: Pod): boolean {
  if (p.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return true;
  return (p.metadata.ownerReferences ?? []).some((r) => r.kind === 'DaemonSet' && r.controller === true);
}

export interface DrainState {
  /** Pods whose eviction a disruption budget refused, by podKey: when to ask again. */
  retryAt: ReadonlyMap<string, number>;
  /** UIDs of pods whose eviction was accepted: the drain waits for them to go. */
  evicted: ReadonlySet<string>;
}

export interface DrainPlan {
  /** Pods to evict now. */
  evict: Pod[];
  /** Pods still to leave: being deleted, or refused by a budget until their retry time. */
  waiting: number;
  /** The earliest retry time of a refused eviction, if any. */
  nextRetryAt?: number;
}

/** What draining a node does next, given the pods bound to it. Done when nothing is to evict and nothing is waited for. */
export function planDrain(pods: readonly Pod[], state: DrainState, now: number): DrainPlan {
  const evict: Pod[] = [];
  let waiting = 0;
  let nextRetryAt: number | undefined;
  for (const p of pods) {
    if (drainSkips(p)) continue;
    if (p.metadata.deletionTimestamp || state.evicted.has(p.metadata.uid ?? '')) {
      waiting++;
      continue;
    }
    const retry = state.retryAt.get(podKey(p));
    if (retry !== undefined && retry > now) {
      waiting++;
      nextRetryAt = nextRetryAt === undefined ? retry : Math.min(nextRetryAt, retry);
      continue;
    }
    evict.push(p);
  }
  return { evict, waiting, ...(nextRetryAt !== undefined ? { nextRetryAt } : {}) };
}

export type EvictionResult = 'evicted' | 'gone' | 'refused';

/** POST pods/<name>/eviction (policy/v1): the API server deletes the pod unless a disruption budget forbids it (429). */
export async function evictPod(client: KubeClient, pod: Pod, signal: AbortSignal): Promise<EvictionResult> {
  const { name, namespace } = pod.metadata;
  try {
    await client.request('POST', client.path(Pods, namespace, name, 'eviction'), {
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
      signal,
    });
    return 'evicted';
  } catch (e) {
    if (isNotFound(e)) return 'gone';
    if (e instanceof ApiError && e.status === 429) return 'refused';
    throw e;
  }
}
