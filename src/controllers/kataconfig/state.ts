import {
  IN_PROGRESS,
  type InProgressReason,
  KATA_NODE_LISTS,
  type KataCondition,
  type KataConfig,
  type KataConfigSpec,
  type KataConfigStatus,
  type KataNodeListName,
  type KataNodes,
  messages,
} from '../../api/kataconfig.ts';
import type { KataNodePhase } from '../../api/katanode.ts';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from '../../api/names.ts';
import type { NodeRecord, Selection } from '../../platform/platform.ts';
import { setCondition } from '../../runtime/conditions.ts';
import type { StatusShare } from '../../runtime/status.ts';

/** Pure computations of the KataConfig controller: what should be, and what the status says. */

/** The runtime class the messages name: kata, or kata-remote with peer pods. */
export const runtimeClassFor = (spec: KataConfigSpec | undefined): string =>
  spec?.enablePeerPods ? KATA_REMOTE_RUNTIME_CLASS : KATA_RUNTIME_CLASS;

/** Every RuntimeClass osc provides: with peer pods the default kata one stays beside kata-remote (docs/peerpods.md). */
export const runtimeClassesFor = (spec: KataConfigSpec | undefined): string[] =>
  spec?.enablePeerPods ? [KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS] : [KATA_RUNTIME_CLASS];

export type { Selection };

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

/** Which kataNodes list each phase puts a node in. */
const LIST_OF = Object.fromEntries(KATA_NODE_LISTS.map((l) => [l.phase, l.list])) as Record<KataNodePhase, KataNodeListName>;
const LIST_ORDER = KATA_NODE_LISTS.map((l) => l.list);

/**
 * The KataConfig's kataNodes lists from the platform's per-node records (docs/kataconfig.md,
 * "Transitions"), whatever the platform: each record's phase names its list, lists keep the records'
 * order (by name), failures come with their error. `selected` is how many nodes should have kata;
 * `complete` is the platform's word that what it shares among nodes is in place too.
 */
export function classifyRecords(records: readonly NodeRecord[], selected: number, complete: boolean): Classification {
  const lists = new Map<string, string[]>(LIST_ORDER.map((k) => [k, []]));
  const failures: NodeFailure[] = [];
  for (const r of records) {
    lists.get(LIST_OF[r.phase])?.push(r.node);
    if (r.phase === 'FailedToInstall' || r.phase === 'FailedToUninstall') failures.push({ node: r.node, reason: r.error });
  }
  const installed = lists.get('installed')?.length ?? 0;
  const kataNodes: KataNodes = { nodeCount: selected, readyNodeCount: installed };
  for (const [k, v] of lists) if (v.length) (kataNodes as Record<string, unknown>)[k] = v;
  const settled = installed === selected && records.every((r) => r.phase === 'Installed') && (selected === 0 || complete);
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
