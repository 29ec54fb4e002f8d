import { objectName } from '../../api/meta.ts';
import { CONTROL_PLANE_ROLE_LABEL, KATA_NODE_ROLE_LABEL, KATA_POOL, MASTER_ROLE_LABEL, WORKER_ROLE_LABEL } from '../../api/names.ts';
import type { MachineConfigPool } from '../../api/openshift.ts';
import type { Node } from '../../kube/resources.ts';
import { lastCall } from '../../runtime/memo.ts';
import type { ConfigRef, NodeRecord } from '../platform.ts';
import { byName, live } from '../selection.ts';
import { isKataPoolConfig, nodeMcoView, poolTargetHasKata } from './machineconfig.ts';

/**
 * The Machine Config Operator's view of each node as per-node records (the table in docs/kataconfig.md,
 * "Transitions"): assigned is the rendered MachineConfig the MCO gave the node (its desiredConfig), active
 * the one it runs (currentConfig), error the MCO's reason when the node is Degraded.
 */

const hasLabel = (n: Node, l: string) => n.metadata.labels?.[l] !== undefined;
export const isMaster = (n: Node): boolean => hasLabel(n, MASTER_ROLE_LABEL) || hasLabel(n, CONTROL_PLANE_ROLE_LABEL);
const isWorker = (n: Node) => hasLabel(n, WORKER_ROLE_LABEL);

/**
 * A compact ("converged") cluster: masters are also the workers, so the MCO puts them all in the master
 * pool and the worker pool has no machines.
 */
export const isCompactCluster = lastCall((nodes: readonly Node[]): boolean => {
  const all = live(nodes);
  return all.some(isMaster) && !all.some((n) => isWorker(n) && !isMaster(n));
});

/** The workers that may get kata: never a master. */
export const workerCandidates = (nodes: readonly Node[]): Node[] => live(nodes).filter((n) => isWorker(n) && !isMaster(n));

/** The kata-oc-labelled nodes: those the kata pool already targets. */
export const labelledNodes = (nodes: readonly Node[]): Set<string> =>
  new Set(
    live(nodes)
      .filter((n) => hasLabel(n, KATA_NODE_ROLE_LABEL))
      .map((n) => objectName(n)),
  );

export interface McoRecordInput {
  nodes: readonly Node[];
  /** Nodes that should have kata; empty while uninstalling. */
  selected: ReadonlySet<string>;
  compact: boolean;
  /** The pool kata goes to (kata-oc, or master on compact clusters). */
  kataPool: MachineConfigPool | undefined;
  /** The pool nodes return to (worker, or master on compact clusters). */
  basePool: MachineConfigPool | undefined;
  wantCrioConfig: boolean;
  /** Whether the confidential handlers' MachineConfig is part of the kata pool's target (a class needs it). */
  wantConfidential?: boolean;
}

/**
 * A rendered MachineConfig as a configuration reference: its name, and whether it brings kata. A cluster has
 * a few rendered configurations and a thousand nodes running them: one object each, shared (and compared by
 * identity first), rather than a new one per node per pass.
 */
export function renderedConfigRef(name: string | undefined, withKata: boolean): ConfigRef | undefined {
  if (!name) return undefined;
  const key = `${withKata ? '+' : '-'}${name}`;
  const known = configRefs.get(key);
  if (known) return known;
  const pool = /^rendered-(.+)-[0-9a-f]+$/.exec(name)?.[1];
  const ref = {
    id: name,
    description: `rendered MachineConfig${pool ? ` of pool ${pool}` : ''}, ${withKata ? 'with' : 'without'} kata`,
  };
  if (configRefs.size >= 256) configRefs.clear();
  configRefs.set(key, ref);
  return ref;
}
const configRefs = new Map<string, ConfigRef>();

/**
 * The live nodes in name order. A snapshot keeps its nodes in the order they came (an update keeps a node's
 * place), so the order found for the last snapshot serves the next one while the names stand as they did.
 */
let lastOrder: { names: string[]; positions: number[] } = { names: [], positions: [] };
const sortedLive = lastCall((nodes: readonly Node[]): readonly Node[] => {
  const all = live(nodes);
  const names = all.map(objectName);
  const same = names.length === lastOrder.names.length && names.every((n, i) => n === lastOrder.names[i]);
  if (!same) {
    const positions = names.map((_, i) => i).sort((a, b) => byName(names[a] as string, names[b] as string));
    lastOrder = { names, positions };
  }
  return lastOrder.positions.map((i) => all[i] as Node);
});

