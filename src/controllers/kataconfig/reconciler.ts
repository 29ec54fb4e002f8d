import type { Logger } from 'pino';
import { eventNotes } from '../../api/events.ts';
import { activeKataConfig, type KataConfig, KataConfigs, kataConfigOwner, messages } from '../../api/kataconfig.ts';
import { DEFAULT_SOAK_MS, type KataNode, type KataNodeStatus, KataNodes } from '../../api/katanode.ts';
import { KATACONFIG_FINALIZER } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage, isAlreadyExists } from '../../kube/errors.ts';
import type { Node, Pod, RuntimeClass } from '../../kube/resources.ts';
import { Pods, RuntimeClasses } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { type NodeRecord, type Platform, type PlatformInput, platformView } from '../../platform/platform.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { RuntimeMetrics } from '../../runtime/metrics.ts';
import { applyStatusIfChanged } from '../../runtime/status.ts';
import { WriteLane } from '../../runtime/writelane.ts';
import type { ConfidentialClasses } from './confidential.ts';
import { kataNodeStatusShare, planKataNodes, WrittenStatuses } from './katanodes.ts';
import type { KataMetrics } from './metrics.ts';
import { PlatformWriter, WRITES_IN_FLIGHT } from './platformwrites.ts';
import { RuntimeClassWrites } from './runtimeclass-writes.ts';
import { extraHandlers } from './runtimeclasses.ts';
import {
  classifyRecords,
  done,
  type InProgressState,
  inProgressOf,
  installCondition,
  type KataStatusChange,
  kataConfigStatusShare,
  kataStatusApply,
  podsUsing,
  runtimeClassesFor,
  runtimeClassesInUse,
  runtimeClassFor,
  uninstallCondition,
} from './state.ts';

/**
 * One KataNode write, as a pass planned it: made (then its status written), its status written (and its
 * owner reference put right first, where `adopt` says so), or deleted.
 */
type KataNodeWrite =
  | { op: 'create'; node: KataNode; status: KataNodeStatus }
  | { op: 'status'; cached: KataNode; status: KataNodeStatus; adopt?: OwnerReference[] }
  | { op: 'delete' };

/** A write planned while an older one for the same KataNode waits: a create not yet made stays a create. */
function mergeKataNodeWrites(pending: KataNodeWrite, next: KataNodeWrite): KataNodeWrite {
  if (pending.op === 'create' && next.op === 'status') return { op: 'create', node: pending.node, status: next.status };
  if (pending.op === 'status' && pending.adopt && next.op === 'status' && !next.adopt) return { ...next, adopt: pending.adopt };
  return next;
}

export interface KataConfigOptions {
  /** How often a blocked uninstall looks for kata pods again (pod deletions also wake it). */
  blockedRecheckMs: number;
  /** How often to look again for NFD-labelled nodes when none is eligible (node label changes also wake it). */
  eligibilityRecheckMs: number;
  /** How long a node runs its assigned configuration without error before it is its KataNode's lastKnownGood. */
  soakMs: number;
}

export const defaultKataConfigOptions: KataConfigOptions = {
  blockedRecheckMs: 15_000,
  eligibilityRecheckMs: 30_000,
  soakMs: DEFAULT_SOAK_MS,
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
  /** For what happens beside a reconcile (KataNode writes retried). */
  log?: Logger;
  /** The feature gates, the TEE and the classes beyond kata and kata-remote (confidential.ts). */
  confidential?: ConfidentialClasses;
}

