/**
 * The chaos run's script, pure: a seeded random source, the model of what the administrator asked for
 * (the KataConfig's spec, the workers and their labels), the operations that change it and the faults
 * that interrupt them. What the cluster must look like follows from the model alone (expected.ts).
 */
import type { LogLevel } from '../../src/api/names.ts';

/** mulberry32: small, fast and good enough to make a run reproducible from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;

/** The label kataConfigPoolSelector selects on, when set. */
export const CHAOS_LABEL = 'osc.dev/chaos';
export const CHAOS_SELECTOR = { matchLabels: { [CHAOS_LABEL]: 'kata' } };

/** The platforms the chaos run knows: OpenShift (the Machine Config Operator, peer pods) and plain Kubernetes (kata-deploy). */
export type ChaosPlatform = 'openshift' | 'kubernetes';

export interface Model {
  platform: ChaosPlatform;
  /** The KataConfig exists (installed or installing). */
  installed: boolean;
  logLevel: LogLevel;
  /** kataConfigPoolSelector set to CHAOS_SELECTOR. */
  selector: boolean;
  peerPods: boolean;
  /** Worker names, and those labelled for the selector. */
  workers: string[];
  labelled: string[];
}

export type OperationKind = 'install' | 'logLevel' | 'nodeJoin' | 'nodeLeave' | 'selector' | 'uninstall' | 'peerPodsOn' | 'peerPodsOff';

export interface Operation {
  kind: OperationKind;
  /** logLevel: the new level. */
  logLevel?: LogLevel;
  /** install / selector: the selector set or not. */
  selector?: boolean;
  /** install: peer pods on. */
  peerPods?: boolean;
  /** nodeJoin / nodeLeave / selector: the node, and whether it (now) carries the chaos label. */
  node?: string;
  labelled?: boolean;
}