/**
 * Each node's record from the MCO's view of it. A node that should have kata is measured against the
 * kata pool's target; a node that should not is recorded only while it still runs (or is leaving) a
 * configuration with kata. A node's record is computed again only when its object, whether it is selected
 * or the pools' targets change (`nodeRecord`): a pass reads a thousand nodes of which a few changed.
 */
export function mcoNodeRecords(input: McoRecordInput): NodeRecord[] {
  const kataTarget = input.kataPool?.spec.configuration?.name;
  const kataTargetReady = poolTargetHasKata(input.kataPool, input.wantCrioConfig, input.wantConfidential);
  const baseTarget = input.basePool?.spec.configuration?.name;
  // On a compact cluster the base pool is the kata pool: while uninstalling its target no longer has kata.
  const baseTargetHasKata = input.compact && poolTargetHasKata(input.basePool, input.wantCrioConfig, input.wantConfidential);
  const targets: Targets = { compact: input.compact, kataTarget, kataTargetReady, baseTarget, baseTargetHasKata };
  const context = `${input.compact}|${kataTarget}|${kataTargetReady}|${baseTarget}|${baseTargetHasKata}`;
  const records: NodeRecord[] = [];
  for (const node of sortedLive(input.nodes)) {
    const selected = input.selected.has(objectName(node));
    let known = recordsByNode.get(node);
    if (known?.context !== context || known.selected !== selected) {
      known = { context, selected, record: nodeRecord(node, selected, targets) };
      recordsByNode.set(node, known);
    }
    if (known.record) records.push(known.record);
  }
  return records;
}

/** What a node's record depends on beyond the node and whether it is selected. */
interface Targets {
  compact: boolean;
  kataTarget: string | undefined;
  kataTargetReady: boolean;
  baseTarget: string | undefined;
  baseTargetHasKata: boolean;
}

/** Each node object's record, with the context it was computed in (a cache of nodeRecord: see runtime/memo.ts). */
const recordsByNode = new WeakMap<Node, { context: string; selected: boolean; record: NodeRecord | undefined }>();

function nodeRecord(node: Node, selected: boolean, t: Targets): NodeRecord | undefined {
  const hasKata = (config: string | undefined) =>
    isKataPoolConfig(config) || (t.compact && !!config && config === t.kataTarget && (t.kataTargetReady || t.baseTargetHasKata));
  const v = nodeMcoView(node);
  const active = v.currentConfig ? renderedConfigRef(v.currentConfig, hasKata(v.currentConfig)) : undefined;
  const refs = {
    ...(v.desiredConfig ? { assigned: renderedConfigRef(v.desiredConfig, hasKata(v.desiredConfig)) } : {}),
    ...(active ? { active } : {}),
    // The MCO's currentConfig is the last configuration it finished applying, and the one a node whose
    // update fails stays on: the MCO's own last known good, reported as it is (no soak period here).
    lastKnownGood: active ?? null,
  };
  const failed = v.state === 'Degraded';
  const error = failed ? (v.reason ?? '') : '';
  const record = (phase: NodeRecord['phase']): NodeRecord => ({ node: v.name, phase, ...refs, error });
  if (selected) {
    if (failed) return record('FailedToInstall');
    if (v.state === 'Working') return record('Installing');
    if (v.state === 'Done' && t.kataTargetReady && v.currentConfig === t.kataTarget) return record('Installed');
    return record('WaitingToInstall');
  }
  const carriesKata = t.compact ? isMaster(node) && !t.baseTargetHasKata : isKataPoolConfig(v.currentConfig);
  if (!carriesKata) return undefined;
  if (failed) return record('FailedToUninstall');
  if (v.state === 'Working') return record('Uninstalling');
  if (v.currentConfig !== t.baseTarget || !t.baseTarget) return record('WaitingToUninstall');
  return undefined;
}

/** The kata pool's name on this cluster, and the pool nodes return to. */
export const poolNames = (compact: boolean): { kata: string; base: string } =>
  compact ? { kata: 'master', base: 'master' } : { kata: KATA_POOL, base: 'worker' };
