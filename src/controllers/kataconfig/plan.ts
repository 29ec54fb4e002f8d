import { confidentialTexts } from '../../api/confidential.ts';
import { type KataConfig, kataConfigOwner, messages } from '../../api/kataconfig.ts';
import { type KataNode, type KataNodeStatus, KataNodes } from '../../api/katanode.ts';
import type { OwnerReference } from '../../api/meta.ts';
import { objectName } from '../../api/meta.ts';
import { type Node, Nodes, type Pod, type RuntimeClass } from '../../kube/resources.ts';
import type { NodeRecord, Platform, PlatformInput, PlatformPlan, PlatformWrite, Selection } from '../../platform/platform.ts';
import { platformView } from '../../platform/platform.ts';
import type { PlannedWrite } from '../../runtime/applier.ts';
import { perObject } from '../../runtime/memo.ts';
import type { ConfidentialPass } from './confidential.ts';
import { kataNodeStatusShare, planKataNodes } from './katanodes.ts';
import { planRuntimeClasses } from './runtimeclass-writes.ts';
import {
  type Classification,
  classifyRecords,
  done,
  type InProgressState,
  inProgressOf,
  installCondition,
  type KataStatusChange,
  podsUsing,
  runtimeClassesFor,
  runtimeClassesInUse,
  runtimeClassFor,
  uninstallCondition,
} from './state.ts';

/**
 * The KataConfig controller's plan (docs/architecture.md, "One apply path"): pure, from what the caches show
 * (with this controller's own writes the caches do not show yet, as the applier knows them) and the time.
 * The reconciler observes, plans, and hands the writes to the runtime applier.
 */

/** What one pass is planned from. */
export interface KataConfigObserved {
  /** The KataConfig in effect (not being ignored). */
  kataConfig: KataConfig;
  nodes: readonly Node[];
  kataNodes: readonly KataNode[];
  /** KataNode statuses earlier passes planned that are not made yet, by node (queued or on their way: trailing.ts). */
  pendingKataNodes?: ReadonlyMap<string, KataNodeStatus>;
  platform: Platform<unknown>;
  /** The platform's own observation (its caches). */
  platformObserved: unknown;
  /** Pods as cached (a RuntimeClass no longer offered goes once none uses it). */
  pods: readonly Pod[];
  /** The RuntimeClasses as this controller knows them (absent: none). */
  runtimeClasses?: readonly RuntimeClass[];
  /** The feature gates, the TEE and the classes beyond kata and kata-remote (confidential.ts), on an install pass. */
  confidential?: ConfidentialPass;
  /** The handlers the extra RuntimeClasses need on the nodes, given to the platform (runtimeclasses.ts). */
  extraHandlers?: readonly string[];
  /**
   * An uninstall's check for pods reads the pods as the API server lists them (the cache only wakes it):
   * the list, or why it failed. Absent until a plan asks for it (`needsLivePods`).
   */
  livePods?: readonly Pod[] | { error: string };
  soakMs: number;
  /** How often a blocked uninstall looks for kata pods again. */
  blockedRecheckMs: number;
  /** How often to look again for NFD-labelled nodes when none is eligible. */
  eligibilityRecheckMs: number;
}

