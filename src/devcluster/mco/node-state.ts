import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_STATE } from '../../api/names.ts';
import type { MachineConfigPool } from '../../api/openshift.ts';
import type { Node } from '../../kube/resources.ts';

/**
 * Node and pool arithmetic as the real node controller does it (pkg/controller/node/status.go): what
 * "ready", "updated", "unavailable" and "degraded" mean for a node of a pool.
 */

export type NodeState = 'Done' | 'Working' | 'Degraded' | 'Unreconcilable';

export const annotation = (n: Node, key: string): string | undefined => n.metadata.annotations?.[key];
export const nodeState = (n: Node): string | undefined => annotation(n, MCO_STATE);

/** Ready condition True, network available, and not cordoned. */
export function isNodeReady(n: Node): boolean {
  for (const c of n.status?.conditions ?? []) {
    if (c.type === 'Ready' && c.status !== 'True') return false;
    if (c.type === 'NetworkUnavailable' && c.status !== 'False') return false;
  }
  return !n.spec?.unschedulable;
}

/** The daemon finished: current == desired and state Done. */
export function isNodeDone(n: Node): boolean {
  const cur = annotation(n, MCO_CURRENT_CONFIG);
  return cur !== undefined && cur === annotation(n, MCO_DESIRED_CONFIG) && nodeState(n) === 'Done';
}

export const isNodeDoneAt = (n: Node, target: string | undefined): boolean =>
  !!target && isNodeDone(n) && annotation(n, MCO_CURRENT_CONFIG) === target;

export const isNodeFailing = (n: Node): boolean => nodeState(n) === 'Degraded' || nodeState(n) === 'Unreconcilable';

/** Not ready, or updating; a node whose daemon failed does not count (it may be retargeted). */
export function isNodeUnavailable(n: Node): boolean {
  if (!isNodeReady(n)) return true;
  if (isNodeDone(n)) return false;
  return !isNodeFailing(n);
}

/** maxUnavailable: an int or a percentage of the pool's nodes (rounded down), at least 1; default 1. */
export function maxUnavailableOf(pool: MachineConfigPool, nodeCount: number): number {
  const v = pool.spec?.maxUnavailable;
  let n = 1;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string') {
    const pct = /^(\d+)%$/.exec(v.trim());
    if (pct) n = Math.floor((nodeCount * Number(pct[1])) / 100);
    else if (/^\d+$/.test(v.trim())) n = Number(v);
  }
  return Math.max(1, Math.floor(n));
}

/** Update order: by name, numbers compared as numbers (worker-2 before worker-10). */
export const nodeOrder = new Intl.Collator('en', { numeric: true }).compare;

export function byName(a: string | undefined, b: string | undefined): number {
  const x = a ?? '';
  const y = b ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}
