import type { KataNodePhase } from '../../api/katanode.ts';
import type { InstallerPodView, NodeObservation, RolloutMemory } from './observe.ts';

/**
 * The Kubernetes platform's rollout, pure (docs/kubernetes.md, "The rollout"): from each node's
 * observation and osc's memory of it (kept on the node), each node's record and the writes that move the
 * rollout on, the memory to write beside them included. osc
 * assigns a configuration to a node by labelling and annotating it; the installer DaemonSet (OnDelete)
 * then runs a pod there from its template. At most maxUnavailable nodes are in flight, taken in name
 * order; a node that fails is rolled back to its last known good configuration (or cleaned when it has
 * none) and the rollout stops until the KataConfig's spec changes.
 */

/**
 * What osc remembers of a node between reconciles: what it wrote on the node (its configuration
 * annotation and ROLLOUT_ANNOTATION, see observe.ts), never what it reported in KataNodes.
 */
export interface NodeMemory {
  /** The configuration osc assigned (INSTALL_LABEL's value); absent when kata should leave the node. */
  assigned?: string;
  /** The configuration the node last reported installed. */
  active?: string;
  /** The configuration the node ran without error for the soak period: what a failure rolls back to. */
  lastKnownGood?: string;
  /** When osc last gave the node a configuration or took kata off it: its installer's deadline runs from it. */
  since?: string;
}

export interface NodePlan {
  name: string;
  phase: KataNodePhase;
  assigned?: string;
  active?: string;
  /** The configuration the node ran without error for the soak period; absent when none. */
  lastKnownGood?: string;
  /** Empty when none. */
  error: string;
}

/**
 * Kept on the installer DaemonSet (with the writes that roll a node back, so that the rollout cannot go on
 * before the mark is seen): the generation of the KataConfig whose rollout failed, and why, by node.
 */
export interface StopMark {
  generation: number;
  failures: Record<string, string>;
}

export interface RolloutInput {
  observations: readonly NodeObservation[];
  /** osc's memory, by node name (missing: a node osc has written none on). */
  memory: ReadonlyMap<string, NodeMemory>;
  /** Nodes that should have kata; empty while uninstalling. */
  selected: ReadonlySet<string>;
  /** The configuration id the KataConfig asks for. */
  target: string;
  /** The installer DaemonSet's template configuration, whether its controller has seen it, and its stop mark. */
  daemonSet: { config?: string; observed: boolean; stopped?: StopMark };
  /** The KataConfig's metadata.generation. */
  generation: number;
  maxUnavailable: number;
  /** How long an installer has to report (installed, or cleaned up) before its node counts as failed. */
  deadlineMs: number;
  /**
   * How long a node runs its configuration without error (its installer pod Ready) before it is the node's
   * last known good; absent: only the memory's counts.
   */
  soakMs?: number;
  now: Date;
}

export interface RolloutPlan {
  /** Every node that is selected or still carries kata, in name order. */
  nodes: NodePlan[];
  /** The configuration the installer DaemonSet's template should carry. */
  template: string;
  /** The DaemonSet's stop mark: the rollout stopped on these failures, if it did. */
  stopped?: StopMark;
  /** Node assignments: a configuration id, or null to take kata off the node (INSTALL_LABEL and its annotation go). */
  labels: { node: string; value: string | null }[];
  /** Installer pods to delete so that the DaemonSet re-creates them from the template. */
  deletePods: string[];
  /**
   * The memory to write on each node, with its assignment (every entry of `labels` has one here), or null
   * where a node kata has left no longer needs it.
   */
  remember: { node: string; memory: RolloutMemory | null }[];
  /** When a deadline passes if nothing changes before: a reason to look again. */
  nextDeadlineMs?: number;
}

const byName = new Intl.Collator('en', { numeric: true }).compare;

/**
 * How long an installer may be Ready on a node without kata-deploy's label before its install counts as taken
 * back (see planRollout, 3b): longer than a node's label and its pod's readiness take to reach the caches.
 */
export const LABEL_LOST_GRACE_MS = 15_000;
const secs = (ms: number) => `${Math.round(ms / 1000)}s`;