export interface KataConfigPlan {
  /** The InProgress condition and the fields beside it, to apply (a phase change gets an event). */
  status?: KataStatusChange;
  /** Ready nodes, for the Installed event. */
  readyNodes: number;
  /** RuntimeClasses to make sure of first (the rollout is done), and to delete (no longer offered, unused). */
  ensureRuntimeClasses: string[];
  deleteRuntimeClasses: string[];
  /** The writes that make sure of ensureRuntimeClasses (made, adopted, guarded): before the status. */
  runtimeClassWrites: PlannedWrite[];
  /** Events to record on the KataConfig (a class no longer wanted that pods still use). */
  events: { type: 'Normal' | 'Warning'; reason: string; note: string }[];
  /** The platform's writes, after the status: each step after the one before. */
  steps: PlannedWrite[][];
  /**
   * The KataNodes this pass finds to change (made, owned, their status written, or deleted), and the records
   * they report: handed to the KataNode work queue (katanodereconciler.ts), after the status.
   */
  kataNodes?: { records: NodeRecord[]; writes: PlannedWrite[][] };
  /** Node patches nothing in the plan waits for (the platform's `detached`): handed to the same work queue. */
  detached: PlannedWrite[];
  /** The platform left writes for the next pass (a per-pass batch limit): look again at once. */
  morePending: boolean;
  /** Everything is off the nodes: these writes, then the KataConfig's finalizer goes. */
  cleanUp?: PlannedWrite[][];
  /** The plan needs the pods as the API server lists them: observe them and plan again. */
  needsLivePods?: boolean;
  /** The gauges: the KataNodes' counts, the phase and the runtime classes. */
  gauges?: { kataNodes: Classification['kataNodes']; state: InProgressState; runtimeClasses: string[] };
  requeueAfterMs?: number;
  notes: { level: 'info' | 'debug'; fields: Record<string, unknown>; msg: string }[];
}

/** How often an uninstall waiting for its RuntimeClasses to go looks again (their deletion also wakes it). */
const RUNTIME_CLASS_GONE_RECHECK_MS = 5_000;

const emptyPlan = (): KataConfigPlan => ({
  readyNodes: 0,
  ensureRuntimeClasses: [],
  deleteRuntimeClasses: [],
  runtimeClassWrites: [],
  events: [],
  steps: [],
  detached: [],
  morePending: false,
  notes: [],
});

/** A selection's nodes as a set (the same set for the same selection: a platform answers one per snapshot). */
export const selectedSet = perObject((s: Selection): ReadonlySet<string> => new Set(s.nodes));

/** What the platform is given for one pass: its caches, the nodes, the selection and the time. */
export function platformInput(
  obs: Omit<KataConfigObserved, 'kataConfig'> & { kataConfig?: KataConfig },
  selected: ReadonlySet<string>,
  now: Date,
): PlatformInput<unknown> {
  const { platformObserved: observed, nodes, kataConfig, soakMs, extraHandlers } = obs;
  return { observed, nodes, ...(kataConfig ? { kataConfig } : {}), selected, now, soakMs, ...(extraHandlers ? { extraHandlers } : {}) };
}

/** A platform's write as the applier takes it. A node patch says what the node shows once it is made. */
export function plannedWrite(w: PlatformWrite): PlannedWrite {
  if (w.op === 'create') return { op: 'create', resource: w.resource, object: w.object };
  // Deletes go straight to the API server: a cache may lag behind a recent create.
  if (w.op === 'delete')
    return { op: 'delete', resource: w.resource, name: w.name, ...(w.namespace ? { namespace: w.namespace } : {}), uncached: true };
  const type = (w.type ?? 'merge') as 'merge' | 'json';
  const nodeMetadata = w.resource === Nodes && type === 'merge' && isMetadataOnly(w.patch);
  return {
    op: 'patch',
    resource: w.resource,
    name: w.name,
    ...(w.namespace ? { namespace: w.namespace } : {}),
    patch: w.patch,
    type,
    ...(nodeMetadata ? { shows: w.expect ? { metadata: JSON.parse(w.expect) } : w.patch } : {}),
  };
}

const isMetadataOnly = (patch: unknown): boolean => {
  const keys = Object.keys((patch ?? {}) as object);
  return keys.length === 1 && keys[0] === 'metadata';
};

/** A platform plan's steps. */
const platformSteps = (plan: PlatformPlan): PlannedWrite[][] => plan.steps.map((s) => s.map(plannedWrite));
const detached = (plan: PlatformPlan): PlannedWrite[] => (plan.detached ?? []).map(plannedWrite);

/**
 * One KataNode per record, its status from the record (docs/kataconfig.md, "KataNode"); those of nodes
 * without a record go. A KataNode is made with its status, and given the KataConfig in effect as owner with
 * it, in one request each (it has no status subresource); one that is owned already has its status written.
 */
