import { TEE_PLATFORMS, type TeeKind, type TeePlatform } from './confidential.ts';
import { objectName } from './meta.ts';

/** A node as far as TEE detection reads it (the cached Node, or the console's). */
export interface TeeNode {
  metadata: { name?: string; labels?: Record<string, string> };
  status?: { allocatable?: Record<string, string> };
}
type Node = TeeNode;

/**
 * Which Trusted Execution Environment the selected nodes have, from Node Feature Discovery's labels, and
 * the OpenShift release check (pure: the controller, `osc status` and the console share it).
 */

/** Key slots on one node: what it advertises and how many pods on it take one. */
export interface KeySlots {
  node: string;
  /** The node's allocatable count (0 when it advertises none). */
  allocatable: number;
  used: number;
}

export type TeeDetection =
  | { kind: 'none' }
  | { kind: 'multiple'; found: { kind: TeeKind; nodes: string[] }[] }
  | {
      kind: 'one';
      tee: TeePlatform;
      /** The selected nodes with this TEE, sorted. */
      nodes: string[];
      /** Per TEE node, where the TEE counts key slots. */
      slots: KeySlots[];
      /** TEE nodes that advertise no key slot (their NFD rule lost the resource, or not yet published). */
      withoutSlots: string[];
    };

const count = (q: string | undefined): number => {
  const n = Number(q ?? '0');
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};

/**
 * The TEE of the selected nodes (only those: a node osc will not put kata on does not count). Two kinds
 * at once are refused as the original refuses them: one `kata-cc` cannot point at two handlers.
 * `pods` (with their node and runtime class) count the key slots in use on each TEE node.
 */
export function detectTee(
  nodes: readonly Node[],
  selected: ReadonlySet<string>,
  pods: readonly { spec?: { nodeName?: string; runtimeClassName?: string }; status?: { phase?: string } }[] = [],
  slotClasses: ReadonlySet<string> = new Set(),
): TeeDetection {
  const byKind = new Map<TeeKind, Node[]>();
  for (const n of nodes) {
    const labels = n.metadata.labels;
    if (!labels || !selected.has(objectName(n))) continue;
    for (const t of TEE_PLATFORMS) {
      if (labels[t.label] !== 'true') continue;
      const list = byKind.get(t.kind);
      if (list) list.push(n);
      else byKind.set(t.kind, [n]);
    }
  }
  if (byKind.size === 0) return { kind: 'none' };
  const names = (ns: readonly Node[]) => ns.map((n) => objectName(n)).sort();
  const found = TEE_PLATFORMS.filter((t) => byKind.has(t.kind)).map((t) => ({ kind: t.kind, nodes: names(byKind.get(t.kind) ?? []) }));
  if (found.length > 1) return { kind: 'multiple', found };
  const [only] = found as [{ kind: TeeKind; nodes: string[] }];
  const tee = TEE_PLATFORMS.find((t) => t.kind === only.kind) as TeePlatform;
  const teeNodes = new Map((byKind.get(only.kind) ?? []).map((n) => [objectName(n), n]));
  const slots: KeySlots[] = [];
  const withoutSlots: string[] = [];
  if (tee.keySlots) {
    const used = new Map<string, number>();
    for (const p of pods) {
      const rc = p.spec?.runtimeClassName;
      if (!rc || !slotClasses.has(rc)) continue;
      const node = p.spec?.nodeName;
      const phase = p.status?.phase;
      if (!node || phase === 'Succeeded' || phase === 'Failed') continue;
      used.set(node, (used.get(node) ?? 0) + 1);
    }
    for (const name of only.nodes) {
      const allocatable = count(teeNodes.get(name)?.status?.allocatable?.[tee.keySlots]);
      if (allocatable === 0) withoutSlots.push(name);
      slots.push({ node: name, allocatable, used: used.get(name) ?? 0 });
    }
  }
  return { kind: 'one', tee, nodes: only.nodes, slots, withoutSlots };
}

/** A release as major.minor.patch (a pre-release or build suffix is ignored), or undefined. */
export function parseVersion(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export type VersionCheck = { ok: true } | { ok: false; reason: 'below' | 'unreadable' | 'unknown' };

/** Whether an OpenShift release is at least `minimum`; a version that cannot be read is not assumed good. */
export function checkVersion(version: string | undefined, minimum: string): VersionCheck {
  if (!version) return { ok: false, reason: 'unknown' };
  const have = parseVersion(version);
  const need = parseVersion(minimum);
  if (!have || !need) return { ok: false, reason: 'unreadable' };
  for (let i = 0; i < 3; i++) {
    if ((have[i] as number) > (need[i] as number)) return { ok: true };
    if ((have[i] as number) < (need[i] as number)) return { ok: false, reason: 'below' };
  }
  return { ok: true };
}
