import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { activeKataConfig, type KataConfig, KataConfigs, kataConfigOwner, messages } from '../../api/kataconfig.ts';
import {
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  KATA_NODE_ROLE_LABEL,
  KATA_POOL,
  KATACONFIG_FINALIZER,
  type LogLevel,
  MASTER_ROLE_LABEL,
  POOL_LABEL_PREFIX,
} from '../../api/names.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
} from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage, isAlreadyExists } from '../../kube/errors.ts';
import { type Node, Nodes, type Pod, Pods, type RuntimeClass, RuntimeClasses } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import {
  desiredCrioConfig,
  desiredExtensionMachineConfig,
  desiredKataPool,
  isKataPoolConfig,
  kataPoolName,
  nodeMcoView,
  poolSettled,
  poolTargetHasKata,
} from '../../platform/machineconfig.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { Expectations } from '../../runtime/expectations.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { RuntimeMetrics } from '../../runtime/metrics.ts';
import { applyStatusIfChanged } from '../../runtime/status.ts';
import type { KataMetrics } from './metrics.ts';
import {
  type Classification,
  classifyNodes,
  done,
  type InProgressState,
  inProgressOf,
  installCondition,
  isCompactCluster,
  type KataStatusChange,
  kataConfigStatusShare,
  kataStatusApply,
  podsUsing,
  runtimeClassesFor,
  runtimeClassesInUse,
  runtimeClassFor,
  selectNodes,
  uninstallCondition,
} from './state.ts';

/** Node label changes per reconcile pass (see labelNodes). */
const LABELS_PER_PASS = 64;

export interface RuntimeClassOverhead {
  memory: string;
  cpu: string;
}

export interface KataConfigOptions {
  /** Pod overhead per runtime class, for RuntimeClasses osc creates (never applied to existing ones). */
  overhead: Record<string, RuntimeClassOverhead>;
  /** How often a blocked uninstall looks for kata pods again (pod deletions also wake it). */
  blockedRecheckMs: number;
  /** How often to look again for NFD-labelled nodes when none is eligible (node label changes also wake it). */
  eligibilityRecheckMs: number;
}

export const defaultKataConfigOptions: KataConfigOptions = {
  overhead: { kata: { memory: '350Mi', cpu: '250m' }, 'kata-remote': { memory: '120Mi', cpu: '250m' } },
  blockedRecheckMs: 15_000,
  eligibilityRecheckMs: 30_000,
};

/** What the reconciler reads and writes through; injected so that it can be built over any caches. */
export interface KataConfigContext {
  client: KubeClient;
  kataConfigs: Informer<KataConfig>;
  nodes: Informer<Node>;
  pools: Informer<MachineConfigPool>;
  machineConfigs: Informer<MachineConfig>;
  crioConfigs: Informer<ContainerRuntimeConfig>;
  runtimeClasses: Informer<RuntimeClass>;
  pods: Informer<Pod>;
  events: EventRecorder;
  metrics?: RuntimeMetrics;
  kataMetrics?: KataMetrics;
  options: KataConfigOptions;
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
      note: `${rt} is installed on ${readyNodes} node(s); RuntimeClass "${rt}" is available`,
    };
  }
  if (prev && prev.reason === next.reason && next.reason !== 'Failed') return undefined;
  const type = next.reason === 'Failed' || next.reason === 'BlockedByExistingKataPods' ? ('Warning' as const) : ('Normal' as const);
  return { type, reason: next.reason || 'Progressing', note: next.message || `KataConfig ${kc.metadata.name}` };
}

/**
 * Reconciles the (single) KataConfig: reads everything from the informer caches, computes the desired state
 * and the status with pure functions (state.ts, platform/machineconfig.ts), then writes only what differs.
 * Every step is idempotent, so a restart at any point converges to the same end state.
 */
