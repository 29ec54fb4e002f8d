import type { Logger } from 'pino';
import { eventNotes } from '../../api/events.ts';
import { activeKataConfig, type KataConfig, KataConfigs, messages } from '../../api/kataconfig.ts';
import { DEFAULT_SOAK_MS, type KataNode, KataNodes } from '../../api/katanode.ts';
import { objectName } from '../../api/meta.ts';
import { KATACONFIG_FINALIZER } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import type { Node, Pod, RuntimeClass } from '../../kube/resources.ts';
import { Nodes, Pods, RuntimeClasses } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import type { Platform } from '../../platform/platform.ts';
import { Applier, type CacheLookup, type PlannedWrite } from '../../runtime/applier.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import { type Informer, snapshotOf } from '../../runtime/informer.ts';
import type { RuntimeMetrics } from '../../runtime/metrics.ts';
import type { ConfidentialClasses, ConfidentialPass } from './confidential.ts';
import type { KataMetrics } from './metrics.ts';
import {
  type KataConfigObserved,
  type KataConfigPlan,
  planInstall,
  plannedWrite,
  planUninstall,
  platformInput,
  selectedSet,
} from './plan.ts';
import { extraHandlers } from './runtimeclasses.ts';
import {
  done,
  type InProgressState,
  inProgressOf,
  type KataStatusChange,
  kataConfigStatusShare,
  kataStatusApply,
  runtimeClassFor,
} from './state.ts';
import { TrailingWrites } from './trailing.ts';

/** The field manager of everything the KataConfig controller applies (its status share's, too). */
export const KATACONFIG_FIELD_MANAGER = kataConfigStatusShare.fieldManager;
/** Writes in flight at once within one step of a plan (e.g. node label patches, KataNode statuses). */
export const WRITES_IN_FLIGHT = 16;

export interface KataConfigOptions {
  /** How often a blocked uninstall looks for kata pods again (pod deletions also wake it). */
  blockedRecheckMs: number;
  /** How often to look again for NFD-labelled nodes when none is eligible (node label changes also wake it). */
  eligibilityRecheckMs: number;
  /** How long a node runs its assigned configuration without error before it is its KataNode's lastKnownGood. */
  soakMs: number;
  /**
   * The least time between the starts of two passes (the controller's work queue keeps it: see
   * controller.ts). Node changes that come meanwhile are taken in by the next pass together: during an
   * install a pass would otherwise follow every node event, and write a status each time.
   */
  passGapMs: number;
}

/** A pass's computation times this is the least time before the next (see passGapMs), up to MAX_PASS_GAP_MS. */
export const PASS_GAP_PER_COMPUTE = 10;
export const MAX_PASS_GAP_MS = 1_000;

export const defaultKataConfigOptions: KataConfigOptions = {
  blockedRecheckMs: 15_000,
  eligibilityRecheckMs: 30_000,
  soakMs: DEFAULT_SOAK_MS,
  passGapMs: 250,
};

/** What the reconciler reads and writes through; injected so that it can be built over any caches. */
export interface KataConfigContext {
  client: KubeClient;
  kataConfigs: Informer<KataConfig>;
  nodes: Informer<Node>;
  /** The per-node records this controller writes (one KataNode per node that is or was selected). */
  kataNodes: Informer<KataNode>;
  /** How kata reaches the nodes on this cluster (src/platform), and a reading of its caches. */
  platform: Platform<unknown>;
  observe: () => unknown;
  runtimeClasses: Informer<RuntimeClass>;
  pods: Informer<Pod>;
  events: EventRecorder;
  metrics?: RuntimeMetrics;
  kataMetrics?: KataMetrics;
  options: KataConfigOptions;
  log?: Logger;
  /** The clock the plan is given (tests set it). */
  now?: () => Date;
  /** How long a write the caches have not shown is awaited before it may be made again (tests shorten it). */
  expectationTtlMs?: number;
  /** The feature gates, the TEE and the classes beyond kata and kata-remote (confidential.ts). */
  confidential?: ConfidentialClasses;
}

