import { isDeepStrictEqual } from 'node:util';
import { objectName } from '../../api/meta.ts';
import type { MachineConfigPool } from '../../api/openshift.ts';
import { selectorMatches } from '../../kube/labels.ts';
import type { Node } from '../../kube/resources.ts';
import { byName, nodeOrder } from './node-state.ts';

/** Which pool a node belongs to, or why it belongs to none. */
export interface Membership {
  pool?: string;
  error?: string;
  /** The custom pools the node matches but cannot join. */
  conflicting?: string[];
}

/** The real MCO's GetPoolsForNode: a custom pool wins over worker; master wins over worker; two custom pools, or master and a custom pool, are an error. */
export function poolForNode(node: Node, pools: Iterable<MachineConfigPool>): Membership {
  let master = false;
  let worker = false;
  const custom: string[] = [];
  for (const p of pools) {
    if (!selectorMatches(p.spec?.nodeSelector, node.metadata.labels)) continue;
    const name = objectName(p);
    if (name === 'master') master = true;
    else if (name === 'worker') worker = true;
    else custom.push(name);
  }
  custom.sort(byName);
  const nodeName = node.metadata.name;
  if (custom.length > 1)
    return { error: `node ${nodeName} belongs to ${custom.length} custom roles, cannot proceed with this Node`, conflicting: custom };
  if (custom.length === 1) {
    if (master) return { error: `node ${nodeName} has both master role and custom role ${custom[0]}`, conflicting: custom };
    return { pool: custom[0] };
  }
  if (master) return { pool: 'master' };
  if (worker) return { pool: 'worker' };
  return {};
}

/**
 * Pool membership of every node, kept incrementally: a node event costs one poolForNode, and each pool's
 * sorted member list is rebuilt only when its membership changed (the node controller reads it on every
 * pool sync, which at thousands of nodes must not sort each time).
 */
export class PoolMembership {
  private readonly byNode = new Map<string, Membership>();
  private readonly members = new Map<string, Set<string>>();
  private readonly sorted = new Map<string, string[]>();
  /** pool -> nodes that match it but cannot join (several custom pools). */
  private readonly conflicts = new Map<string, Set<string>>();

  /** Recomputes one node's pool (undefined: the node is gone); answers the pools whose view of it may have changed. */
  assign(name: string, node: Node | undefined, pools: Iterable<MachineConfigPool>): Set<string> {
    const before = this.byNode.get(name);
    const after: Membership = node ? poolForNode(node, pools) : {};
    const touched = new Set<string>();
    const touch = (p: string | undefined) => {
      if (p) touched.add(p);
    };
    if (node && before?.pool === after.pool && isDeepStrictEqual(before?.conflicting, after.conflicting)) {
      this.byNode.set(name, after);
      touch(after.pool);
      for (const p of after.conflicting ?? []) touch(p);
      return touched;
    }
    if (before?.pool) {
      this.sorted.delete(before.pool);
      this.members.get(before.pool)?.delete(name);
    }
    for (const p of before?.conflicting ?? []) this.conflicts.get(p)?.delete(name);
    if (node) this.byNode.set(name, after);
    else this.byNode.delete(name);
    if (after.pool) {
      this.sorted.delete(after.pool);
      setAdd(this.members, after.pool, name);
    }
    for (const p of after.conflicting ?? []) setAdd(this.conflicts, p, name);
    for (const p of [before?.pool, after.pool, ...(before?.conflicting ?? []), ...(after.conflicting ?? [])]) touch(p);
    return touched;
  }

  poolOf(node: string): string | undefined {
    return this.byNode.get(node)?.pool;
  }

  /** The names of the nodes in a pool, in update order. */
  nodesOf(pool: string): string[] {
    let s = this.sorted.get(pool);
    if (!s) {
      s = [...(this.members.get(pool) ?? [])].sort(nodeOrder);
      this.sorted.set(pool, s);
    }
    return s;
  }

  /** Why each node that matches this pool cannot join it, in node order. */
  conflictsOf(pool: string): string[] {
    return [...(this.conflicts.get(pool) ?? [])].sort(nodeOrder).map((n) => this.byNode.get(n)?.error ?? '');
  }
}

function setAdd(m: Map<string, Set<string>>, k: string, v: string): void {
  let s = m.get(k);
  if (!s) {
    s = new Set();
    m.set(k, s);
  }
  s.add(v);
}