export class KataConfigReconciler {
  private readonly ctx: KataConfigContext;
  /** Node label writes the node cache does not show yet (see labelNodes). */
  private readonly labelWrites = new Expectations<boolean>();

  constructor(ctx: KataConfigContext) {
    this.ctx = ctx;
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

    const nodes = this.ctx.nodes.list();
    const compact = isCompactCluster(nodes);
    const poolName = kataPoolName(compact);
    const selection = selectNodes(nodes, kc.spec, compact);
    const logLevel: LogLevel = kc.spec?.logLevel ?? 'info';
    const wantCrio = logLevel !== 'info';
    const owner = ownerOf(kc);

    // The status comes first: it is computed from the desired selection and the MCO's view of the nodes,
    // not from our own writes below, and on a large cluster it must not wait for them.
    const classification = classifyNodes({
      nodes,
      selected: new Set(selection.nodes),
      compact,
      kataPool: this.ctx.pools.get(poolName),
      basePool: this.ctx.pools.get(compact ? 'master' : 'worker'),
      wantCrioConfig: wantCrio,
    });
    const initial = !(kc.status?.runtimeClasses ?? []).includes(rt);
    const state = installCondition(classification, selection, rt, initial);
    let runtimeClasses = kc.status?.runtimeClasses ?? [];
    const wanted = runtimeClassesFor(kc.spec);
    if (state === done) {
      // RuntimeClasses come last: before they exist, no pod can ask for kata and land on a node without it.
      for (const name of wanted) {
        await this.ensureRuntimeClass(name, compact, owner, signal);
        if (!runtimeClasses.includes(name)) runtimeClasses = [...runtimeClasses, name];
      }
    }
    // A RuntimeClass no longer offered (peer pods turned off) goes once no pod uses it.
    for (const name of runtimeClasses.filter((n) => !wanted.includes(n))) {
      if (podsUsing(this.ctx.pods.list(), new Set([name])).length) continue;
      await this.deleteOwnRuntimeClass(name, signal);
      runtimeClasses = runtimeClasses.filter((n) => n !== name);
    }
    await this.writeStatus(
      kc,
      { inProgress: state, kataNodes: classification.kataNodes, runtimeClasses },
      rt,
      classification.kataNodes.readyNodeCount,
    );
    this.ctx.kataMetrics?.observe(classification.kataNodes, state, runtimeClasses);

    // Our MachineConfig exists before the pool, so that the pool's first rendering already has kata.
    await this.ensureMachineConfig(desiredExtensionMachineConfig(poolName, kc.metadata.name ?? '', owner), signal);
    let labelsPending = 0;
    if (!compact) {
      await this.ensurePool(desiredKataPool(), signal);
      labelsPending = await this.labelNodes(new Set(selection.nodes), signal);
    }
    if (wantCrio) await this.ensureCrioConfig(desiredCrioConfig(poolName, logLevel, owner), signal);
    else await this.deleteIfPresent(this.ctx.crioConfigs, ContainerRuntimeConfigs, CRIO_CONFIG, signal);

    log.debug({ phase: state.reason || 'Installed', ...classification.kataNodes, labelsPending }, 'reconciled');
    // More nodes to label: another pass at once, with a status write in between.
    if (labelsPending > 0) return { requeueAfterMs: 0 };
    if (selection.noEligibleNodes) return { requeueAfterMs: this.ctx.options.eligibilityRecheckMs };
    return undefined;
  }