/** Phase changes worth an event, and their text. */
function phaseEvent(prev: InProgressState | undefined, next: InProgressState, kc: KataConfig, rt: string, readyNodes: number) {
  if (prev && prev.reason === next.reason && prev.status === next.status && prev.message === next.message) return undefined;
  if (next === done || (next.status === 'False' && next.reason === '')) {
    if (prev && prev.status === 'False' && prev.reason === '') return undefined;
    return {
      type: 'Normal' as const,
      reason: 'Installed',
      note: eventNotes.installed(rt, readyNodes),
    };
  }
  if (prev && prev.reason === next.reason && next.reason !== 'Failed') return undefined;
  const warn = next.reason === 'Failed' || next.reason === 'BlockedByExistingKataPods' || next.reason === 'UnsupportedOCPVersion';
  const type = warn ? ('Warning' as const) : ('Normal' as const);
  return { type, reason: next.reason || 'Progressing', note: next.message || eventNotes.progressing(kc.metadata.name) };
}

/**
 * Reconciles the (single) KataConfig in three steps: observe (the informer caches, with this controller's
 * own writes the caches do not show yet as the applier knows them), plan (plan.ts: pure, given the
 * observation and the time), apply (the runtime applier: the RuntimeClasses, the status, then the platform's
 * writes and the KataNodes). Every step is idempotent, so a restart at any point converges to the same end
 * state; a write that fails (a 409 included) fails the pass, and the work queue retries it.
 */
export class KataConfigReconciler {
  private readonly ctx: KataConfigContext;
  private readonly applier: Applier;
  /** The KataNodes' writes and detached node patches, made beside the pass from its plan (trailing.ts). */
  readonly trailing: TrailingWrites;

  constructor(ctx: KataConfigContext) {
    this.ctx = ctx;
    this.applier = new Applier({
      client: ctx.client,
      fieldManager: KATACONFIG_FIELD_MANAGER,
      ...(ctx.metrics ? { metrics: ctx.metrics } : {}),
      ...(ctx.expectationTtlMs !== undefined ? { expectationTtlMs: ctx.expectationTtlMs } : {}),
    });
    this.applier.watch(Nodes, ctx.nodes);
    this.applier.watch(KataNodes, ctx.kataNodes);
    this.applier.watch(Pods, ctx.pods);
    this.applier.watch(RuntimeClasses, ctx.runtimeClasses);
    this.applier.watch(KataConfigs, ctx.kataConfigs);
    this.applier.ownWrites(KataConfigs);
    this.trailing = new TrailingWrites({ applier: this.applier, kataNodes: ctx.kataNodes, nodes: ctx.nodes });
  }

  /**
   * Whether a KataConfig's new version is our own status write and nothing else: the pass that made it
   * planned from everything it shows, so it wakes no pass (each would read every node to find nothing to do).
   */
  ownStatusWrite(before: KataConfig, after: KataConfig): boolean {
    return (
      this.applier.madeVersion(KataConfigs, after) &&
      before.metadata.generation === after.metadata.generation &&
      before.metadata.deletionTimestamp === after.metadata.deletionTimestamp &&
      (before.metadata.finalizers ?? []).join() === (after.metadata.finalizers ?? []).join()
    );
  }

  /**
   * The cached KataConfig with its status as this controller's last write left it, where the cache does not
   * show that write yet: a pass that comes before the write's watch event plans from the status the server
   * has, and does not write again what it wrote (a write the server would answer with the same version).
   */
  private withOwnStatus(cached: KataConfig | undefined): KataConfig | undefined {
    if (!cached) return undefined;
    const written = this.applier.latest(KataConfigs, objectName(cached), undefined, cached);
    return written && written !== cached && written.status ? { ...cached, status: written.status } : cached;
  }

  /** Calls `fn` when a write of this controller's ended unshown (Applier.onUnshownExpired): a pass must look again. */
  onUnshownExpired(fn: () => void): () => void {
    return this.applier.onUnshownExpired(fn);
  }

