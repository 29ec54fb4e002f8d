import { objectName } from '../../api/meta.ts';
import type { SecurityContextConstraints } from '../../api/scc.ts';

// The order in which SCC admission tries SCCs, as OpenShift's: highest priority first (none counts as 0),
// then the most restrictive (the fewest points below), then by name. The points make each weak
// restriction outweigh any combination of the stronger ones.

const POINTS = {
  privileged: 1_000_000,
  hostPorts: 400_000,
  hostNetwork: 200_000,
  hostVolume: 100_000,
  nonTrivialVolume: 50_000,
  strategy: { RunAsAny: 40_000, MustRunAsNonRoot: 30_000, MustRunAsRange: 20_000, MustRunAs: 10_000 } as Record<string, number>,
  capDefault: 5000,
  capAddOne: 300,
  capAllowAll: 4000,
  capAllowOne: 10,
  capDropAll: -3000,
  capDropOne: -50,
  capMax: 9999,
  capMin: 0,
};

/** Volume types that give a pod nothing of the node's or of other tenants'. */
const TRIVIAL_VOLUMES = new Set(['secret', 'configMap', 'emptyDir', 'downwardAPI', 'projected', 'none']);

function volumePoints(s: SecurityContextConstraints): number {
  const volumes = s.volumes ?? [];
  if (volumes.some((v) => v === 'hostPath' || v === '*')) return POINTS.hostVolume;
  if (volumes.some((v) => !TRIVIAL_VOLUMES.has(v))) return POINTS.nonTrivialVolume;
  return 0;
}

function capabilityPoints(s: SecurityContextConstraints): number {
  const upper = (l: string[] | null | undefined) => (l ?? []).map((c) => c.toUpperCase());
  const allowed = upper(s.allowedCapabilities);
  let p = POINTS.capDefault + POINTS.capAddOne * (s.defaultAddCapabilities?.length ?? 0);
  p += allowed.includes('*') || allowed.includes('ALL') ? POINTS.capAllowAll : POINTS.capAllowOne * allowed.length;
  const drops = upper(s.requiredDropCapabilities);
  p += drops.includes('ALL') ? POINTS.capDropAll : POINTS.capDropOne * drops.length;
  return Math.min(POINTS.capMax, Math.max(POINTS.capMin, p));
}

/** How much an SCC allows: the lower, the more restrictive. */
export function restrictionPoints(s: SecurityContextConstraints): number {
  let p = 0;
  if (s.allowPrivilegedContainer) p += POINTS.privileged;
  p += volumePoints(s);
  if (s.allowHostNetwork) p += POINTS.hostNetwork;
  if (s.allowHostPorts) p += POINTS.hostPorts;
  p += capabilityPoints(s);
  p += POINTS.strategy[s.seLinuxContext?.type ?? ''] ?? 0;
  p += POINTS.strategy[s.runAsUser?.type ?? ''] ?? 0;
  return p;
}

/** Negative when `a` is tried before `b`. */
export function compareSCCs(a: SecurityContextConstraints, b: SecurityContextConstraints): number {
  const pa = a.priority ?? 0;
  const pb = b.priority ?? 0;
  if (pa !== pb) return pb - pa;
  const ra = restrictionPoints(a);
  const rb = restrictionPoints(b);
  if (ra !== rb) return ra - rb;
  const na = objectName(a);
  const nb = objectName(b);
  return na < nb ? -1 : na > nb ? 1 : 0;
}

export function sortSCCs(sccs: readonly SecurityContextConstraints[]): SecurityContextConstraints[] {
  return [...sccs].sort(compareSCCs);
}
