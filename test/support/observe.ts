import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_STATE } from '../../src/api/names.ts';
import type { MachineConfigPool, PoolCondition } from '../../src/api/openshift.ts';
import type { Node } from '../../src/kube/resources.ts';

/** A MachineConfigPool's status in one line's worth of fields, as `oc get mcp` would show it. */
export interface PoolSummary {
  pool: string;
  target: string | undefined;
  config: string | undefined;
  updated: string | undefined;
  updating: string | undefined;
  degraded: string | undefined;
  nodeDegraded: string | undefined;
  machineCount: number | undefined;
  readyMachineCount: number | undefined;
  updatedMachineCount: number | undefined;
  unavailableMachineCount: number | undefined;
  degradedMachineCount: number | undefined;
  observedGeneration: number | undefined;
  generation: number | undefined;
}

const cond = (conds: PoolCondition[] | undefined, type: string) => conds?.find((c) => c.type === type)?.status;

export function summarizePool(p: MachineConfigPool): PoolSummary {
  const s = p.status;
  return {
    pool: p.metadata.name ?? '',
    target: p.spec.configuration?.name,
    config: s?.configuration?.name,
    updated: cond(s?.conditions, 'Updated'),
    updating: cond(s?.conditions, 'Updating'),
    degraded: cond(s?.conditions, 'Degraded'),
    nodeDegraded: cond(s?.conditions, 'NodeDegraded'),
    machineCount: s?.machineCount,
    readyMachineCount: s?.readyMachineCount,
    updatedMachineCount: s?.updatedMachineCount,
    unavailableMachineCount: s?.unavailableMachineCount,
    degradedMachineCount: s?.degradedMachineCount,
    observedGeneration: s?.observedGeneration,
    generation: p.metadata.generation,
  };
}

/** Node, as the Machine Config Operator and a scheduler see it. */
export function nodeUnavailable(n: Node): boolean {
  const a = n.metadata.annotations ?? {};
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  return !ready || !!n.spec?.unschedulable || a[MCO_STATE] === 'Working' || a[MCO_CURRENT_CONFIG] !== a[MCO_DESIRED_CONFIG];
}

/**
 * Records every distinct status a pool goes through, from a watch (a watch delivers every write, so no
 * intermediate status is missed). `since(mark)` answers the ones recorded after a mark.
 */
export class PoolHistory {
  private readonly entries: PoolSummary[] = [];
  private readonly last = new Map<string, string>();

  record(p: MachineConfigPool): void {
    const s = summarizePool(p);
    const key = JSON.stringify(s);
    if (this.last.get(s.pool) === key) return;
    this.last.set(s.pool, key);
    this.entries.push(s);
  }

  mark(): number {
    return this.entries.length;
  }

  since(mark: number, pool: string): PoolSummary[] {
    return this.entries.slice(mark).filter((e) => e.pool === pool);
  }
}
