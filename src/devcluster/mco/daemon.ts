import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { type Node, type NodeCondition, Nodes, type Pod } from '../../kube/resources.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { NodeJournal } from '../journal.ts';
import { type DrainState, evictPod, planDrain, podKey } from './drain.ts';
import { annotation, nodeState } from './node-state.ts';

/**
 * The machine config daemon, one per node. When the node controller hands a node a new
 * `desiredConfig`, the daemon notices it a moment later (`pickupDelayMs`: the real daemon learns of it
 * through its own node watch and checks the new config first), reports `state: Working`, cordons and
 * drains the node, "reboots" it (Ready False for `rebootMs`), and reports `Done` with
 * `currentConfig = desiredConfig` and the node uncordoned.
 *
 * The daemon is a pure next-step function (`daemonStep`) over the node, the pods bound to it and what this
 * daemon remembers of the update under way; `MachineConfigDaemons` carries the steps out.
 */

/**
 * Failure injection (dev cluster only). Annotate a node with
 *
 *     osc.dev/fail-next-update: "<reason>"
 *
 * and its next update fails: the node goes `machineconfiguration.openshift.io/state: Degraded` with
 * `machineconfiguration.openshift.io/reason: <reason>` (staying cordoned), its pool reports
 * `NodeDegraded`/`Degraded`, and the rollout stops there. Remove the annotation and the node retries the
 * update, which then succeeds. A node already Degraded picks up a changed reason.
 */
export const FAIL_NEXT_UPDATE_ANNOTATION = 'osc.dev/fail-next-update';

/** The reason written when the failure annotation's value is empty. */
export const DEFAULT_FAILURE_REASON = 'simulated failure: osc.dev/fail-next-update is set on this node';

/**
 * Where an update stands: `noticed` (the daemon saw the new desiredConfig and is about to act),
 * `draining` (Working and cordoned, pods leaving), `rebooting` (NotReady), `booted` (Ready again, about to
 * report Done), `failing` (an injected failure: Working until it is reported), `completed` (Done reported,
 * not yet shown by the daemon's cache).
 */
export type DaemonPhase = 'noticed' | 'draining' | 'rebooting' | 'booted' | 'failing' | 'completed';

/**
 * How long a completed update waits for the daemon's cache to show it before the daemon goes by the cache
 * alone (a write taken back, as by an etcd restore, is never shown).
 */
export const COMPLETION_SHOWN_WITHIN_MS = 30_000;

export interface DaemonProgress {
  /** The config being applied. */
  target: string;
  phase: DaemonPhase;
  /** When the phase began (ms since the epoch). */
  since: number;
}

export interface DaemonObserved {
  /** What this daemon remembers of the update under way (nothing after a restart). */
  progress?: DaemonProgress;
  /** The pods bound to the node. */
  pods: readonly Pod[];
  drain: DrainState;
}

export interface DaemonTiming {
  /** How long after a new desiredConfig the daemon acts on it. */
  pickupDelayMs: number;
  /** How long the node stays NotReady while it reboots. */
  rebootMs: number;
  /**
   * How long a drain waits before asking again for an eviction a disruption budget refused (kubectl's drain
   * waits 5 s), and the longest it waits for evicted pods to go before looking again.
   */
  drainRetryMs: number;
}

export type DaemonAction =
  | { type: 'none' }
  /** state Working, reason cleared, spec.unschedulable true. */
  | { type: 'cordon' }
  | { type: 'evict'; pods: Pod[] }
  /** The node's Ready condition, as its kubelet reports it across the reboot. */
  | { type: 'setReady'; ready: boolean }
  /** currentConfig = config, state Done, reason cleared, uncordoned. */
  | { type: 'complete'; config: string }
  /** state Degraded with the reason (the node stays cordoned). */
  | { type: 'degrade'; reason: string }
  | { type: 'setReason'; reason: string };

export interface DaemonStep {
  action: DaemonAction;
  /** What to remember once the action is done (undefined: nothing under way). */
  progress?: DaemonProgress;
  /** Look at the node again after this long even if nothing changes. */
  requeueAfterMs?: number;
}

const none = (progress?: DaemonProgress, requeueAfterMs?: number): DaemonStep => ({
  action: { type: 'none' },
  ...(progress ? { progress } : {}),
  ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
});