  /** Writes the caches do not show yet (for tests and logs). */
  get awaitedWrites(): number {
    return this.applier.pending;
  }

  async reconcile(name: string, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    let kc = this.withOwnStatus(this.ctx.kataConfigs.get(name));
    if (!kc) {
      if (this.ctx.kataConfigs.list().length === 0) await this.removeLeftovers(log, signal);
      return undefined;
    }
    const oldest = activeKataConfig(this.ctx.kataConfigs.list());
    if (oldest && oldest.metadata.name !== name) {
      log.warn({ active: oldest.metadata.name }, 'ignoring a second KataConfig: only one may exist');
      // One that slipped past admission (webhook down or not yet registered) says why nothing happens.
      if (kc.metadata.deletionTimestamp) return undefined;
      const state = { status: 'False' as const, reason: 'Ignored' as const, message: messages.ignored(objectName(oldest)) };
      const status = kataStatusApply(kc.status, { inProgress: state }, this.ctx.now?.() ?? new Date());
      const written = await this.applier.applyStatus(KataConfigs, kc, status, kataConfigStatusShare);
      if (written && inProgressOf(kc)?.reason !== 'Ignored')
        await this.ctx.events.record(written, 'Warning', 'Ignored', 'Reconcile', state.message);
      return undefined;
    }
    const deleting = !!kc.metadata.deletionTimestamp;
    if (deleting && !hasFinalizer(kc, KATACONFIG_FINALIZER)) return undefined;
    if (!deleting && !hasFinalizer(kc, KATACONFIG_FINALIZER))
      kc = await addFinalizer(this.ctx.client, KataConfigs, kc, KATACONFIG_FINALIZER);

    const now = this.ctx.now?.() ?? new Date();
    const t0 = performance.now();
    const observed = this.observe(kc, deleting ? undefined : await this.confidentialPass(kc));
    let plan = deleting ? planUninstall(observed, now) : planInstall(observed, now);
    if (plan.needsLivePods) {
      // The cache wakes a blocked uninstall; a live list decides.
      observed.livePods = await this.livePods(signal);
      plan = planUninstall(observed, now);
    }
    const ms = performance.now() - t0;
    const result = await this.apply(kc, plan, now, log, signal);
    for (const note of plan.notes) log[note.level]({ ...note.fields, ...(note.msg === 'reconciled' ? { computeMs: ms } : {}) }, note.msg);
    // A pass that computes longer (a larger cluster, a busier machine) is followed less soon: the passes of
    // an install then cost the same share of a core whatever the size.
    const paceMs = Math.min(MAX_PASS_GAP_MS, PASS_GAP_PER_COMPUTE * ms);
    return paceMs > this.ctx.options.passGapMs ? { ...result, paceMs } : result;
  }

  /**
   * An install pass's reading of the feature gates, the TEE and the release (confidential.ts; it notes a new
   * problem as an event), and the handlers the extra classes need on the nodes. None before the install
   * proper starts, nor for a spec the platform refuses.
   */
  private async confidentialPass(kc: KataConfig): Promise<ConfidentialPass | undefined> {
    const { ctx } = this;
    const phase = inProgressOf(kc);
    if (!ctx.confidential || !phase || phase.reason === 'Ignored') return undefined;
    if (kc.spec?.enablePeerPods && !ctx.platform.supportsPeerPods) return undefined;
    const nodes = snapshotOf(ctx.nodes);
    const selected = selectedSet(ctx.platform.select(nodes, kc.spec));
    return ctx.confidential.pass(kc, nodes, selected, snapshotOf(ctx.pods));
  }

