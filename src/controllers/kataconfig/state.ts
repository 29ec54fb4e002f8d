import {
  IN_PROGRESS,
  type InProgressReason,
  type KataCondition,
  type KataConfig,
  type KataConfigSpec,
  type KataConfigStatus,
  type KataNodes,
  messages,
} from '../../api/kataconfig.ts';
import {
  CONTROL_PLANE_ROLE_LABEL,
  KATA_REMOTE_RUNTIME_CLASS,
  KATA_RUNTIME_CLASS,
  MASTER_ROLE_LABEL,
  NFD_KATA_LABEL,
  WORKER_ROLE_LABEL,
} from '../../api/names.ts';
import type { MachineConfigPool } from '../../api/openshift.ts';
import { selectorMatches } from '../../kube/labels.ts';
import type { Node } from '../../kube/resources.ts';
import { isKataPoolConfig, nodeMcoView, poolTargetHasKata } from '../../platform/machineconfig.ts';
import { setCondition } from '../../runtime/conditions.ts';
import type { StatusShare } from '../../runtime/status.ts';

/** Pure computations of the KataConfig controller: what should be, and what the status says. */

/** The runtime class the messages name: kata, or kata-remote with peer pods. */
export const runtimeClassFor = (spec: KataConfigSpec | undefined): string =>
  spec?.enablePeerPods ? KATA_REMOTE_RUNTIME_CLASS : KATA_RUNTIME_CLASS;

/** Every RuntimeClass osc provides: with peer pods the default kata one stays beside kata-remote (docs/peerpods.md). */
export const runtimeClassesFor = (spec: KataConfigSpec | undefined): string[] =>
  spec?.enablePeerPods ? [KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS] : [KATA_RUNTIME_CLASS];

const hasLabel = (n: Node, l: string) => n.metadata.labels?.[l] !== undefined;
const isMaster = (n: Node) => hasLabel(n, MASTER_ROLE_LABEL) || hasLabel(n, CONTROL_PLANE_ROLE_LABEL);
const isWorker = (n: Node) => hasLabel(n, WORKER_ROLE_LABEL);
const live = (nodes: readonly Node[]) => nodes.filter((n) => !n.metadata.deletionTimestamp);
// One collator for every comparison: localeCompare with options builds a new one per call (30x slower on
// a 1,000-node sort, which the benchmark showed as status delay).
const byName = new Intl.Collator('en', { numeric: true }).compare;

/**
 * Sorts names by byName, remembering the last input and its order: a reconcile runs on every node change,
 * while the set of nodes rarely changes, so most calls compare two lists instead of sorting 1,000 names
 * with a collator (a third of the operator's CPU during a 1,000-node install). Answers a fresh array.
 */
export function sortedByName(): (names: readonly string[]) => string[] {
  let last: readonly string[] = [];
  let sorted: string[] = [];
  return (names) => {
    if (names.length !== last.length || names.some((n, i) => n !== last[i])) {
      last = names;
      sorted = [...names].sort(byName);
    }
    return [...sorted];
  };
}
const sortSelected = sortedByName();
const sortClassified = sortedByName();

/**
 * A compact ("converged") cluster: masters are also the workers, so the MCO puts them all in the master
 * pool and the worker pool has no machines.
 */
export function isCompactCluster(nodes: readonly Node[]): boolean {
  const all = live(nodes);
  return all.some(isMaster) && !all.some((n) => isWorker(n) && !isMaster(n));
}

export interface Selection {
  /** Nodes that should run kata, sorted by name. */
  nodes: string[];
  /** checkNodeEligibility is on and no candidate carries the NFD label. */
  noEligibleNodes: boolean;
  /** kataConfigPoolSelector is set and matches no worker: nothing would get kata. */
  noMatchingNodes?: boolean;
}

/**
 * Which nodes get kata (docs/kataconfig.md, "spec"): the workers, narrowed by kataConfigPoolSelector, narrowed by the NFD label
 * when checkNodeEligibility is on (never with peer pods). On a compact cluster kata goes to the master
 * pool as a whole, so every master is selected and the selector does not apply.
 */
