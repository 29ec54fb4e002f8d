import { objectName } from '../../api/meta.ts';
import { PEER_POD_VM_RESOURCE } from '../../api/names.ts';
import { Nodes } from '../../kube/resources.ts';
import type { Write } from '../../runtime/applier.ts';
import { isKataNode } from './desired.ts';
import type { PeerPodsObserved } from './observed.ts';

/**
 * kata.peerpods.io/vm = limit in the status (capacity and allocatable) of each kata node, and none elsewhere
 * (nowhere when limit is undefined): a merge patch of that one key per node that shows otherwise. Answers
 * the nodes that advertise it.
 */
export function nodeCapacityWrites(o: PeerPodsObserved, limit: number | undefined): { writes: Write[]; advertised: string[] } {
  const writes: Write[] = [];
  const advertised: string[] = [];
  // Called for every node on every pass: the name is read only for a node that advertises or is written.
  for (const node of o.nodes) {
    const want = limit !== undefined && isKataNode(node, o.placement.nodeSelector) ? String(limit) : undefined;
    const cap = node.status?.capacity?.[PEER_POD_VM_RESOURCE];
    const alloc = node.status?.allocatable?.[PEER_POD_VM_RESOURCE];
    if (want !== undefined) advertised.push(objectName(node));
    // A node without allocatable (a bare test node) is not given one.
    if (cap === want && (alloc === want || (want !== undefined && !node.status?.allocatable))) continue;
    const name = objectName(node);
    const status: Record<string, Record<string, string | null>> = {};
    if (want === undefined) {
      if (cap !== undefined) status.capacity = { [PEER_POD_VM_RESOURCE]: null };
      if (alloc !== undefined) status.allocatable = { [PEER_POD_VM_RESOURCE]: null };
    } else {
      status.capacity = { [PEER_POD_VM_RESOURCE]: want };
      if (node.status?.allocatable) status.allocatable = { [PEER_POD_VM_RESOURCE]: want };
    }
    writes.push({ op: 'patch', resource: Nodes, name, patch: { status }, subresource: 'status' });
  }
  return { writes, advertised: advertised.sort() };
}