type Report = { kind: 'done' } | { kind: 'pending' } | { kind: 'gone' } | { kind: 'failed'; reason: string };

/**
 * An installer that failed before the node was given its present assignment: left from an earlier attempt at
 * the same configuration (a rollback overtaken by a spec change that asks for that configuration again), so
 * its failure is not this attempt's, and it is replaced. Creation times are whole seconds: only a pod made a
 * full second before the assignment counts as earlier.
 */
const failedEarlier = (p: InstallerPodView, since: number): boolean =>
  !!p.failure && p.created !== undefined && Date.parse(p.created) + 1000 <= since;

/** Where the installer of `config` stands on a node. */
function installReport(o: NodeObservation, config: string, since: number, input: RolloutInput): Report {
  const pods = o.pods.filter((p) => !p.terminating && p.config === config && !failedEarlier(p, since));
  if (pods.some((p) => p.ready) && o.kataRuntime === 'true') return { kind: 'done' };
  const failure = pods.find((p) => p.failure)?.failure;
  if (failure) return { kind: 'failed', reason: failure };
  if (input.now.getTime() - since >= input.deadlineMs)
    return { kind: 'failed', reason: `kata-deploy did not report the installation within ${secs(input.deadlineMs)}` };
  return { kind: 'pending' };
}

/** Where kata-deploy's cleanup stands on a node osc took kata off. */
function removalReport(o: NodeObservation, since: number, input: RolloutInput): Report {
  if (o.pods.length === 0 && o.kataRuntime === undefined) return { kind: 'gone' };
  if (input.now.getTime() - since >= input.deadlineMs)
    return { kind: 'failed', reason: `kata-deploy did not clean up within ${secs(input.deadlineMs)}` };
  return { kind: 'pending' };
}

/**
 * Kata left on a node osc gave no configuration, with no installer there to clean it up: kata-deploy's
 * cleanup runs only in its pod, and an installer that crashed (a failed install) exits without one when its
 * pod is deleted, leaving kata-runtime on the node. Nothing is in flight there and no cleanup deadline
 * runs: a selected node is given its configuration in its turn; a node that should lose kata is given an
 * installer again, so that taking it off runs kata-deploy's cleanup.
 */
const orphaned = (o: NodeObservation): boolean => o.installLabel === undefined && o.pods.length === 0 && o.kataRuntime !== undefined;

interface Working {
  assigned?: string;
  active?: string;
  lastKnownGood?: string;
  error?: string;
  since: number;
  report: Report;
}

/** When the node's configuration became (or becomes) its last known good: soakMs after its installer turned Ready. */
function soakedAt(o: NodeObservation, w: Working, input: RolloutInput): number | undefined {
  if (input.soakMs === undefined || w.assigned === undefined || w.lastKnownGood === w.assigned) return undefined;
  const pod = o.pods.find((p) => !p.terminating && p.ready && p.config === w.assigned);
  const readySince = pod?.readySince ? Date.parse(pod.readySince) : Number.NaN;
  return (Number.isNaN(readySince) ? w.since : readySince) + input.soakMs;
}

/** What osc writes on a node with its assignment: from now, what it runs and its last known good. */
const memoryOf = (w: Working, nowMs: number): RolloutMemory => ({
  since: new Date(nowMs).toISOString(),
  ...(w.active !== undefined ? { active: w.active } : {}),
  ...(w.lastKnownGood !== undefined ? { lastKnownGood: w.lastKnownGood } : {}),
});