const ownerOf = (kc: KataConfig): OwnerReference => kataConfigOwner(kc, true);

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
 * Reconciles the (single) KataConfig: reads everything from the informer caches, computes the desired state
 * and the status with pure functions (state.ts, the platform's records and plans), then writes only what
 * differs.
 * Every step is idempotent, so a restart at any point converges to the same end state.
 */
export class KataConfigReconciler {
  private readonly ctx: KataConfigContext;
  private readonly writtenKataNodes = new WrittenStatuses();
  /**
   * KataNode writes go beside the worker: a thousand nodes changing at once mean a thousand writes, and the
   * next KataConfig status must not wait behind them.
   */
  private readonly kataNodeLane: WriteLane<KataNodeWrite>;
  /** The platform's writes (platformwrites.ts). */
  private readonly writer: PlatformWriter;
  /** The handlers the extra RuntimeClasses need, as the last install pass found them (runtimeclasses.ts). */
  private extraHandlers: readonly string[] = [];
  /** The RuntimeClasses' writes (runtimeclass-writes.ts). */
  private readonly runtimeClassWrites: RuntimeClassWrites;

  constructor(ctx: KataConfigContext) {
    this.ctx = ctx;
    this.kataNodeLane = new WriteLane<KataNodeWrite>({
      write: (name, w, signal) => this.writeKataNode(name, w, signal),
      inFlight: WRITES_IN_FLIGHT,
      merge: mergeKataNodeWrites,
      ...(ctx.log ? { log: ctx.log } : {}),
    });
    this.writer = new PlatformWriter({ client: ctx.client, nodes: ctx.nodes, ...(ctx.log ? { log: ctx.log } : {}) });
    this.runtimeClassWrites = new RuntimeClassWrites({ ...ctx, writer: this.writer });
  }

  /** Answers once the writes handed to the lanes are made (for tests). */
  async idle(): Promise<void> {
    await Promise.all([this.writer.idle(), this.kataNodeLane.idle()]);
  }

  /** A node as its cache now shows it (see PlatformWriter.nodeSeen). */
  nodeSeen(name: string): void {
    this.writer.nodeSeen(name);
  }

  async reconcile(name: string, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const kc = this.ctx.kataConfigs.get(name);
    if (!kc) {
      if (this.ctx.kataConfigs.list().length === 0) await this.removeLeftovers(log, signal);
      return undefined;
    }
    const oldest = activeKataConfig(this.ctx.kataConfigs.list());
    if (oldest && oldest.metadata.name !== name) {
      log.warn({ active: oldest.metadata.name }, 'ignoring a second KataConfig: only one may exist');
      // One that slipped past admission (webhook down or not yet registered) says why nothing happens.
      if (kc.metadata.deletionTimestamp) return undefined;
      const state = { status: 'False' as const, reason: 'Ignored' as const, message: messages.ignored(oldest.metadata.name ?? '') };
      const written = await applyStatusIfChanged(
        this.ctx.client,
        KataConfigs,
        kc,
        kataStatusApply(kc.status, { inProgress: state }),
        kataConfigStatusShare,
        this.ctx.metrics,
      );
      if (written && inProgressOf(kc)?.reason !== 'Ignored')
        await this.ctx.events.record(written, 'Warning', 'Ignored', 'Reconcile', state.message);
      return undefined;
    }
    return kc.metadata.deletionTimestamp ? this.uninstall(kc, log, signal) : this.install(kc, log, signal);
  }

  private async install(kc: KataConfig, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const { client } = this.ctx;
    const rt = runtimeClassFor(kc.spec);
    if (!hasFinalizer(kc, KATACONFIG_FINALIZER)) kc = await addFinalizer(client, KataConfigs, kc, KATACONFIG_FINALIZER);

    // An ignored KataConfig whose rival is gone starts from the beginning.
    if (!inProgressOf(kc) || inProgressOf(kc)?.reason === 'Ignored') {
      // The documented first state: Installing, before any node is counted.
      const state = { status: 'True' as const, reason: 'Installing' as const, message: messages.installing(rt) };
      await this.writeStatus(kc, { inProgress: state, kataNodes: { nodeCount: 0, readyNodeCount: 0 } }, rt, 0);
      return undefined;
    }

    const { platform } = this.ctx;
    if (kc.spec?.enablePeerPods && !platform.supportsPeerPods) {
      // Refused, not half done: nothing is installed until the spec asks for what this platform has.
      const state = { status: 'True' as const, reason: 'Failed' as const, message: messages.peerPodsUnsupported(platform.name) };
      await this.writeStatus(kc, { inProgress: state }, rt, 0);
      return undefined;
    }
    const t0 = performance.now();
    const nodes = this.ctx.nodes.list();
    const selection = platform.select(nodes, kc.spec);
    const selected = new Set(selection.nodes);
    const extra = await this.ctx.confidential?.pass(kc, nodes, selected, this.ctx.pods.list());
    this.extraHandlers = extraHandlers(extra?.classes ?? [], this.ctx.runtimeClasses.list());
    const input = this.platformInput(kc, nodes, selected, new Date());

    // The status comes first: it is computed from the desired selection and the platform's view of the
    // nodes, not from our own writes below, and on a large cluster it must not wait for them.
    const view = platformView(platform, input);
    const records = view.records();
    const classification = classifyRecords(records, input.selected.size, view.rolloutComplete());
    const initial = !(kc.status?.runtimeClasses ?? []).includes(rt);
    let state = installCondition(classification, selection, rt, initial);
    const installed = state === done;
    // A gate that cannot be read, or a confidential setup refused, is the status; a node's failure comes first.
    if (extra?.refusal && state.reason !== 'Failed') state = extra.refusal;
    const { runtimeClasses, waitingForPods } = await this.runtimeClassWrites.sync(
      kc,
      { wanted: runtimeClassesFor(kc.spec), extra, installed, nodes, owner: ownerOf(kc) },
      log,
      signal,
    );
    const t1 = performance.now();
    await this.writeStatus(
      kc,
      { inProgress: state, kataNodes: classification.kataNodes, runtimeClasses },
      rt,
      classification.kataNodes.readyNodeCount,
    );
    this.ctx.kataMetrics?.observe(classification.kataNodes, state, runtimeClasses);

    const t2 = performance.now();
    const plan = view.installPlan();
    const written = await this.writer.applyPlan(plan, signal);
    const nodeRecords = this.syncKataNodes(kc, records, input.now, signal);

    // Where a pass's time goes (a status delay is the wait for the pass before plus this pass's first two).
    const ms = { compute: t1 - t0, status: t2 - t1, rest: performance.now() - t2 };
    log.debug(
      {
        phase: state.reason || 'Installed',
        nodes: classification.kataNodes.nodeCount,
        ready: classification.kataNodes.readyNodeCount,
        pending: plan.pending,
        written: written.length,
        ms,
      },
      'reconciled',
    );
    // More writes to make: another pass at once, with a status write in between. When this pass made or
    // handed on none (the next ones wait for the cache to show earlier ones), the node events that show
    // them wake the controller; a slow poll covers a write the cache never shows.
    if (plan.pending > 0) return { requeueAfterMs: written.length ? 0 : 1000 };
    return soonest(
      selection.noEligibleNodes ? this.ctx.options.eligibilityRecheckMs : undefined,
      // Pod deletions do not wake an install pass: a class waiting for its pods looks again.
      waitingForPods ? this.ctx.options.blockedRecheckMs : undefined,
      plan.recheckAfterMs,
      nodeRecords.promoteInMs,
    );
  }

  private async uninstall(kc: KataConfig, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    if (!hasFinalizer(kc, KATACONFIG_FINALIZER)) return undefined;
    const { client, platform } = this.ctx;
    const rt = runtimeClassFor(kc.spec);
    const nodes = this.ctx.nodes.list();
    // Past the check for pods, the uninstall goes on whatever pods appear: status.uninstallStarted remembers it.
    const started = kc.status?.uninstallStarted === true;

    if (!started) {
      // Until the check for pods passes, kata stays where it is: the records are still the install's.
      const installInput = this.platformInput(kc, nodes, new Set(platform.select(nodes, kc.spec).nodes), new Date());
      const installView = platformView(platform, installInput);
      const nodeRecords = this.syncKataNodes(kc, installView.records(), installInput.now, signal);
      // A rollout in flight finishes first: pulling nodes out mid-update helps nobody.
      const installing = installView.installing();
      if (installing.length) {
        log.info({ installing }, 'KataConfig deleted during a rollout: waiting for it to settle');
        return undefined;
      }
      // Any pod still using the runtime keeps kata in place. The cache wakes us; a live list decides.
      const classes = new Set([...(kc.status?.runtimeClasses ?? []), rt]);
      let blocked: InProgressState | undefined;
      try {
        const live = await client.list(Pods, { signal });
        const using = podsUsing(live.items, classes);
        if (using.length) {
          const used = runtimeClassesInUse(live.items, classes);
          blocked = { status: 'False', reason: 'BlockedByExistingKataPods', message: messages.blocked(used) };
          log.info({ pods: using.slice(0, 20), count: using.length }, 'uninstall blocked by pods using the runtime');
        }
      } catch (e) {
        if (signal.aborted) throw e;
        blocked = { status: 'False', reason: 'BlockedByExistingKataPods', message: messages.listPodsFailed(errorMessage(e)) };
      }
      if (blocked) {
        await this.writeStatus(kc, { inProgress: blocked }, rt, 0);
        return soonest(this.ctx.options.blockedRecheckMs, nodeRecords.promoteInMs);
      }
    }

    const input = this.platformInput(kc, nodes, new Set(), new Date());
    const view = platformView(platform, input);
    const plan = view.uninstallPlan();
    const written = await this.writer.applyPlan(plan, signal);

    const records = view.records();
    const classification = classifyRecords(records, 0, true);
    const state = uninstallCondition(classification, rt);
    const kataNodes = classification.kataNodes;
    const nodesBack = Object.keys(kataNodes).every((k) => k === 'nodeCount' || k === 'readyNodeCount');
    if (plan.pending === 0 && nodesBack && view.uninstallComplete() && state.reason !== 'Failed') {
      await this.cleanUp(kc, input, signal);
      this.ctx.kataMetrics?.reset();
      await this.ctx.events.record(kc, 'Normal', 'Uninstalled', 'Uninstall', eventNotes.uninstalled(rt));
      log.info('uninstalled');
      return undefined;
    }
    // uninstallStarted is the peer pods controller's signal to remove its parts (docs/architecture.md).
    await this.writeStatus(kc, { inProgress: state, kataNodes, uninstallStarted: true }, rt, 0);
    this.ctx.kataMetrics?.observe(kataNodes, state, kc.status?.runtimeClasses ?? []);
    const nodeRecords = this.syncKataNodes(kc, records, input.now, signal);
    if (plan.pending > 0) return { requeueAfterMs: written.length ? 0 : 1000 };
    return soonest(plan.recheckAfterMs, nodeRecords.promoteInMs);
  }

  /**
   * One KataNode per record, its status from the record (docs/kataconfig.md, "KataNode"); those of nodes
   * without a record go. KataNodes only report: no plan reads them back, so their writes go to the lane,
   * beside the worker, and what was planned is remembered until the cache shows it. Answers how soon a
   * lastKnownGood is due, to look again then.
   */
  private syncKataNodes(kc: KataConfig, records: readonly NodeRecord[], now: Date, signal: AbortSignal): { promoteInMs?: number } {
    const known = this.kataNodes(now.getTime());
    const plan = planKataNodes(kc, records, known, now, this.ctx.options.soakMs);
    const knownByName = new Map(known.map((k) => [k.metadata.name ?? '', k]));
    // Status changes and deletions first (they report progress), then new KataNodes (two writes each).
    const writes: [string, KataNodeWrite][] = [
      ...plan.status.map(({ cached, status }): [string, KataNodeWrite] => [cached.metadata.name ?? '', { op: 'status', cached, status }]),
      ...plan.adopt.map(({ metadata }): [string, KataNodeWrite] => {
        const cached = knownByName.get(metadata.name ?? '') ?? { metadata };
        return [metadata.name ?? '', { op: 'status', cached, status: cached.status ?? {}, adopt: metadata.ownerReferences ?? [] }];
      }),
      ...plan.delete.map((name): [string, KataNodeWrite] => [name, { op: 'delete' }]),
      ...plan.create.map(({ node, status }): [string, KataNodeWrite] => [node.metadata.name ?? '', { op: 'create', node, status }]),
    ];
    for (const [name, w] of writes) {
      if (w.op === 'delete') this.writtenKataNodes.forget(name);
      else this.writtenKataNodes.remember(w.op === 'create' ? w.node : w.cached, w.status, now.getTime());
      this.kataNodeLane.submit(name, w, signal);
    }
    return plan.promoteAt !== undefined ? { promoteInMs: Math.max(0, plan.promoteAt - now.getTime()) } : {};
  }

  /** The KataNodes as this controller knows them: the cache, with what it planned and the cache does not show yet. */
  private kataNodes(now: number): KataNode[] {
    return this.writtenKataNodes.overlay(this.ctx.kataNodes.list(), now, (name) => this.kataNodeLane.has(name));
  }

  /** One KataNode write, made by the lane. */
  private async writeKataNode(name: string, w: KataNodeWrite, signal: AbortSignal): Promise<void> {
    const { client, metrics } = this.ctx;
    if (w.op === 'delete') {
      await client.delete(KataNodes, name, { signal });
      return;
    }
    let target: KataNode | undefined;
    if (w.op === 'create') {
      try {
        target = await client.create(KataNodes, w.node, { signal });
      } catch (e) {
        // Made before (a retry, or a cache behind our own create): its status is what is left to write.
        if (!isAlreadyExists(e)) throw e;
        target = await client.find(KataNodes, name, undefined, signal);
        if (!target) throw e;
      }
    } else {
      target = w.cached;
      if (w.adopt) await client.patch(KataNodes, name, { metadata: { ownerReferences: w.adopt } }, { signal });
    }
    // Written over the status the planner last saw (a create has none): only a real change goes out.
    if (await applyStatusIfChanged(client, KataNodes, target, w.status, kataNodeStatusShare, metrics))
      this.writtenKataNodes.remember(target, w.status, Date.now());
  }

  /** Every KataNode goes: the uninstall is over, or no KataConfig exists. */
  private async deleteKataNodes(signal: AbortSignal): Promise<string[]> {
    // Nothing planned earlier may make or write one after this: pending writes are dropped, those in flight end.
    await this.kataNodeLane.clear();
    const names = this.kataNodes(Date.now()).map((k) => k.metadata.name ?? '');
    for (const name of names) this.writtenKataNodes.forget(name);
    await mapLimit(names, WRITES_IN_FLIGHT, (name) => this.ctx.client.delete(KataNodes, name, { signal }));
    return names;
  }

  /** What the platform is given for one pass: its caches, the nodes, the selection and the time. */
  private platformInput(
    kc: KataConfig | undefined,
    nodes: readonly Node[],
    selected: ReadonlySet<string>,
    now: Date,
  ): PlatformInput<unknown> {
    const soakMs = this.ctx.options.soakMs;
    const extraHandlers = this.extraHandlers;
    return { observed: this.ctx.observe(), nodes, ...(kc ? { kataConfig: kc } : {}), selected, now, soakMs, extraHandlers };
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
    const input = this.platformInput(undefined, this.ctx.nodes.list(), new Set(), new Date());
    const removed = (await this.writer.applyPlan(this.ctx.platform.leftoversPlan(input), signal)).filter((w) => w.startsWith('delete '));
    for (const rc of this.ctx.runtimeClasses.list()) {
      if (!owned(rc)) continue;
      await this.ctx.client.delete(RuntimeClasses, rc.metadata.name ?? '', { signal });
      removed.push(`delete runtimeclass/${rc.metadata.name}`);
    }
    for (const name of await this.deleteKataNodes(signal)) removed.push(`delete katanode/${name}`);
    if (removed.length)
      log.info({ removed: removed.map((r) => r.slice('delete '.length)) }, 'no KataConfig exists: removed what the last one left behind');
  }

  /** Everything osc created goes, then the finalizer: nothing may be left behind. */
  private async cleanUp(kc: KataConfig, input: PlatformInput<unknown>, signal: AbortSignal): Promise<void> {
    const { client } = this.ctx;
    for (const rc of kc.status?.runtimeClasses ?? []) await this.runtimeClassWrites.deleteOwn(rc, signal);
    // Straight to the API server (a 404 is fine): a cache that lags behind a recent create must not
    // make us leave an object behind.
    await this.writer.applyPlan(this.ctx.platform.cleanupPlan(input), signal);
    await this.deleteKataNodes(signal);
    await removeFinalizer(client, KataConfigs, kc, KATACONFIG_FINALIZER);
  }

  /** Applies this controller's status fields (and only those), with an event for a phase change. */
  private async writeStatus(kc: KataConfig, change: KataStatusChange, rt: string, readyNodes: number): Promise<void> {
    const prev = inProgressOf(kc);
    const state = change.inProgress;
    const status = kataStatusApply(kc.status, change);
    const written = await applyStatusIfChanged(this.ctx.client, KataConfigs, kc, status, kataConfigStatusShare, this.ctx.metrics);
    if (!written) return;
    const ev = phaseEvent(
      prev
        ? { status: prev.status as 'True' | 'False', reason: (prev.reason ?? '') as InProgressState['reason'], message: prev.message ?? '' }
        : undefined,
      state,
      kc,
      rt,
      readyNodes,
    );
    if (ev) await this.ctx.events.record(written, ev.type, ev.reason, 'Reconcile', ev.note);
  }
}

/** The soonest of several "look again after" delays, if any. */
function soonest(...delays: (number | undefined)[]): ReconcileResult | undefined {
  const given = delays.filter((d): d is number => d !== undefined);
  return given.length ? { requeueAfterMs: Math.min(...given) } : undefined;
}