export function kataNodeSteps(
  kc: KataConfig,
  records: readonly NodeRecord[],
  kataNodes: readonly KataNode[],
  now: Date,
  soakMs: number,
  pending?: ReadonlyMap<string, KataNodeStatus>,
): { steps: PlannedWrite[][]; promoteInMs?: number } {
  const plan = planKataNodes(kc, records, kataNodes, now, soakMs, pending);
  const owner = kataConfigOwner(kc, true);
  const uids = new Map(plan.delete.length ? kataNodes.map((k) => [objectName(k), k.metadata.uid]) : []);
  const whole = (name: string, ownerReferences: OwnerReference[], status: KataNodeStatus | undefined): PlannedWrite => ({
    op: 'apply',
    resource: KataNodes,
    object: { metadata: { name, ownerReferences }, status } as KataNode,
    rewriteOn: 'metadata',
  });
  const objects: PlannedWrite[] = [
    ...plan.create.map(({ node, status }) => whole(objectName(node), [owner], status)),
    ...plan.adopt.map((k) => whole(objectName(k), k.metadata.ownerReferences ?? [owner], k.status)),
    ...plan.delete.map((name): PlannedWrite => {
      const uid = uids.get(name);
      return { op: 'delete', resource: KataNodes, name, ...(uid ? { uid } : {}) };
    }),
  ];
  const statuses = plan.status.map(
    ({ cached, status }): PlannedWrite => ({
      op: 'status',
      resource: KataNodes,
      name: objectName(cached),
      status,
      share: kataNodeStatusShare,
    }),
  );
  const steps = [objects, statuses].filter((s) => s.length);
  return { steps, ...(plan.promoteAt !== undefined ? { promoteInMs: Math.max(0, plan.promoteAt - now.getTime()) } : {}) };
}

/** The soonest of several "look again after" delays, if any. */
export function soonest(...delays: (number | undefined)[]): number | undefined {
  const given = delays.filter((d): d is number => d !== undefined);
  return given.length ? Math.min(...given) : undefined;
}