export function planRollout(input: RolloutInput): RolloutPlan {
  const nowMs = input.now.getTime();
  const observations = [...input.observations].sort((a, b) => byName(a.name, b.name));
  const labels: RolloutPlan['labels'] = [];
  const deletePods: string[] = [];
  const work = new Map<string, Working>();
  const remember: RolloutPlan['remember'] = [];
  let promoteAt: number | undefined;
  /** A node's assignment (a configuration, or none), with the memory written beside it. */
  const assign = (node: string, w: Working, value: string | null) => {
    labels.push({ node, value });
    remember.push({ node, memory: memoryOf(w, nowMs) });
  };
  // A spec change resumes a stopped rollout (the failures belonged to the previous generation), and so
  // does the departure of every failed node.
  const mark = input.daemonSet.stopped;
  const resumed = !!mark && (mark.generation < input.generation || !observations.some((o) => mark.failures[o.name] !== undefined));
  const failures: Record<string, string> = resumed || !mark ? {} : { ...mark.failures };

  // 1. What each node reports, against osc's memory of it; a failure rolls the node back.
  for (const o of observations) {
    const mem = input.memory.get(o.name) ?? {};
    const w: Working = {
      ...(o.installLabel !== undefined ? { assigned: o.installLabel } : {}),
      ...(mem.active !== undefined ? { active: mem.active } : {}),
      ...(mem.lastKnownGood !== undefined ? { lastKnownGood: mem.lastKnownGood } : {}),
      ...(failures[o.name] !== undefined ? { error: failures[o.name] } : {}),
      // The deadline runs from the assignment osc remembers; a new one (or none remembered) starts now.
      since: mem.assigned === o.installLabel && mem.since ? Date.parse(mem.since) : nowMs,
      report: { kind: 'pending' },
    };
    w.report =
      w.assigned !== undefined
        ? installReport(o, w.assigned, w.since, input)
        : orphaned(o)
          ? { kind: 'pending' }
          : removalReport(o, w.since, input);
    if (w.report.kind === 'done') {
      w.active = w.assigned;
      const soaked = soakedAt(o, w, input);
      if (soaked !== undefined && soaked <= nowMs) w.lastKnownGood = w.assigned;
      else if (soaked !== undefined) promoteAt = Math.min(promoteAt ?? soaked, soaked);
    }
    if (w.report.kind === 'gone') delete w.active;
    if (w.report.kind === 'failed' && w.error === undefined) {
      w.error = w.report.reason;
      failures[o.name] = w.report.reason;
      if (w.assigned !== undefined) {
        // Back to the last known good configuration, or off the node when there is none (or it is what failed).
        const back = w.lastKnownGood !== undefined && w.lastKnownGood !== w.assigned ? w.lastKnownGood : undefined;
        assign(o.name, w, back ?? null);
        if (back === undefined) delete w.assigned;
        else w.assigned = back;
        w.since = nowMs;
        w.report = { kind: 'pending' };
      }
    }
    work.set(o.name, w);
  }

  // 2. The template: the configuration pods are about to be created with. A rollback needs its own.
  const hasReadyPod = (o: NodeObservation, config: string) => o.pods.some((p) => !p.terminating && p.config === config && p.ready);
  const rollback = observations.find((o) => {
    const w = work.get(o.name);
    return w?.assigned !== undefined && w.assigned !== input.target && w.error !== undefined && !hasReadyPod(o, w.assigned);
  });
  const template = rollback ? (work.get(rollback.name)?.assigned ?? input.target) : input.target;
  const templateReady = input.daemonSet.observed && input.daemonSet.config === template;

  // 3. Pods whose configuration is not their node's, or that failed before its assignment: replaced once the
  // template carries the right one.
  const replace = (o: NodeObservation, config: string, since: number) => {
    if (!templateReady || config !== template) return;
    for (const p of o.pods) if (!p.terminating && (p.config !== config || failedEarlier(p, since))) deletePods.push(p.name);
  };
  for (const o of observations) {
    const w = work.get(o.name);
    if (w?.assigned !== undefined) replace(o, w.assigned, w.since);
  }

  // 3b. An installer Ready (kata-deploy's /readyz: it installed) on a node that has lost kata-deploy's label:
  // the label was taken back after the install (an etcd restore, a hand edit), and kata-deploy labels only
  // once. Its pod is deleted, so that the DaemonSet runs the install again, which labels the node.
  let relabelAt: number | undefined;
  for (const o of observations) {
    const w = work.get(o.name);
    if (w?.assigned === undefined || w.report.kind !== 'pending' || o.kataRuntime === 'true') continue;
    if (!templateReady || w.assigned !== template) continue;
    for (const p of o.pods) {
      if (p.terminating || !p.ready || p.config !== w.assigned || deletePods.includes(p.name)) continue;
      const readyAt = p.readySince ? Date.parse(p.readySince) : Number.NaN;
      if (Number.isNaN(readyAt)) continue;
      const at = readyAt + LABEL_LOST_GRACE_MS;
      if (at <= nowMs) deletePods.push(p.name);
      else relabelAt = Math.min(relabelAt ?? at, at);
    }
  }

  // 4. More nodes, in name order, while the budget allows and the rollout has not stopped.
  // A node given an older configuration whose pod never came (the template moved on first) is not in
  // flight: it is simply given the target in its turn.
  const stale = (o: NodeObservation, w: Working) =>
    w.assigned !== undefined &&
    w.assigned !== input.target &&
    w.error === undefined &&
    w.report.kind !== 'done' &&
    !o.pods.some((p) => !p.terminating && p.config === w.assigned);
  const inFlight = observations.filter((o) => {
    const w = work.get(o.name) as Working;
    if (stale(o, w)) return false;
    return w.assigned !== undefined ? w.report.kind !== 'done' : w.report.kind !== 'gone' && !orphaned(o);
  });
  let budget = Math.max(0, input.maxUnavailable - inFlight.length);
  const stopped = Object.keys(failures).length > 0;
  if (!stopped) {
    for (const o of observations) {
      if (budget <= 0) break;
      const w = work.get(o.name) as Working;
      let want = input.selected.has(o.name) ? input.target : undefined;
      if (want === undefined && w.assigned === undefined && orphaned(o)) want = input.target;
      if (w.assigned === want) continue;
      // Kata leaves a node only once an installer runs there: that is what cleans it up.
      if (want === undefined && o.pods.length === 0 && w.report.kind === 'pending') continue;
      // A node gets its configuration from the template: wait until the template carries the target.
      if (want !== undefined && !(templateReady && template === want)) continue;
      assign(o.name, w, want ?? null);
      w.since = nowMs;
      if (want === undefined) delete w.assigned;
      else {
        w.assigned = want;
        replace(o, want, nowMs);
      }
      w.report = { kind: 'pending' };
      budget--;
    }
  }

  // 5. Each node's place in the rollout, and when the next deadline passes.
  const nodes: NodePlan[] = [];
  let nextDeadlineMs: number | undefined;
  for (const o of observations) {
    const w = work.get(o.name) as Working;
    const selected = input.selected.has(o.name);
    const failed = w.error !== undefined;
    if (w.report.kind === 'pending' && (w.assigned !== undefined || !orphaned(o))) {
      const left = Math.max(0, w.since + input.deadlineMs - nowMs);
      nextDeadlineMs = nextDeadlineMs === undefined ? left : Math.min(nextDeadlineMs, left);
    }
    let phase: KataNodePhase;
    if (!selected && w.assigned === undefined && w.report.kind === 'gone' && input.memory.has(o.name))
      remember.push({ node: o.name, memory: null });
    if (selected) {
      if (failed) phase = 'FailedToInstall';
      else if (w.assigned === input.target && w.report.kind === 'done') phase = 'Installed';
      else if (w.assigned === input.target) phase = 'Installing';
      else phase = 'WaitingToInstall';
    } else {
      if (w.assigned === undefined && w.report.kind === 'gone') continue;
      if (failed) phase = 'FailedToUninstall';
      else if (w.assigned === undefined) phase = 'Uninstalling';
      else phase = 'WaitingToUninstall';
    }
    nodes.push({
      name: o.name,
      phase,
      ...(w.assigned !== undefined ? { assigned: w.assigned } : {}),
      ...(w.active !== undefined ? { active: w.active } : {}),
      ...(w.lastKnownGood !== undefined ? { lastKnownGood: w.lastKnownGood } : {}),
      error: failed ? (w.error ?? '') : '',
    });
  }
  for (const at of [promoteAt, relabelAt]) {
    if (at === undefined) continue;
    const left = Math.max(0, at - nowMs);
    nextDeadlineMs = nextDeadlineMs === undefined ? left : Math.min(nextDeadlineMs, left);
  }
  return {
    nodes,
    template,
    ...(stopped ? { stopped: { generation: resumed || !mark ? input.generation : mark.generation, failures } } : {}),
    labels,
    deletePods,
    remember,
    ...(nextDeadlineMs !== undefined ? { nextDeadlineMs } : {}),
  };
}
