/**
 * A KataConfig's status in words: the summary and the text `osc status` prints, which must-gather writes
 * beside the objects it collects too. Pure, from the API types alone, so every presentation shares it.
 */
import { ADAPTOR_OUTDATED, IN_PROGRESS, KATA_NODE_LISTS, type KataConfig } from './kataconfig.ts';
import { objectName } from './meta.ts';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from './names.ts';
import { type DeadEnd, deadEndOf, uninstalledText, uninstallProgress } from './progress.ts';

/** worker-2 before worker-10; one collator, not one per comparison. */
const nodeOrder = new Intl.Collator(undefined, { numeric: true }).compare;

export interface NodeState {
  node: string;
  state: string;
  /** Why the node cannot run pods right now (unreachable or not ready), when it cannot. */
  problem?: string;
}

/** What the node's Ready condition says about it, when it is not Ready. */
export interface NodeHealthInput {
  metadata: { name?: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[] };
}

/**
 * A node's problem in words: Unknown means its kubelet stopped reporting (the node lifecycle controller's
 * verdict after the grace period), False that it reports itself not ready (e.g. rebooting into a new config).
 */
export function nodeProblem(n: NodeHealthInput): string | undefined {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  if (!ready || ready.status === 'True') return undefined;
  const since = ready.lastTransitionTime ? ` since ${ready.lastTransitionTime}` : '';
  const why = [ready.reason, ready.message].filter(Boolean).join(': ');
  return ready.status === 'Unknown'
    ? `unreachable${since} (${why || 'no status'}); its pods are not running and osc waits for it to return`
    : `not ready${since} (${why || 'no reason given'})`;
}

/** What an administrator wants at a glance; also the `-o json|yaml` shape of `osc status`. */
export interface StatusSummary {
  name: string;
  /** Pending | Installing | Updating | Uninstalling | Failed | BlockedByExistingKataPods | Installed */
  phase: string;
  inProgress: string | undefined;
  reason: string;
  message: string;
  deletionRequested: boolean;
  /** True when nothing is in flight: installed and idle (InProgress False, no reason). */
  settled: boolean;
  runtimeClass: string;
  nodeCount: number;
  readyNodeCount: number;
  nodes: NodeState[];
  runtimeClasses: string[];
  lastTransitionTime?: string;
  /** Set when the rollout will not progress without the administrator (see deadEndOf). */
  deadEnd?: DeadEnd;
  /** Peer pods: how many adaptor pods run an older configuration, and what to do (PeerPodsAdaptorOutdated). */
  adaptorOutdated?: string;
}

export function summarize(kc: KataConfig, nodeObjects: readonly NodeHealthInput[] = []): StatusSummary {
  const cond = kc.status?.conditions?.find((c) => c.type === IN_PROGRESS);
  const adaptor = kc.status?.conditions?.find((c) => c.type === ADAPTOR_OUTDATED);
  const kn = kc.status?.kataNodes;
  const runtimeClass = kc.spec?.enablePeerPods ? KATA_REMOTE_RUNTIME_CLASS : KATA_RUNTIME_CLASS;
  const nodes: NodeState[] = [];
  for (const { list: key, words: label } of KATA_NODE_LISTS) {
    const list = kn?.[key];
    if (Array.isArray(list)) for (const node of list) nodes.push({ node, state: label });
  }
  nodes.sort((a, b) => nodeOrder(a.node, b.node));
  const problems = new Map(nodeObjects.map((n) => [objectName(n), nodeProblem(n)]));
  for (const n of nodes) {
    const problem = problems.get(n.node);
    if (problem) n.problem = problem;
  }
  const reason = cond?.reason ?? '';
  const settled = cond?.status === 'False' && reason === '' && !kc.metadata.deletionTimestamp;
  const phase = !cond ? 'Pending' : reason || (cond.status === 'False' ? 'Installed' : 'InProgress');
  const deadEnd = deadEndOf({
    inProgress: cond?.status,
    reason,
    deletionRequested: !!kc.metadata.deletionTimestamp,
    nodeCount: kn?.nodeCount ?? 0,
    checkNodeEligibility: kc.spec?.checkNodeEligibility,
    enablePeerPods: kc.spec?.enablePeerPods,
    hasPoolSelector: !!kc.spec?.kataConfigPoolSelector,
  });
  return {
    name: objectName(kc),
    phase,
    inProgress: cond?.status,
    reason,
    message: cond?.message ?? '',
    deletionRequested: !!kc.metadata.deletionTimestamp,
    settled,
    runtimeClass,
    nodeCount: kn?.nodeCount ?? 0,
    readyNodeCount: kn?.readyNodeCount ?? 0,
    nodes,
    runtimeClasses: kc.status?.runtimeClasses ?? [],
    ...(cond?.lastTransitionTime ? { lastTransitionTime: cond.lastTransitionTime } : {}),
    ...(deadEnd ? { deadEnd } : {}),
    ...(adaptor?.status === 'True' && adaptor.message ? { adaptorOutdated: adaptor.message } : {}),
  };
}