/** The daemon's next step for one node. */
export function daemonStep(node: Node | undefined, observed: DaemonObserved, now: number, timing: DaemonTiming): DaemonStep {
  if (!node || node.metadata.deletionTimestamp) return none();
  const current = annotation(node, MCO_CURRENT_CONFIG);
  const desired = annotation(node, MCO_DESIRED_CONFIG);
  const state = nodeState(node);
  const failure = annotation(node, FAIL_NEXT_UPDATE_ANNOTATION);
  let p = observed.progress;
  if (!desired) return none();

  // Done was reported, and a busy cache may still show the node Working on its old config: that is the
  // update just made, not one to make again (a real daemon, its reboot minutes long, never sees it so).
  if (p?.phase === 'completed') {
    const left = p.since + COMPLETION_SHOWN_WITHIN_MS - now;
    if (current !== p.target && left > 0) return none(p, left);
    p = undefined;
  }

  // Once the node reboots, the config it boots into is the one it was given, whatever changed meanwhile.
  if (p?.phase === 'rebooting') {
    const left = p.since + timing.rebootMs - now;
    if (left > 0) return none(p, left);
    return { action: { type: 'setReady', ready: true }, progress: { ...p, phase: 'booted', since: now }, requeueAfterMs: 0 };
  }
  if (p?.phase === 'booted')
    return { action: { type: 'complete', config: p.target }, progress: { target: p.target, phase: 'completed', since: now } };
  if (p?.phase === 'failing') {
    if (failure === undefined) return reboot(p.target, now, timing);
    const left = p.since + timing.rebootMs - now;
    if (left > 0) return none(p, left);
    return { action: { type: 'degrade', reason: failure || DEFAULT_FAILURE_REASON } };
  }

  // Nothing to apply: on the desired config already. A failed node that got there is Done again.
  if (desired === current && state !== 'Working') {
    return state === 'Done' ? none() : { action: { type: 'complete', config: desired } };
  }
  if (failure !== undefined && state === 'Degraded') {
    const reason = failure || DEFAULT_FAILURE_REASON;
    return annotation(node, MCO_REASON) === reason ? none() : { action: { type: 'setReason', reason } };
  }

  // An update to make (or one found under way with no record of it, after a restart: made again).
  // A new target before anything was applied simply replaces the old one.
  const progress: DaemonProgress =
    p && (p.phase === 'noticed' || p.phase === 'draining') ? { ...p, target: desired } : { target: desired, phase: 'noticed', since: now };
  if (progress.phase === 'noticed') {
    const left = progress.since + timing.pickupDelayMs - now;
    if (left > 0) return none(progress, left);
    return { action: { type: 'cordon' }, progress: { target: desired, phase: 'draining', since: now }, requeueAfterMs: 0 };
  }

  const plan = planDrain(observed.pods, observed.drain, now);
  if (plan.evict.length > 0) return { action: { type: 'evict', pods: plan.evict }, progress, requeueAfterMs: 0 };
  if (plan.waiting > 0) {
    const untilRetry = plan.nextRetryAt !== undefined ? Math.max(0, plan.nextRetryAt - now) : timing.drainRetryMs;
    return none(progress, Math.min(untilRetry, timing.drainRetryMs));
  }
  // Drained.
  if (failure !== undefined) return none({ target: progress.target, phase: 'failing', since: now }, timing.rebootMs);
  return reboot(progress.target, now, timing);
}

function reboot(target: string, now: number, timing: DaemonTiming): DaemonStep {
  return {
    action: { type: 'setReady', ready: false },
    progress: { target, phase: 'rebooting', since: now },
    requeueAfterMs: timing.rebootMs,
  };
}

/** The Ready condition a node's kubelet posts around a reboot. */
export function rebootReadyCondition(ready: boolean, now = new Date()): NodeCondition {
  const t = `${now.toISOString().slice(0, 19)}Z`;
  return ready
    ? {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'kubelet is posting ready status',
        lastHeartbeatTime: t,
        lastTransitionTime: t,
      }
    : {
        type: 'Ready',
        status: 'False',
        reason: 'KubeletNotReady',
        message: 'node is rebooting to apply a new machine config',
        lastHeartbeatTime: t,
        lastTransitionTime: t,
      };
}

// ---------------------------------------------------------------------------------------------------------

const DAEMON_MANAGER = 'machine-config-daemon';
/** The Ready condition is the kubelet's to write: the simulated reboot writes it as the kubelet would. */
const KUBELET_MANAGER = 'kubelet';

export interface DaemonHost {
  client: KubeClient;
  log: Logger;
  timing(): DaemonTiming;
  /** The freshest copy of a node. */
  node(name: string): Node | undefined;
  /** The pods bound to a node. */
  podsOn(name: string): Pod[];
  /** A write to a node succeeded: here is the answer. */
  nodeWritten(node: Node): void;
  stats: { nodeWrites: number; evictions: number; evictionsRefused: number };
  /** The node's journal: a reboot leaves its lines there, as on a real host. */
  journal?: NodeJournal;
}

/** Carries out the daemons' steps: one sync per node key, with the memory of each update under way. */
export class MachineConfigDaemons {
  private readonly host: DaemonHost;
  private readonly progress = new Map<string, DaemonProgress>();
  private readonly retryAt = new Map<string, Map<string, number>>();
  private readonly evicted = new Map<string, Set<string>>();

