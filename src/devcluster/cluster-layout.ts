import { objectName } from '../api/meta.ts';
import type { MachineConfigPool } from '../api/openshift.ts';
import { nodeHardware } from './hardware.ts';
import type { NodeInit } from './nodes.ts';
import type { DevClusterOptions } from './options.ts';

/**
 * The dev cluster's shape, apart from the cluster object that starts it: which nodes it begins with, how its
 * workers are named, and when its machine config pools count as rolled out. Pure, so that DevCluster keeps
 * only the starting and the node operations.
 */

type Shape = Pick<DevClusterOptions, 'hardware'> & { masters: number; workers: number; compact: boolean };

/** The cluster's first nodes, master-0.. then worker-0..; `extra` adds what a role needs. */
export function initialNodes(shape: Shape, extra: (role: 'master' | 'worker') => Partial<NodeInit>): NodeInit[] {
  const { masters, workers, compact } = shape;
  const hw = (name: string, role: 'master' | 'worker') => nodeHardware(shape.hardware ?? {}, name, role);
  return [
    ...Array.from({ length: masters }, (_, i) => ({
      name: `master-${i}`,
      role: 'master' as const,
      index: i,
      schedulableMaster: compact,
      ...extra('master'),
      ...hw(`master-${i}`, 'master'),
    })),
    ...Array.from({ length: workers }, (_, i) => ({
      name: `worker-${i}`,
      role: 'worker' as const,
      index: i,
      ...extra('worker'),
      ...hw(`worker-${i}`, 'worker'),
    })),
  ];
}

/** n of `worker-<n>`. */
export function workerIndex(name: string | undefined): number | undefined {
  const m = /^worker-(\d+)$/.exec(name ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * Every pool has rendered its configuration and rolled it out: Updated, status caught up with spec, and its
 * machine count equal to the nodes that belong to it (`machines`: how many nodes a pool has).
 */
export function poolsUpdated(pools: readonly MachineConfigPool[], machines: (pool: string) => number): boolean {
  return (
    pools.length > 0 &&
    pools.every((p) => {
      const s = p.status;
      return (
        !!p.spec.configuration?.name &&
        !!s &&
        s.observedGeneration === p.metadata.generation &&
        s.configuration?.name === p.spec.configuration.name &&
        s.machineCount === machines(objectName(p)) &&
        !!s.conditions?.some((c) => c.type === 'Updated' && c.status === 'True')
      );
    })
  );
}

/** Polls a cheap predicate (an informer read) until it holds; for the few waits the dev cluster itself has. */
export async function pollUntil<T>(fn: () => T | undefined, timeoutMs: number, what: string, signal: AbortSignal): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (signal.aborted) throw new Error(`dev cluster stopped while waiting for ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