export const FAULT_KINDS = [
  // The leader SIGKILLed (a node lost, a pod deleted with no grace).
  'killOperator',
  'restartApiServer',
  // etcd compacted under the watches: they resume from a compacted version and are told 410 Gone.
  'compactEtcd',
  // Every connection of every replica to the API server goes quiet without being closed.
  'blackholeWatches',
  // The webhook unreachable for a few seconds while the administrator acts.
  'webhookDown',
  // The leader cut off from the API server past its lease: it must stop writing and exit; the other leads.
  'partitionReplica',
  // A replica's wall clock stepped by minutes (NTP, a resumed VM), either way.
  'stepClock',
  // The API server rejects every request of the operator's ServiceAccount with 429 (API Priority and Fairness).
  'apiThrottled',
  // Every byte between the replicas and the API server delayed by seconds.
  'apiSlow',
  // The webhook unreachable for longer than the API server waits for it.
  'webhookOutage',
  // The leader killed by its memory limit, and restarted with the kubelet's crash-loop backoff.
  'oomKill',
  // etcd restored from a snapshot taken steps (minutes) earlier, as after a disaster recovery.
  'restoreEtcd',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** The kinds of the first chaos run (one replica could take them all): the short chaos test's. */
export const CLASSIC_FAULT_KINDS: readonly FaultKind[] = [
  'killOperator',
  'restartApiServer',
  'compactEtcd',
  'blackholeWatches',
  'webhookDown',
];

export interface Fault {
  kind: FaultKind;
  /** How long after the operation starts the fault strikes. */
  afterMs: number;
  /** Downtime: the operator's, the API server's, or the webhook's. */
  downMs: number;
}

const LEVELS: LogLevel[] = ['info', 'debug', 'warn', 'error'];
export const MIN_WORKERS = 2;
export const MAX_WORKERS = 5;

export function initialModel(workers: number, platform: ChaosPlatform = 'openshift'): Model {
  const names = Array.from({ length: workers }, (_, i) => `worker-${i}`);
  return { platform, installed: false, logLevel: 'info', selector: false, peerPods: false, workers: names, labelled: names.slice(0, 1) };
}

/** Selected workers: what kata should be on (the selector never matches nothing: see the selector operation). */
export function selected(m: Model): string[] {
  return (m.selector ? m.workers.filter((w) => m.labelled.includes(w)) : [...m.workers]).sort(byName);
}

const byName = new Intl.Collator('en', { numeric: true }).compare;

/**
 * The operations possible in this state, one picked at random; the first is always an install. Peer pods
 * only where the platform has them (OpenShift): on Kubernetes the webhook refuses them.
 */
export function nextOperation(m: Model, r: () => number, nextWorker: () => string): Operation {
  const peerPods = m.platform === 'openshift';
  if (!m.installed) {
    // Mostly install; sometimes the cluster changes while nothing is installed.
    if (r() < 0.8) {
      const op: Operation = { kind: 'install', logLevel: pick(r, LEVELS), selector: r() < 0.3, peerPods: r() < 0.3 };
      return peerPods ? op : { ...op, peerPods: false };
    }
  }
  const kinds: OperationKind[] = [];
  if (m.installed) kinds.push('logLevel', 'selector', 'selector', 'uninstall');
  if (m.installed && peerPods) kinds.push(m.peerPods ? 'peerPodsOff' : 'peerPodsOn');
  if (m.workers.length < MAX_WORKERS) kinds.push('nodeJoin');
  if (m.workers.length > MIN_WORKERS) kinds.push('nodeLeave');
  const kind = pick(r, kinds);
  switch (kind) {
    case 'logLevel':
      return {
        kind,
        logLevel: pick(
          r,
          LEVELS.filter((l) => l !== m.logLevel),
        ),
      };
    case 'nodeJoin':
      return { kind, node: nextWorker(), labelled: r() < 0.5 };
    case 'nodeLeave': {
      // Never the last labelled worker: the selector keeps matching something.
      const candidates = m.workers.filter((w) => !(m.labelled.includes(w) && m.labelled.filter((x) => m.workers.includes(x)).length === 1));
      return { kind, node: pick(r, candidates.length ? candidates : m.workers) };
    }
    case 'selector': {
      // Either the selector is switched on or off, or one worker's label flips (keeping one labelled).
      if (r() < 0.5) return { kind, selector: !m.selector };
      const node = pick(r, m.workers);
      const labelled = !m.labelled.includes(node);
      const left = m.labelled.filter((w) => w !== node && m.workers.includes(w));
      if (!labelled && left.length === 0) return { kind, selector: !m.selector };
      return { kind, node, labelled };
    }
    default:
      return { kind };
  }
}

/** The model after an operation. */
export function applyOperation(m: Model, op: Operation): Model {
  switch (op.kind) {
    case 'install':
      return {
        ...m,
        installed: true,
        logLevel: op.logLevel ?? 'info',
        selector: !!op.selector,
        peerPods: !!op.peerPods,
      };
    case 'uninstall':
      return { ...m, installed: false, peerPods: false, selector: false, logLevel: 'info' };
    case 'logLevel':
      return { ...m, logLevel: op.logLevel ?? 'info' };
    case 'peerPodsOn':
      return { ...m, peerPods: true };
    case 'peerPodsOff':
      return { ...m, peerPods: false };
    case 'nodeJoin':
      return {
        ...m,
        workers: [...m.workers, op.node ?? ''],
        labelled: op.labelled ? [...m.labelled, op.node ?? ''] : m.labelled,
      };
    case 'nodeLeave':
      return { ...m, workers: m.workers.filter((w) => w !== op.node), labelled: m.labelled.filter((w) => w !== op.node) };
    case 'selector':
      if (op.node === undefined) return { ...m, selector: !!op.selector };
      return { ...m, labelled: op.labelled ? [...m.labelled, op.node] : m.labelled.filter((w) => w !== op.node) };
  }
}

/** Faults in shuffled rounds of one of each kind: every kind comes up equally often, in random order. */
export function faultPlan(r: () => number, count: number, maxAfterMs: number, kinds: readonly FaultKind[] = FAULT_KINDS): Fault[] {
  const out: Fault[] = [];
  while (out.length < count) {
    const round = [...kinds];
    for (let i = round.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [round[i], round[j]] = [round[j] as FaultKind, round[i] as FaultKind];
    }
    for (const kind of round) {
      if (out.length === count) break;
      out.push({ kind, afterMs: Math.round(r() * maxAfterMs), downMs: Math.round(r() * 3000) });
    }
  }
  return out;
}

export const describeOperation = (op: Operation): string => {
  const parts: string[] = [op.kind];
  if (op.logLevel && op.kind !== 'uninstall') parts.push(`logLevel=${op.logLevel}`);
  if (op.selector !== undefined) parts.push(`selector=${op.selector ? 'on' : 'off'}`);
  if (op.peerPods) parts.push('peerPods');
  if (op.node) parts.push(op.node);
  if (op.labelled !== undefined) parts.push(op.labelled ? 'labelled' : 'unlabelled');
  return parts.join(' ');
};