  private async uninstall(kc: KataConfig, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    if (!hasFinalizer(kc, KATACONFIG_FINALIZER)) return undefined;
    const { client } = this.ctx;
    const rt = runtimeClassFor(kc.spec);
    const nodes = this.ctx.nodes.list();
    const compact = isCompactCluster(nodes);
    const poolName = kataPoolName(compact);
    // Past the check for pods, the uninstall goes on whatever pods appear: status.uninstallStarted remembers it.
    const started = kc.status?.uninstallStarted === true;
    const wantCrio = (kc.spec?.logLevel ?? 'info') !== 'info';

    if (!started) {
      // A rollout in flight finishes first: pulling nodes out of a pool mid-update helps nobody.
      const labelled = new Set(
        nodes.filter((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined).map((n) => n.metadata.name ?? ''),
      );
      const inFlight = classifyNodes({
        nodes,
        selected: compact ? new Set(selectNodes(nodes, kc.spec, true).nodes) : labelled,
        compact,
        kataPool: this.ctx.pools.get(poolName),
        basePool: this.ctx.pools.get(compact ? 'master' : 'worker'),
        wantCrioConfig: wantCrio,
      });
      if (inFlight.kataNodes.installing?.length) {
        log.info({ installing: inFlight.kataNodes.installing }, 'KataConfig deleted during a rollout: waiting for it to settle');
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
        return { requeueAfterMs: this.ctx.options.blockedRecheckMs };
      }
    }

    // Nodes leave the kata pool (one reboot each, as the pool rolls them back to the worker config).
    const labelsPending = compact ? 0 : await this.labelNodes(new Set(), signal);
    await this.deleteIfPresent(this.ctx.crioConfigs, ContainerRuntimeConfigs, CRIO_CONFIG, signal);
    // On a compact cluster the masters stay in their pool: removing our MachineConfig rolls them back.
    if (compact) await this.deleteIfPresent(this.ctx.machineConfigs, MachineConfigs, EXTENSION_MACHINE_CONFIG, signal);

    const basePool = this.ctx.pools.get(compact ? 'master' : 'worker');
    const classification: Classification = classifyNodes({
      nodes,
      selected: new Set(),
      compact,
      kataPool: this.ctx.pools.get(poolName),
      basePool,
      wantCrioConfig: false,
    });
    const state = uninstallCondition(classification, rt);
    const kataNodes = classification.kataNodes;
    const nodesBack = Object.keys(kataNodes).every((k) => k === 'nodeCount' || k === 'readyNodeCount');
    const baseClean = !compact || (!poolTargetHasKata(basePool, false) && !poolTargetHasKata(basePool, true) && poolSettled(basePool));
    if (labelsPending === 0 && nodesBack && baseClean && state.reason !== 'Failed') {
      await this.cleanUp(kc, signal);
      this.ctx.kataMetrics?.reset();
      await this.ctx.events.record(kc, 'Normal', 'Uninstalled', 'Uninstall', `${rt} was removed from the cluster`);
      log.info('uninstalled');
      return undefined;
    }
    // uninstallStarted is the peer pods controller's signal to remove its parts (docs/architecture.md).
    await this.writeStatus(kc, { inProgress: state, kataNodes, uninstallStarted: true }, rt, 0);
    this.ctx.kataMetrics?.observe(kataNodes, state, kc.status?.runtimeClasses ?? []);
    return labelsPending > 0 ? { requeueAfterMs: 0 } : undefined;
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
    const nodes = this.ctx.nodes.list();
    const compact = isCompactCluster(nodes);
    const labelsPending = compact ? 0 : await this.labelNodes(new Set(), signal);
    const removed: string[] = [];
    if (owned(this.ctx.crioConfigs.get(CRIO_CONFIG))) {
      await this.ctx.client.delete(ContainerRuntimeConfigs, CRIO_CONFIG, { signal });
      removed.push(`containerruntimeconfig/${CRIO_CONFIG}`);
    }
    if (owned(this.ctx.machineConfigs.get(EXTENSION_MACHINE_CONFIG))) {
      await this.ctx.client.delete(MachineConfigs, EXTENSION_MACHINE_CONFIG, { signal });
      removed.push(`machineconfig/${EXTENSION_MACHINE_CONFIG}`);
    }
    for (const rc of this.ctx.runtimeClasses.list()) {
      if (!owned(rc)) continue;
      await this.ctx.client.delete(RuntimeClasses, rc.metadata.name ?? '', { signal });
      removed.push(`runtimeclass/${rc.metadata.name}`);
    }
    const pool = this.ctx.pools.get(KATA_POOL);
    const nodesBack =
      labelsPending === 0 &&
      !nodes.some((n) => isKataPoolConfig(nodeMcoView(n).currentConfig) || n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined);
    if (!compact && pool && nodesBack && pool.metadata.labels?.[`${POOL_LABEL_PREFIX}${KATA_POOL}`] !== undefined) {
      await this.ctx.client.delete(MachineConfigPools, KATA_POOL, { signal });
      removed.push(`machineconfigpool/${KATA_POOL}`);
    }
    if (removed.length) log.info({ removed }, 'no KataConfig exists: removed what the last one left behind');
  }

  /** Everything osc created goes, then the finalizer: nothing may be left behind. */
  private async cleanUp(kc: KataConfig, signal: AbortSignal): Promise<void> {
    const { client } = this.ctx;
    for (const rc of kc.status?.runtimeClasses ?? []) await this.deleteOwnRuntimeClass(rc, signal);
    // Straight to the API server (a 404 is fine): a cache that lags behind a recent create must not
    // make us leave an object behind.
    await client.delete(ContainerRuntimeConfigs, CRIO_CONFIG, { signal });
    await client.delete(MachineConfigs, EXTENSION_MACHINE_CONFIG, { signal });
    await client.delete(MachineConfigPools, KATA_POOL, { signal });
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

  private async ensureMachineConfig(desired: MachineConfig, signal: AbortSignal): Promise<void> {
    const existing = this.ctx.machineConfigs.get(desired.metadata.name ?? '');
    if (!existing) return this.create(MachineConfigs, desired, signal);
    const labelsMatch = Object.entries(desired.metadata.labels ?? {}).every(([k, v]) => existing.metadata.labels?.[k] === v);
    const ownersMatch = isDeepStrictEqual(existing.metadata.ownerReferences, desired.metadata.ownerReferences);
    if (labelsMatch && ownersMatch && isDeepStrictEqual(existing.spec.extensions, desired.spec.extensions)) return;
    await this.ctx.client.patch(
      MachineConfigs,
      desired.metadata.name ?? '',
      { metadata: { labels: desired.metadata.labels, ownerReferences: desired.metadata.ownerReferences }, spec: desired.spec },
      { signal },
    );
  }

  private async ensurePool(desired: MachineConfigPool, signal: AbortSignal): Promise<void> {
    const existing = this.ctx.pools.get(desired.metadata.name ?? '');
    if (!existing) return this.create(MachineConfigPools, desired, signal);
    if (
      isDeepStrictEqual(existing.spec.machineConfigSelector, desired.spec.machineConfigSelector) &&
      isDeepStrictEqual(existing.spec.nodeSelector, desired.spec.nodeSelector)
    )
      return;
    // Replaced whole, not merged: a merge patch would keep a label an administrator added to the selector,
    // and the pool would stay wrong while every reconcile patched it again.
    await this.ctx.client.patch(
      MachineConfigPools,
      desired.metadata.name ?? '',
      [
        { op: 'add', path: '/spec/machineConfigSelector', value: desired.spec.machineConfigSelector },
        { op: 'add', path: '/spec/nodeSelector', value: desired.spec.nodeSelector },
      ],
      { type: 'json', signal },
    );
  }

  private async ensureCrioConfig(desired: ContainerRuntimeConfig, signal: AbortSignal): Promise<void> {
    const existing = this.ctx.crioConfigs.get(CRIO_CONFIG);
    if (!existing) return this.create(ContainerRuntimeConfigs, desired, signal);
    if (
      isDeepStrictEqual(existing.spec, desired.spec) &&
      isDeepStrictEqual(existing.metadata.ownerReferences, desired.metadata.ownerReferences)
    )
      return;
    await this.ctx.client.patch(
      ContainerRuntimeConfigs,
      CRIO_CONFIG,
      { metadata: { ownerReferences: desired.metadata.ownerReferences }, spec: desired.spec },
      { signal },
    );
  }

  private async ensureRuntimeClass(rt: string, compact: boolean, owner: OwnerReference, signal: AbortSignal): Promise<void> {
    // Never overwrite an existing RuntimeClass: an administrator may have tuned its overhead. One an
    // earlier KataConfig made is adopted: its owner reference names the KataConfig in effect.
    const existing = this.ctx.runtimeClasses.get(rt);
    if (existing) {
      const refs = existing.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.kind === 'KataConfig') || refs.some((r) => r.kind === 'KataConfig' && r.uid === owner.uid)) return;
      const ownerReferences = [...refs.filter((r) => r.kind !== 'KataConfig'), owner];
      await this.ctx.client.patch(RuntimeClasses, rt, { metadata: { ownerReferences } }, { signal });
      return;
    }
    const overhead = this.ctx.options.overhead[rt];
    const rc: RuntimeClass = {
      metadata: { name: rt, ownerReferences: [owner] },
      handler: rt,
      ...(overhead ? { overhead: { podFixed: { memory: overhead.memory, cpu: overhead.cpu } } } : {}),
      scheduling: { nodeSelector: compact ? { [MASTER_ROLE_LABEL]: '' } : { [KATA_NODE_ROLE_LABEL]: '' } },
    };
    await this.create(RuntimeClasses, rc, signal);
  }