  /** What the caches show for one pass, with this controller's writes they do not show yet. */
  private observe(kc: KataConfig, confidential?: ConfidentialPass): KataConfigObserved {
    const { ctx } = this;
    // Snapshots: the same arrays as the last pass's where nothing changed, which is what lets the plan's
    // per-node work skip the nodes that did not change (runtime/memo.ts).
    const runtimeClasses = this.applier.latestList(RuntimeClasses, snapshotOf(ctx.runtimeClasses));
    return {
      kataConfig: kc,
      nodes: snapshotOf(ctx.nodes),
      kataNodes: this.applier.latestList(KataNodes, snapshotOf(ctx.kataNodes)),
      pendingKataNodes: this.trailing.pendingStatuses(),
      platform: ctx.platform,
      platformObserved: ctx.observe(),
      pods: snapshotOf(ctx.pods),
      runtimeClasses,
      ...(confidential ? { confidential } : {}),
      // The handlers the extra classes need: those an install pass wants, and those of the extra classes osc
      // made, which stay until the uninstall's end (so the platform's target stays the same while it runs).
      extraHandlers: extraHandlers(confidential?.classes ?? [], runtimeClasses),
      soakMs: ctx.options.soakMs,
      blockedRecheckMs: ctx.options.blockedRecheckMs,
      eligibilityRecheckMs: ctx.options.eligibilityRecheckMs,
    };
  }

  private async livePods(signal: AbortSignal): Promise<Pod[] | { error: string }> {
    try {
      return (await this.ctx.client.list(Pods, { signal })).items;
    } catch (e) {
      if (signal.aborted) throw e;
      return { error: errorMessage(e) };
    }
  }

  /** Where the applier finds the cached copy of a write's target. */
  private readonly lookup: CacheLookup = (rt, name, namespace) => {
    const { ctx } = this;
    if (rt === Nodes) return ctx.nodes.get(name);
    if (rt === KataNodes) return ctx.kataNodes.get(name);
    if (rt === Pods) return ctx.pods.get(`${namespace}/${name}`);
    if (rt === RuntimeClasses) return ctx.runtimeClasses.get(name);
    return undefined;
  };

  /**
   * The plan's writes: RuntimeClasses before the status that names them, the status, then the platform's
   * writes and the KataNodes (on a large cluster a thousand of them; the status does not wait for them).
   */
  private async apply(
    kc: KataConfig,
    plan: KataConfigPlan,
    now: Date,
    log: Logger,
    signal: AbortSignal,
  ): Promise<ReconcileResult | undefined> {
    const rt = runtimeClassFor(kc.spec);
    await this.applier.runSteps([plan.runtimeClassWrites], this.lookup, WRITES_IN_FLIGHT, signal);
    for (const name of plan.deleteRuntimeClasses) await this.deleteOwnRuntimeClass(name, signal);
    for (const ev of plan.events) await this.ctx.events.record(kc, ev.type, ev.reason, 'Reconcile', ev.note);
    if (plan.status) await this.writeStatus(kc, plan.status, plan.readyNodes, now);
    if (plan.gauges) this.ctx.kataMetrics?.observe(plan.gauges.kataNodes, plan.gauges.state, plan.gauges.runtimeClasses);
    const outcomes = await this.applier.runSteps(plan.steps, this.lookup, WRITES_IN_FLIGHT, signal);
    this.applier.settleCreates(plan.steps.flat());
    await this.trailing.plan(plan.kataNodes?.writes.flat(), plan.detached, signal);
    if (plan.cleanUp) {
      await this.applier.runSteps(plan.cleanUp, this.lookup, WRITES_IN_FLIGHT, signal);
      await removeFinalizer(this.ctx.client, KataConfigs, kc, KATACONFIG_FINALIZER);
      this.ctx.kataMetrics?.reset();
      await this.ctx.events.record(kc, 'Normal', 'Uninstalled', 'Uninstall', eventNotes.uninstalled(rt));
      log.info('uninstalled');
      return undefined;
    }
    // More writes to make: another pass at once, with a status write in between. When this pass made none
    // (the next ones wait for the cache to show earlier ones), the node events that show them wake the
    // controller; a slow poll covers a write the cache never shows.
    if (plan.morePending) return { requeueAfterMs: outcomes.flat().includes('written') || plan.detached.length ? 0 : 1000 };
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
  }