export function progressBar(done: number, total: number, width = 10): string {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
}

const LEFT_TO_UNINSTALL = new Set(['uninstalling', 'waiting to uninstall', 'failed to uninstall']);

/** One line per state, for a log of transitions: `KataConfig x: Installing — 1/2 nodes ready — installing: worker-1`. */
export function oneLine(s: StatusSummary): string {
  const byState = new Map<string, string[]>(KATA_NODE_LISTS.map(({ words }) => [words, []]));
  for (const n of s.nodes) byState.get(n.state)?.push(n.node);
  for (const [state, ns] of byState) if (!ns.length) byState.delete(state);
  const parts = [`KataConfig ${s.name}: ${s.phase}${s.deletionRequested && !isUninstallPhase(s.phase) ? ' (deletion requested)' : ''}`];
  if (!isUninstallPhase(s.phase) && s.phase !== 'Pending') parts.push(`${s.readyNodeCount}/${s.nodeCount} nodes ready`);
  if (byState.size) parts.push([...byState].map(([state, ns]) => `${state}: ${ns.join(', ')}`).join('; '));
  // A dead end reads like progress ("Updating — 0/0 nodes ready") without the reason.
  if (s.phase === 'Failed' || s.phase === 'BlockedByExistingKataPods' || s.deadEnd) parts.push(s.message);
  return parts.join(' — ');
}

const isUninstallPhase = (phase: string) => phase === 'Uninstalling' || phase === 'BlockedByExistingKataPods';

function describePhase(s: StatusSummary): string {
  if (s.phase === 'Pending') return 'waiting for the operator to pick it up';
  if (s.phase === 'Installed') {
    return s.runtimeClasses.includes(s.runtimeClass)
      ? `${s.runtimeClass} is installed on ${s.readyNodeCount} node(s); pods can use runtimeClassName: ${s.runtimeClass}`
      : `${s.runtimeClass} is installed on ${s.readyNodeCount} node(s)`;
  }
  return s.message;
}

/**
 * The text `osc status` prints for one KataConfig. `uninstallTotal` (the most nodes seen left to
 * uninstall, which --watch remembers) turns the uninstall count into a progress bar.
 */
export function renderStatus(s: StatusSummary, opts: { uninstallTotal?: number } = {}): string {
  const lines: string[] = [];
  const deletion = s.deletionRequested && !isUninstallPhase(s.phase) ? ' (deletion requested: uninstall starts when this settles)' : '';
  const what = describePhase(s);
  lines.push(`KataConfig ${s.name}: ${s.phase}${what ? ` — ${what}` : ''}${deletion}`);
  if (isUninstallPhase(s.phase)) {
    const left = s.nodes.filter((n) => LEFT_TO_UNINSTALL.has(n.state)).length;
    const p = uninstallProgress(left, opts.uninstallTotal ?? 0);
    if (p.total > 0) lines.push(`${progressBar(p.done, p.total)} ${uninstalledText(p)}`);
  } else if (s.phase !== 'Pending') {
    lines.push(`${progressBar(s.readyNodeCount, s.nodeCount)} ${s.readyNodeCount}/${s.nodeCount} nodes`);
  }
  if (s.deadEnd) lines.push(`What to do: ${s.deadEnd.todo}`);
  if (s.adaptorOutdated) lines.push(`Peer pods adaptor: ${s.adaptorOutdated}`);
  if (s.nodes.length) {
    const width = Math.max(4, ...s.nodes.map((n) => n.node.length)) + 3;
    lines.push(`${'NODE'.padEnd(width)}STATE`);
    for (const n of s.nodes) lines.push(`${n.node.padEnd(width)}${n.state}${n.problem ? ` — ${n.problem}` : ''}`);
  }
  lines.push(
    s.runtimeClasses.length
      ? `RuntimeClasses: ${s.runtimeClasses.join(', ')}`
      : `RuntimeClasses: none yet (${s.runtimeClass} is created when every selected node is installed)`,
  );
  return `${lines.join('\n')}\n`;
}

/** The text when there is no KataConfig at all; `sample` is the path of the README walkthrough's KataConfig as the user can type it. */
export function renderNone(watching: boolean, sample: string): string {
  return watching
    ? 'No KataConfig in this cluster yet: waiting for one to be created (Ctrl-C to stop).\n'
    : `No KataConfig in this cluster. Create one to install kata, e.g. "kubectl create -f ${sample}".\n`;
}