/** An install pass: the KataConfig status, the RuntimeClasses once the rollout is done, the platform's writes, the KataNodes. */
export function planInstall(obs: KataConfigObserved, now: Date): KataConfigPlan {
  const kc = obs.kataConfig;
  const { platform } = obs;
  const rt = runtimeClassFor(kc.spec);
  const plan = emptyPlan();
  // An ignored KataConfig whose rival is gone starts from the beginning.
  if (!inProgressOf(kc) || inProgressOf(kc)?.reason === 'Ignored') {
    // The documented first state: Installing, before any node is counted.
    plan.status = {
      inProgress: { status: 'True', reason: 'Installing', message: messages.installing(rt) },
      kataNodes: { nodeCount: 0, readyNodeCount: 0 },
    };
    // The install proper starts at the next pass (this controller's own status write wakes none).
    plan.requeueAfterMs = 0;
    return plan;
  }
  if (kc.spec?.enablePeerPods && !platform.supportsPeerPods) {
    // Refused, not half done: nothing is installed until the spec asks for what this platform has.
    plan.status = { inProgress: { status: 'True', reason: 'Failed', message: messages.peerPodsUnsupported(platform.name) } };
    return plan;
  }
  const selection = platform.select(obs.nodes, kc.spec);
  const input = platformInput(obs, selectedSet(selection), now);
  // The status is computed from the desired selection and the platform's view of the nodes, not from
  // the writes below.
  const view = platformView(platform, input);
  const records = view.records();
  const classification = classifyRecords(records, input.selected.size, view.rolloutComplete());
  const initial = !(kc.status?.runtimeClasses ?? []).includes(rt);
  let state = installCondition(classification, selection, rt, initial);
  const installed = state === done;
  const extra = obs.confidential;
  // A gate that cannot be read, or a confidential setup refused, is the status; a node's failure comes first.
  if (extra?.refusal && state.reason !== 'Failed') state = extra.refusal;
  const classes = planRuntimeClasses({
    current: kc.status?.runtimeClasses ?? [],
    wanted: runtimeClassesFor(kc.spec),
    extra,
    installed,
    nodes: obs.nodes,
    runtimeClasses: obs.runtimeClasses ?? [],
    pods: obs.pods,
    platform,
    owner: kataConfigOwner(kc, true),
  });
  const { runtimeClasses } = classes;
  plan.ensureRuntimeClasses = classes.ensure;
  plan.runtimeClassWrites = classes.writes;
  plan.deleteRuntimeClasses = classes.delete;
  for (const { name, pods } of classes.waitingForPods) {
    plan.notes.push({
      level: 'info',
      fields: { runtimeClass: name, pods: pods.slice(0, 20), count: pods.length },
      msg: 'RuntimeClass no longer wanted: waiting for its pods',
    });
    plan.events.push({ type: 'Warning', reason: 'RuntimeClassInUse', note: confidentialTexts.removalBlocked(name, pods) });
  }
  plan.status = { inProgress: state, kataNodes: classification.kataNodes, runtimeClasses };
  plan.readyNodes = classification.kataNodes.readyNodeCount;
  plan.gauges = { kataNodes: classification.kataNodes, state, runtimeClasses };

  const writes = view.installPlan();
  const kataNodes = kataNodeSteps(kc, records, obs.kataNodes, now, obs.soakMs, obs.pendingKataNodes);
  plan.steps = platformSteps(writes);
  plan.detached = detached(writes);
  plan.kataNodes = { records, writes: kataNodes.steps };
  plan.morePending = writes.pending > 0;
  plan.notes.push({
    level: 'debug',
    fields: {
      phase: state.reason || 'Installed',
      nodes: classification.kataNodes.nodeCount,
      ready: plan.readyNodes,
      pending: writes.pending,
    },
    msg: 'reconciled',
  });
  const requeue = soonest(
    selection.noEligibleNodes ? obs.eligibilityRecheckMs : undefined,
    // Pod deletions do not wake an install pass: a class waiting for its pods looks again.
    classes.waitingForPods.length ? obs.blockedRecheckMs : undefined,
    writes.recheckAfterMs,
    kataNodes.promoteInMs,
  );
  if (requeue !== undefined) plan.requeueAfterMs = requeue;
  return plan;
}

/**
 * An uninstall pass: until its check for pods passes, kata stays where it is (a rollout in flight finishes
 * first); past it, kata leaves every node, and once every node is back everything osc made goes.
 */