export function selectNodes(nodes: readonly Node[], spec: KataConfigSpec | undefined, compact: boolean): Selection {
  const all = live(nodes);
  if (compact)
    return {
      nodes: all
        .filter(isMaster)
        .map((n) => n.metadata.name ?? '')
        .sort(byName),
      noEligibleNodes: false,
    };
  let candidates = all.filter((n) => isWorker(n) && !isMaster(n));
  const selector = spec?.kataConfigPoolSelector;
  const workers = candidates.length;
  if (selector) candidates = candidates.filter((n) => selectorMatches(selector, n.metadata.labels));
  const noMatchingNodes = !!selector && workers > 0 && candidates.length === 0;
  let noEligibleNodes = false;
  if (spec?.checkNodeEligibility && !spec.enablePeerPods) {
    const eligible = candidates.filter((n) => n.metadata.labels?.[NFD_KATA_LABEL] === 'true');
    noEligibleNodes = candidates.length > 0 && eligible.length === 0;
    candidates = eligible;
  }
  return {
    nodes: sortSelected(candidates.map((n) => n.metadata.name ?? '')),
    noEligibleNodes,
    ...(noMatchingNodes ? { noMatchingNodes } : {}),
  };
}

export interface ClassifyInput {
  nodes: readonly Node[];
  /** Nodes that should have kata; empty while uninstalling. */
  selected: ReadonlySet<string>;
  compact: boolean;
  /** The pool kata goes to (kata-oc, or master on compact clusters). */
  kataPool: MachineConfigPool | undefined;
  /** The pool nodes return to (worker, or master on compact clusters). */
  basePool: MachineConfigPool | undefined;
  wantCrioConfig: boolean;
}

export interface NodeFailure {
  node: string;
  reason: string;
}

export interface Classification {
  kataNodes: KataNodes;
  failures: NodeFailure[];
  /** Every selected node runs a configuration with kata, and nothing else is moving. */
  settled: boolean;
}

/**
 * Places each node in the kataNodes lists from the Machine Config Operator's view of it (the table in docs/kataconfig.md, "Transitions").
 * A node that should have kata is measured against the kata pool's target; a node that should not is
 * listed only while it still runs (or is leaving) a configuration with kata.
 */
export function classifyNodes(input: ClassifyInput): Classification {
  const lists = {
    installed: [] as string[],
    installing: [] as string[],
    waitingToInstall: [] as string[],
    failedToInstall: [] as string[],
    uninstalling: [] as string[],
    waitingToUninstall: [] as string[],
    failedToUninstall: [] as string[],
  };
  const failures: NodeFailure[] = [];
  const kataTarget = input.kataPool?.spec.configuration?.name;
  const kataTargetReady = poolTargetHasKata(input.kataPool, input.wantCrioConfig);
  const baseTarget = input.basePool?.spec.configuration?.name;
  // On a compact cluster the base pool is the kata pool: while uninstalling its target no longer has kata.
  const baseTargetHasKata = input.compact && poolTargetHasKata(input.basePool, input.wantCrioConfig);

  const byNodeName = new Map(live(input.nodes).map((n) => [n.metadata.name ?? '', n]));
  for (const node of sortClassified([...byNodeName.keys()]).map((name) => byNodeName.get(name) as Node)) {
    const v = nodeMcoView(node);
    if (input.selected.has(v.name)) {
      if (v.state === 'Degraded') {
        lists.failedToInstall.push(v.name);
        failures.push({ node: v.name, reason: v.reason ?? '' });
      } else if (v.state === 'Working') lists.installing.push(v.name);
      else if (v.state === 'Done' && kataTargetReady && v.currentConfig === kataTarget) lists.installed.push(v.name);
      else lists.waitingToInstall.push(v.name);
      continue;
    }
    const carriesKata = input.compact ? isMaster(node) && !baseTargetHasKata : isKataPoolConfig(v.currentConfig);
    if (!carriesKata) continue;
    if (v.state === 'Degraded') {
      lists.failedToUninstall.push(v.name);
      failures.push({ node: v.name, reason: v.reason ?? '' });
    } else if (v.state === 'Working') lists.uninstalling.push(v.name);
    else if (v.currentConfig !== baseTarget || !baseTarget) lists.waitingToUninstall.push(v.name);
  }

  const kataNodes: KataNodes = { nodeCount: input.selected.size, readyNodeCount: lists.installed.length };
  for (const [k, v] of Object.entries(lists)) if (v.length) (kataNodes as Record<string, unknown>)[k] = v;
  const settled =
    lists.installed.length === input.selected.size &&
    Object.entries(lists).every(([k, v]) => k === 'installed' || v.length === 0) &&
    (input.selected.size === 0 || kataTargetReady);
  return { kataNodes, failures, settled };
}

export interface InProgressState {
  status: 'True' | 'False';
  reason: InProgressReason;
  message: string;
}

