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
 * status field adds it here (docs/architecture.md, "Caches").
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

const IMAGES = '"images":[{';
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/**
 * A Node watch event's line of JSON, parsed without the node's container images: of a worker's 13 KB, the
 * images are 9 KB that the cache drops anyway (cachedNode), and parsing them, then collecting them, was
 * most of what a Node event cost. The images array is cut from the text only where the cut cannot be
 * wrong: the array is the first `"images":[{` (no other field of a Node holds an array under that key, and
 * a quote inside a string is always escaped), it ends at the first `}]` after it, and that stretch holds no
 * backslash, so every quote in it is a string's own. An image name that itself contains `}]` would end the
 * cut inside a string, which JSON.parse refuses; then, as for any other surprise, the whole line is parsed.
 */
export function parseNodeEvent(line: string): unknown {
  const start = line.indexOf(IMAGES);
  if (start < 0) return JSON.parse(line);
  const end = line.indexOf('}]', start);
  const next = end < 0 ? -1 : line.charCodeAt(end + 2);
  if ((next === COMMA || next === CLOSE_BRACE) && line.lastIndexOf('\\', end) < start) {
    try {
      return JSON.parse(`${line.slice(0, start)}"images":[]${line.slice(end + 2)}`);
    } catch {
      // parsed whole below
    }
  }
  return JSON.parse(line);
}

/** The shared Node cache's reduction: every controller that reads Nodes passes these. */
export const NODE_CACHE = { transform: cachedNode, parseEvent: parseNodeEvent };