export function planUninstall(obs: KataConfigObserved, now: Date): KataConfigPlan {
  const kc = obs.kataConfig;
  const { platform } = obs;
  const rt = runtimeClassFor(kc.spec);
  const plan = emptyPlan();
  // Past the check for pods, the uninstall goes on whatever pods appear: status.uninstallStarted remembers it.
  if (kc.status?.uninstallStarted !== true) {
    // Until the check for pods passes, the records are still the install's.
    const installInput = platformInput(obs, selectedSet(platform.select(obs.nodes, kc.spec)), now);
    const installView = platformView(platform, installInput);
    const installRecords = installView.records();
    const kataNodes = kataNodeSteps(kc, installRecords, obs.kataNodes, now, obs.soakMs, obs.pendingKataNodes);
    plan.kataNodes = { records: installRecords, writes: kataNodes.steps };
    const installing = installView.installing();
    if (installing.length) {
      plan.notes.push({ level: 'info', fields: { installing }, msg: 'KataConfig deleted during a rollout: waiting for it to settle' });
      // A node in flight settles when its installer reports, or fails at its deadline: a silent installer
      // changes nothing that would wake this pass, so it looks again then.
      const recheck = soonest(installView.installPlan().recheckAfterMs, kataNodes.promoteInMs);
      if (recheck !== undefined) plan.requeueAfterMs = recheck;
      return plan;
    }
    if (!obs.livePods) return { ...plan, needsLivePods: true };
    // Any pod still using the runtime keeps kata in place.
    const classes = new Set([...(kc.status?.runtimeClasses ?? []), rt]);
    let blocked: InProgressState | undefined;
    if ('error' in obs.livePods) {
      blocked = { status: 'False', reason: 'BlockedByExistingKataPods', message: messages.listPodsFailed(obs.livePods.error) };
    } else {
      const using = podsUsing(obs.livePods, classes);
      if (using.length) {
        blocked = {
          status: 'False',
          reason: 'BlockedByExistingKataPods',
          message: messages.blocked(runtimeClassesInUse(obs.livePods, classes)),
        };
        plan.notes.push({
          level: 'info',
          fields: { pods: using.slice(0, 20), count: using.length },
          msg: 'uninstall blocked by pods using the runtime',
        });
      }
    }
    if (blocked) {
      plan.status = { inProgress: blocked };
      plan.requeueAfterMs = soonest(obs.blockedRecheckMs, kataNodes.promoteInMs) as number;
      return plan;
    }
  }

  const input = platformInput(obs, new Set(), now);
  const view = platformView(platform, input);
  const writes = view.uninstallPlan();
  const records = view.records();
  const classification = classifyRecords(records, 0, true);
  const state = uninstallCondition(classification, rt);
  const kataNodes = classification.kataNodes;
  const nodesBack = Object.keys(kataNodes).every((k) => k === 'nodeCount' || k === 'readyNodeCount');
  plan.steps = platformSteps(writes);
  plan.detached = detached(writes);
  if (writes.pending === 0 && nodesBack && view.uninstallComplete() && state.reason !== 'Failed') {
    // Everything osc created goes (RuntimeClasses first), then the finalizer: nothing may be left behind.
    // A class being deleted is kept by its cleanup finalizer until runtimeclass-cleanup releases it: the
    // KataConfig stays until then, so that a delete that returned leaves no class behind. Its going wakes us.
    const left = (obs.runtimeClasses ?? []).filter((c) => c.metadata.ownerReferences?.some((o) => o.kind === 'KataConfig'));
    const terminating = new Set(left.filter((c) => c.metadata.deletionTimestamp).map(objectName));
    plan.deleteRuntimeClasses = [...new Set([...(kc.status?.runtimeClasses ?? []), ...left.map(objectName)])].filter(
      (n) => !terminating.has(n),
    );
    if (left.length) {
      plan.notes.push({
        level: 'info',
        fields: { runtimeClasses: left.map(objectName) },
        msg: 'uninstalled: waiting for the RuntimeClasses to go',
      });
      plan.requeueAfterMs = RUNTIME_CLASS_GONE_RECHECK_MS;
      return plan;
    }
    const deleteKataNodes = obs.kataNodes.map(
      (k): PlannedWrite => ({
        op: 'delete',
        resource: KataNodes,
        name: objectName(k),
        ...(k.metadata.uid ? { uid: k.metadata.uid } : {}),
      }),
    );
    delete plan.kataNodes;
    const cleanup = platform.cleanupPlan(input);
    const cleanupDetached = detached(cleanup);
    plan.cleanUp = [
      ...platformSteps(cleanup),
      ...(cleanupDetached.length ? [cleanupDetached] : []),
      ...(deleteKataNodes.length ? [deleteKataNodes] : []),
    ];
    return plan;
  }
  // uninstallStarted is the peer pods controller's signal to remove its parts (docs/architecture.md).
  plan.status = { inProgress: state, kataNodes, uninstallStarted: true };
  plan.gauges = { kataNodes, state, runtimeClasses: kc.status?.runtimeClasses ?? [] };
  const kataNodeWrites = kataNodeSteps(kc, records, obs.kataNodes, now, obs.soakMs, obs.pendingKataNodes);
  plan.kataNodes = { records, writes: kataNodeWrites.steps };
  plan.morePending = writes.pending > 0;
  const requeue = soonest(writes.recheckAfterMs, kataNodeWrites.promoteInMs);
  if (requeue !== undefined) plan.requeueAfterMs = requeue;
  return plan;
}