export const done: InProgressState = { status: 'False', reason: '', message: '' };

/** The InProgress condition while installing or updating (docs/kataconfig.md, "The InProgress condition"). */
export function installCondition(c: Classification, sel: Selection, rt: string, initial: boolean): InProgressState {
  const first = c.failures[0];
  if (first) return { status: 'True', reason: 'Failed', message: messages.failed(first.node, first.reason) };
  const reason: InProgressReason = initial ? 'Installing' : 'Updating';
  if (sel.noEligibleNodes) return { status: 'True', reason, message: messages.noEligibleNodes() };
  // "Installed on 0 nodes" would read as success: say that the selector selects nothing.
  if (sel.noMatchingNodes && c.settled) return { status: 'True', reason, message: messages.noMatchingNodes() };
  if (c.settled) return done;
  return { status: 'True', reason, message: initial ? messages.installing(rt) : messages.updating() };
}

/** The InProgress condition while uninstalling. */
export function uninstallCondition(c: Classification, rt: string): InProgressState {
  const first = c.failures[0];
  if (first) return { status: 'True', reason: 'Failed', message: messages.failed(first.node, first.reason) };
  return { status: 'True', reason: 'Uninstalling', message: messages.uninstalling(rt) };
}

export function inProgressOf(kc: KataConfig): KataCondition | undefined {
  return kc.status?.conditions?.find((c) => c.type === IN_PROGRESS);
}

/**
 * The KataConfig status fields this controller owns and applies under its own field manager: the
 * InProgress condition, kataNodes, runtimeClasses and uninstallStarted. The peer pods controller owns its
 * conditions (docs/architecture.md, "One writer per field").
 */
export const kataConfigStatusShare: StatusShare<KataConfigStatus> = {
  fieldManager: 'osc-kataconfig',
  owned: (s) => {
    const inProgress = s?.conditions?.find((c) => c.type === IN_PROGRESS);
    return {
      ...(inProgress ? { conditions: [inProgress] } : {}),
      ...(s?.kataNodes ? { kataNodes: s.kataNodes } : {}),
      ...(s?.runtimeClasses?.length ? { runtimeClasses: s.runtimeClasses } : {}),
      ...(s?.uninstallStarted ? { uninstallStarted: true } : {}),
    };
  },
};

export interface KataStatusChange {
  inProgress: InProgressState;
  /** Absent: kept as the cache shows it. */
  kataNodes?: KataNodes;
  /** Absent: kept as the cache shows it; empty: removed. */
  runtimeClasses?: string[];
  /** The uninstall is past its check for pods: the peer-pod parts may go (sticky once set). */
  uninstallStarted?: boolean;
}

/**
 * The status the KataConfig controller applies: its own fields as the cache shows them, changed as asked.
 * Never another controller's field: what it leaves out of an apply, the server keeps.
 */
export function kataStatusApply(cached: KataConfigStatus | undefined, change: KataStatusChange, now = new Date()): KataConfigStatus {
  const own = kataConfigStatusShare.owned(cached);
  const runtimeClasses = change.runtimeClasses ?? own.runtimeClasses ?? [];
  return {
    conditions: setCondition(own.conditions, { type: IN_PROGRESS, ...change.inProgress }, now),
    ...((change.kataNodes ?? own.kataNodes) ? { kataNodes: change.kataNodes ?? own.kataNodes } : {}),
    ...(runtimeClasses.length ? { runtimeClasses } : {}),
    ...(change.uninstallStarted || own.uninstallStarted ? { uninstallStarted: true } : {}),
  };
}

/** The runtime classes (sorted, once each) that these pods use, among those given. */
export function runtimeClassesInUse(
  pods: readonly { spec?: { runtimeClassName?: string } }[],
  runtimeClasses: ReadonlySet<string>,
): string[] {
  const used = new Set<string>();
  for (const p of pods) if (p.spec?.runtimeClassName && runtimeClasses.has(p.spec.runtimeClassName)) used.add(p.spec.runtimeClassName);
  return [...used].sort();
}

/** Pods that keep an uninstall waiting: any pod, in any namespace, using one of these runtime classes. */
export function podsUsing<P extends { metadata: { name?: string; namespace?: string }; spec?: { runtimeClassName?: string } }>(
  pods: readonly P[],
  runtimeClasses: ReadonlySet<string>,
): string[] {
  return pods
    .filter((p) => p.spec?.runtimeClassName && runtimeClasses.has(p.spec.runtimeClassName))
    .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
    .sort();
}
