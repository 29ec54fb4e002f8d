import { MCO_DESIRED_CONFIG, MCO_REASON } from '../../api/names.ts';
import type { MachineConfigPool, PoolCondition } from '../../api/openshift.ts';
import type { Node } from '../../kube/resources.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import { annotation, isNodeDoneAt, isNodeFailing, isNodeReady, isNodeUnavailable, maxUnavailableOf } from './node-state.ts';

/** The node controller's pure parts: a pool's status (calculateStatus) and which nodes to update next (getCandidateMachines). */

export type PoolStatus = NonNullable<MachineConfigPool['status']>;

export interface PoolStatusInput {
  /** The pool's member nodes. */
  nodes: readonly Node[];
  /** Why the pool's configuration could not be rendered, if it could not. */
  renderError?: string;
  /** Why nodes that match the pool cannot join it (one message each, in node order). */
  conflicts?: readonly string[];
  now?: Date;
}

/** The real node controller's calculateStatus; unchanged conditions keep their lastTransitionTime. */
export function computePoolStatus(pool: MachineConfigPool, input: PoolStatusInput): PoolStatus {
  const { nodes, renderError } = input;
  const conflicts = input.conflicts ?? [];
  const target = pool.spec?.configuration?.name;
  let updated = 0;
  let ready = 0;
  let unavailable = 0;
  const degraded: Node[] = [];
  for (const n of nodes) {
    if (isNodeDoneAt(n, target)) {
      updated++;
      if (isNodeReady(n)) ready++;
    }
    if (isNodeUnavailable(n)) unavailable++;
    if (isNodeFailing(n)) degraded.push(n);
  }
  const machineCount = nodes.length;
  const prev = pool.status;
  const now = rfc3339(input.now ?? new Date());
  const conditions: PoolCondition[] = [];
  const set = (type: string, status: 'True' | 'False', reason = '', message = '') => {
    const old = prev?.conditions?.find((c) => c.type === type);
    const lastTransitionTime = old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : now;
    conditions.push({ type, status, reason, message, lastTransitionTime });
  };

  set(
    'RenderDegraded',
    renderError ? 'True' : 'False',
    renderError ? 'RenderFailed' : '',
    renderError ? `Failed to render configuration for pool ${pool.metadata.name}: ${renderError}` : '',
  );
  if (degraded.length > 0) {
    const reasons = degraded.map((n) => `Node ${n.metadata.name} is reporting: ${JSON.stringify(annotation(n, MCO_REASON) ?? '')}`);
    set('NodeDegraded', 'True', `${degraded.length} nodes are reporting degraded status on sync`, reasons.join(', '));
  } else if (conflicts.length > 0) {
    set('NodeDegraded', 'True', `${conflicts.length} nodes cannot join the pool`, conflicts.join(', '));
  } else {
    set('NodeDegraded', 'False');
  }
  set('Degraded', degraded.length > 0 || conflicts.length > 0 || renderError ? 'True' : 'False');

  const allUpdated = !!target && updated === machineCount && ready === machineCount && unavailable === 0;
  let configuration = prev?.configuration;
  if (allUpdated) {
    set('Updated', 'True', '', `All nodes are updated with MachineConfig ${target}`);
    set('Updating', 'False');
    configuration = { name: target, source: pool.spec?.configuration?.source ?? [] };
  } else {
    set('Updated', 'False');
    if (pool.spec?.paused) set('Updating', 'False', '', `Pool is paused; will not update to MachineConfig ${target ?? ''}`);
    else if (target) set('Updating', 'True', '', `All nodes are updating to MachineConfig ${target}`);
    else set('Updating', 'False');
  }
  return {
    observedGeneration: pool.metadata.generation,
    ...(configuration ? { configuration } : {}),
    machineCount,
    updatedMachineCount: updated,
    readyMachineCount: ready,
    unavailableMachineCount: unavailable,
    degradedMachineCount: degraded.length,
    conditions,
  };
}

/**
 * The nodes to hand the target next (getCandidateMachines): as many as maxUnavailable leaves room for,
 * counting the nodes already unavailable and those failing on this very target. Nodes that are unavailable
 * anyway go first (retargeting them costs no availability), then the others, each in the order given:
 * pass the pool's nodes in update order (PoolMembership.nodesOf), so that no sort of thousands of nodes
 * runs on every sync.
 */
export function selectCandidates(pool: MachineConfigPool, nodes: readonly Node[], target: string): Node[] {
  if (pool.spec?.paused) return [];
  const maxUnavailable = maxUnavailableOf(pool, nodes.length);
  let unavailable = 0;
  let failingThisConfig = 0;
  const outFirst: Node[] = [];
  const available: Node[] = [];
  for (const n of nodes) {
    const out = isNodeUnavailable(n);
    if (out) unavailable++;
    if (annotation(n, MCO_DESIRED_CONFIG) === target) {
      if (isNodeFailing(n)) failingThisConfig++;
      continue;
    }
    (out ? outFirst : available).push(n);
  }
  const capacity = maxUnavailable - unavailable - failingThisConfig;
  if (maxUnavailable <= unavailable || capacity <= 0) return [];
  const chosen = outFirst.slice(0, capacity);
  for (const n of available) {
    if (chosen.length >= capacity) break;
    chosen.push(n);
  }
  return chosen;
}

/** Whether a written status already tells watchers that the pool is updating to this target. */
export function reportsUpdating(status: PoolStatus | undefined, target: string): boolean {
  const c = status?.conditions?.find((x) => x.type === 'Updating');
  return c?.status === 'True' && c.message === `All nodes are updating to MachineConfig ${target}`;
}