  constructor(host: DaemonHost) {
    this.host = host;
  }

  /** Whether the node is being drained (its pods' changes matter to its daemon). */
  isDraining(name: string): boolean {
    return this.progress.get(name)?.phase === 'draining';
  }

  async sync(name: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number } | undefined> {
    const node = this.host.node(name);
    const progress = this.progress.get(name);
    const retryAt = this.retryAt.get(name) ?? new Map<string, number>();
    const evicted = this.evicted.get(name) ?? new Set<string>();
    const pods = progress?.phase === 'draining' ? this.host.podsOn(name) : [];
    const timing = this.host.timing();
    const step = daemonStep(node, { progress, pods, drain: { retryAt, evicted } }, Date.now(), timing);
    await this.act(name, node, step, timing, retryAt, evicted, signal);
    if (step.progress) this.progress.set(name, step.progress);
    else this.progress.delete(name);
    if (step.progress?.phase === 'draining') {
      this.retryAt.set(name, retryAt);
      this.evicted.set(name, evicted);
    } else {
      this.retryAt.delete(name);
      this.evicted.delete(name);
    }
    return step.requeueAfterMs !== undefined ? { requeueAfterMs: step.requeueAfterMs } : undefined;
  }

  private async act(
    name: string,
    node: Node | undefined,
    step: DaemonStep,
    timing: DaemonTiming,
    retryAt: Map<string, number>,
    evicted: Set<string>,
    signal: AbortSignal,
  ): Promise<void> {
    const { log } = this.host;
    const a = step.action;
    const target = step.progress?.target;
    switch (a.type) {
      case 'none':
        return;
      case 'cordon':
        log.info({ node: name, config: target }, 'node updating: Working, cordoned, draining');
        return this.patch(
          name,
          { metadata: { annotations: { [MCO_STATE]: 'Working', [MCO_REASON]: '' } }, spec: { unschedulable: true } },
          signal,
        );
      case 'evict':
        await mapLimit(a.pods, 8, async (pod) => {
          const result = await evictPod(this.host.client, pod, signal);
          const key = podKey(pod);
          if (result === 'refused') {
            this.host.stats.evictionsRefused++;
            retryAt.set(key, Date.now() + timing.drainRetryMs);
            log.info({ node: name, pod: key }, 'eviction refused by a disruption budget; will retry');
            return;
          }
          retryAt.delete(key);
          // Gone already or going: wait for the pod cache to see it leave.
          evicted.add(pod.metadata.uid ?? '');
          if (result === 'evicted') {
            this.host.stats.evictions++;
            log.info({ node: name, pod: key }, 'pod evicted');
          }
        });
        return;
      case 'setReady':
        if (!a.ready) log.info({ node: name, config: target, rebootMs: timing.rebootMs }, 'node drained; rebooting');
        this.host.journal?.reboot(name, a.ready ? 'up' : 'down');
        return this.setReady(name, a.ready, signal);
      case 'complete':
        if (node && annotation(node, MCO_CURRENT_CONFIG) !== a.config) log.info({ node: name, config: a.config }, 'node updated');
        return this.patch(
          name,
          {
            metadata: { annotations: { [MCO_CURRENT_CONFIG]: a.config, [MCO_STATE]: 'Done', [MCO_REASON]: '' } },
            spec: { unschedulable: null },
          },
          signal,
        );
      case 'degrade':
        log.info({ node: name, reason: a.reason }, 'node update failed (injected)');
        return this.patch(name, { metadata: { annotations: { [MCO_STATE]: 'Degraded', [MCO_REASON]: a.reason } } }, signal);
      case 'setReason':
        return this.patch(name, { metadata: { annotations: { [MCO_REASON]: a.reason } } }, signal);
    }
  }

  private async setReady(name: string, ready: boolean, signal: AbortSignal): Promise<void> {
    try {
      const patched = await this.host.client.patch(
        Nodes,
        name,
        // A kubelet that comes back after a reboot reports the new boot's id with its Ready condition.
        { status: { conditions: [rebootReadyCondition(ready)], ...(ready ? { nodeInfo: { bootID: randomUUID() } } : {}) } },
        { type: 'strategic', subresource: 'status', signal, fieldManager: KUBELET_MANAGER },
      );
      this.host.stats.nodeWrites++;
      this.host.nodeWritten(patched);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async patch(name: string, patch: unknown, signal: AbortSignal): Promise<void> {
    try {
      const patched = await this.host.client.patch(Nodes, name, patch, { signal, fieldManager: DAEMON_MANAGER });
      this.host.stats.nodeWrites++;
      this.host.nodeWritten(patched);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