  /**
   * With no KataConfig at all (its finalizer removed by hand), what it owned would be garbage: a garbage
   * collector would delete the MachineConfig and the RuntimeClasses, leaving nodes labelled and the pool
   * behind. osc does the whole uninstall instead, without a status to write: nodes leave the pool, our
   * objects go, and the pool goes once no node runs its configuration. Nothing keeps pointing at the
   * deleted KataConfig's UID. Node and pool changes bring us back here (LEFTOVERS_KEY).
   */
  private async removeLeftovers(log: Logger, signal: AbortSignal): Promise<void> {
    const owned = (o: { metadata: { ownerReferences?: OwnerReference[] } } | undefined) =>
      !!o?.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig');
    const { ctx } = this;
    const input = platformInput(
      { ...this.observe({ metadata: {} } as KataConfig), kataConfig: undefined },
      new Set(),
      ctx.now?.() ?? new Date(),
    );
    const leftovers = ctx.platform.leftoversPlan(input);
    const steps = [...leftovers.steps, ...(leftovers.detached?.length ? [leftovers.detached] : [])].map((s) => s.map(plannedWrite));
    const kataNodes = this.applier.latestList(KataNodes, ctx.kataNodes.list());
    // No plan has KataNode writes any more: every KataNode goes.
    await this.trailing.plan(undefined, [], signal);
    steps.push([
      ...ctx.runtimeClasses
        .list()
        .filter(owned)
        .map((rc): PlannedWrite => ({ op: 'delete', resource: RuntimeClasses, name: objectName(rc) })),
      ...kataNodes.map((k): PlannedWrite => ({ op: 'delete', resource: KataNodes, name: objectName(k) })),
    ]);
    const outcomes = await this.applier.runSteps(steps, this.lookup, WRITES_IN_FLIGHT, signal);
    const removed = steps.flat().filter((w, i) => w.op === 'delete' && outcomes.flat()[i] === 'written');
    if (removed.length)
      log.info(
        { removed: removed.map((w) => `${w.resource.kind.toLowerCase()}/${w.op === 'delete' ? w.name : ''}`) },
        'no KataConfig exists: removed what the last one left behind',
      );
  }

  /** Applies this controller's status fields (and only those), with an event for a phase change. */
  private async writeStatus(kc: KataConfig, change: KataStatusChange, readyNodes: number, now: Date): Promise<void> {
    const prev = inProgressOf(kc);
    const state = change.inProgress;
    const written = await this.applier.applyStatus(KataConfigs, kc, kataStatusApply(kc.status, change, now), kataConfigStatusShare);
    if (!written) return;
    const ev = phaseEvent(
      prev
        ? { status: prev.status as 'True' | 'False', reason: (prev.reason ?? '') as InProgressState['reason'], message: prev.message ?? '' }
        : undefined,
      state,
      kc,
      runtimeClassFor(kc.spec),
      readyNodes,
    );
    if (ev) await this.ctx.events.record(written, ev.type, ev.reason, 'Reconcile', ev.note);
  }

  /** Deletes a RuntimeClass osc made; one someone else made is not ours to delete. */
  private async deleteOwnRuntimeClass(name: string, signal: AbortSignal): Promise<void> {
    // Read live when the cache lacks it: a cache that lags behind a recent create must not make us leave it.
    const cached = this.applier.latest(RuntimeClasses, name, undefined, this.ctx.runtimeClasses.get(name));
    const existing = cached ?? (await this.ctx.client.find(RuntimeClasses, name, undefined, signal));
    if (!existing?.metadata.ownerReferences?.some((o) => o.kind === 'KataConfig')) return;
    const uid = existing.metadata.uid;
    const write: PlannedWrite = {
      op: 'delete',
      resource: RuntimeClasses,
      name,
      ...(uid ? { uid } : {}),
      ...(cached ? {} : { uncached: true }),
    };
    await this.applier.write(write, this.ctx.runtimeClasses.get(name), signal);
  }
}