  /** Deletes a RuntimeClass osc made; one someone else made is not ours to delete. */
  private async deleteOwnRuntimeClass(name: string, signal: AbortSignal): Promise<void> {
    const existing = this.ctx.runtimeClasses.get(name) ?? (await this.ctx.client.find(RuntimeClasses, name, undefined, signal));
    if (existing?.metadata.ownerReferences?.some((o) => o.kind === 'KataConfig'))
      await this.ctx.client.delete(RuntimeClasses, name, { signal });
  }

  /**
   * Adds the kata-oc role label to the wanted nodes and removes it from all others: at most
   * LABELS_PER_PASS nodes per call, 16 patches at a time, so that on a large cluster status writes are not
   * held up behind a thousand patches. Answers how many nodes still need a change.
   */
  private async labelNodes(wanted: ReadonlySet<string>, signal: AbortSignal): Promise<number> {
    const changes = this.ctx.nodes.list().filter((n) => {
      const name = n.metadata.name ?? '';
      const labelled = n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined;
      // A node patched by the previous pass whose watch event has not arrived yet is not patched twice.
      return !n.metadata.deletionTimestamp && labelled !== wanted.has(name) && !this.labelWrites.awaiting(name, labelled);
    });
    const now = changes.slice(0, LABELS_PER_PASS);
    await mapLimit(now, 16, async (node) => {
      const name = node.metadata.name ?? '';
      const label = wanted.has(name);
      await this.ctx.client.patch(Nodes, name, { metadata: { labels: { [KATA_NODE_ROLE_LABEL]: label ? '' : null } } }, { signal });
      this.labelWrites.expect(name, label);
    });
    return changes.length - now.length;
  }

  private async create<T extends { metadata: { name?: string } }>(
    rt: Parameters<KubeClient['create']>[0],
    obj: T,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await this.ctx.client.create(rt, obj as never, { signal });
    } catch (e) {
      // The cache may lag behind our own earlier create.
      if (!isAlreadyExists(e)) throw e;
    }
  }

  /** Deletes what the cache shows; cheap to call on every reconcile. */
  private async deleteIfPresent(
    cache: { get(name: string): unknown },
    rt: Parameters<KubeClient['delete']>[0],
    name: string,
    signal: AbortSignal,
  ): Promise<void> {
    if (!cache.get(name)) return;
    await this.ctx.client.delete(rt, name, { signal });
  }
}
