import type { Node } from '../kube/resources.ts';

/**
 * What the controllers keep of a Node in their shared cache. A real node's object is mostly status that
 * osc never reads: the kubelet reports up to 50 container images with their digests (typically 10-20 KB
 * per node, more than everything else together), its node info, addresses, daemon endpoints and volumes.
 * Kept: the whole metadata (labels and the Machine Config Operator's annotations drive every decision),
 * the spec (small: taints, unschedulable), and of the status the capacity, allocatable (the peer pods
 * controller advertises its VM limit there), the conditions, and of the node info only the kubelet's and
 * the container runtime's versions (which runtime's socket the kata monitor mounts, and which flavour of
 * Kubernetes kata-deploy is configured for: src/platform/kubernetes/flavour.ts). A controller that starts reading another
 * status field adds it here (docs/architecture.md, "Caches"). The images are not even parsed: the
 * operator's client leaves them out of Node JSON before decoding it (src/kube/nodejson.ts).
 */
export const cachedNode = (n: Node): Node => {
  const s = n.status;
  return {
    apiVersion: n.apiVersion,
    kind: n.kind,
    metadata: n.metadata,
    ...(n.spec ? { spec: n.spec } : {}),
    ...(s
      ? {
          status: {
            ...(s.capacity ? { capacity: s.capacity } : {}),
            ...(s.allocatable ? { allocatable: s.allocatable } : {}),
            ...(s.conditions ? { conditions: s.conditions } : {}),
            ...(s.nodeInfo ? { nodeInfo: versionsOf(s.nodeInfo) } : {}),
          },
        }
      : {}),
  };
};

const versionsOf = (info: Record<string, string>): Record<string, string> => {
  const kept: Record<string, string> = {};
  for (const k of ['kubeletVersion', 'containerRuntimeVersion']) if (info[k] !== undefined) kept[k] = info[k];
  return kept;
};
