import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
} from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import { type Node, Nodes, type Pod, Pods } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { Controller } from '../../runtime/controller.ts';
import { Informer } from '../../runtime/informer.ts';
import { silentLogger } from '../../runtime/log.ts';
import type { NodeJournal } from '../journal.ts';
import { syncContainerRuntimeConfig } from './crc-controller.ts';
import { MachineConfigDaemons } from './daemon.ts';
import { PoolMembership } from './membership.ts';
import { PoolController } from './pool-controller.ts';
import { isRenderedMC, ownerOf } from './render.ts';
import { LatestView } from './view.ts';

/**
 * A simulator of the Machine Config Operator, faithful to what a client can observe:
 *
 * - render controller (pool-controller.ts, render.ts): each pool's configuration rendered from the
 *   MachineConfigs it selects, written to the pool's `spec.configuration`;
 * - container runtime config controller (crc-controller.ts);
 * - node controller (pool-controller.ts, membership.ts, pool-status.ts): which pool each node is in; a new
 *   target is first reported on the pool (`Updating`), then handed to at most `maxUnavailable` nodes at a
 *   time; the pool's status recomputed on every change;
 * - machine config daemon, one per node (daemon.ts, drain.ts): picks the new config up, cordons and
 *   drains the node, reboots it, reports Done;
 * - what the garbage collector does for the MCO's own objects: rendered configs of deleted pools and
 *   generated configs of deleted ContainerRuntimeConfigs go.
 *
 * Everything is event-driven from informers; the only timers are the daemons' (pickup, reboot, drain retries).
 */

export interface MachineConfigOperatorOptions {
  client: KubeClient;
  log?: Logger;
  /** How long a node stays NotReady while it reboots into a new config; default 2000ms. */
  rebootMs?: number;
  /** How long after a node is handed a new config its daemon acts on it; default 500ms. */
  pickupDelayMs?: number;
  /** How long a drain waits to ask again for an eviction a disruption budget refused; default 5000ms. */
  drainRetryMs?: number;
  /** Shared informers; created (and run) here when absent. */
  informers?: {
    nodes?: Informer<Node>;
    pools?: Informer<MachineConfigPool>;
    machineConfigs?: Informer<MachineConfig>;
    containerRuntimeConfigs?: Informer<ContainerRuntimeConfig>;
    pods?: Informer<Pod>;
  };
  /** Concurrent node reboots/updates the daemons may run at once (across pools); default 64. */
  daemonWorkers?: number;
  /** Where a reboot's journal lines go (the nodes' host side); none when absent. */
  journal?: NodeJournal;
}

/** What the daemons read of a pod: enough to drain, little memory at thousands of pods. */
function podForDrain(p: Pod): Pod {
  const { name, namespace, uid, deletionTimestamp, ownerReferences, annotations, resourceVersion } = p.metadata;
  return {
    metadata: { name, namespace, uid, deletionTimestamp, ownerReferences, annotations, resourceVersion },
    spec: { nodeName: p.spec?.nodeName, containers: [] },
  };
}

export class MachineConfigOperator {
  /** Reboot duration; may be changed while running (applies to the next reboots). */
  rebootMs: number;
  /** Daemon pickup delay; may be changed while running. */
  pickupDelayMs: number;
  /** Wait between refused evictions; may be changed while running. */
  drainRetryMs: number;
  readonly nodes: Informer<Node>;
  readonly pools: Informer<MachineConfigPool>;
  readonly machineConfigs: Informer<MachineConfig>;
  readonly containerRuntimeConfigs: Informer<ContainerRuntimeConfig>;
  readonly pods: Informer<Pod>;
  readonly stats = {
    poolReconciles: 0,
    nodeReconciles: 0,
    renders: 0,
    nodeWrites: 0,
    poolStatusWrites: 0,
    evictions: 0,
    evictionsRefused: 0,
  };

  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly nodeView: LatestView<Node>;
  private readonly poolView: LatestView<MachineConfigPool>;
  private readonly mcView: LatestView<MachineConfig>;
  private readonly controller: Controller;
  private readonly daemon: Controller;
  private readonly daemons: MachineConfigDaemons;
  private readonly membership = new PoolMembership();

  private readonly poolController: PoolController;

  constructor(opts: MachineConfigOperatorOptions) {
    this.client = opts.client;
    this.log = (opts.log ?? silentLogger()).child({ component: 'mco-simulator' });
    this.rebootMs = opts.rebootMs ?? 2000;
    this.pickupDelayMs = opts.pickupDelayMs ?? 500;
    this.drainRetryMs = opts.drainRetryMs ?? 5000;
    const inf = opts.informers ?? {};
    const log = this.log;
    this.nodes = inf.nodes ?? new Informer(this.client, Nodes, { log });
    this.pools = inf.pools ?? new Informer(this.client, MachineConfigPools, { log });
    this.machineConfigs = inf.machineConfigs ?? new Informer(this.client, MachineConfigs, { log });
    this.containerRuntimeConfigs = inf.containerRuntimeConfigs ?? new Informer(this.client, ContainerRuntimeConfigs, { log });
    this.pods = inf.pods ?? new Informer(this.client, Pods, { log, transform: podForDrain });
    // Views first: the handlers below read them.
    this.nodeView = new LatestView(this.nodes);
    this.poolView = new LatestView(this.pools);
    this.mcView = new LatestView(this.machineConfigs);
    this.machineConfigs.addIndex('owner', (mc) => (mc.metadata.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`));
    this.pods.addIndex('node', (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));

    this.poolController = new PoolController({
      client: this.client,
      log: this.log,
      nodeView: this.nodeView,
      poolView: this.poolView,
      mcView: this.mcView,
      machineConfigs: this.machineConfigs,
      containerRuntimeConfigs: this.containerRuntimeConfigs,
      membership: this.membership,
      nodeWritten: (n) => this.nodeWritten(n),
      stats: this.stats,
    });
    this.daemons = new MachineConfigDaemons({
      client: this.client,
      log: this.log,
      timing: () => ({ pickupDelayMs: this.pickupDelayMs, rebootMs: this.rebootMs, drainRetryMs: this.drainRetryMs }),
      node: (name) => this.nodeView.get(name),
      podsOn: (name) => this.pods.byIndex('node', name),
      nodeWritten: (n) => this.nodeWritten(n),
      stats: this.stats,
      ...(opts.journal ? { journal: opts.journal } : {}),
    });
    this.controller = new Controller(
      {
        name: 'mco-simulator',
        workers: 4,
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [],
        reconcile: async (key, ctx) => {
          const i = key.indexOf(':');
          const kind = key.slice(0, i);
          const name = key.slice(i + 1);
          if (kind === 'pool') await this.poolController.sync(name, ctx.signal);
          else if (kind === 'crc') await this.syncContainerRuntimeConfig(name, ctx.signal);
          return undefined;
        },
      },
      this.log,
    );
    this.daemon = new Controller(
      {
        name: 'mcd-simulator',
        workers: opts.daemonWorkers ?? 64,
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [],
        reconcile: (key, ctx) => {
          this.stats.nodeReconciles++;
          return this.daemons.sync(key, ctx.signal);
        },
      },
      this.log,
    );

    this.nodes.addEventHandler({
      add: (n) => this.onNode(n),
      update: (_, n) => this.onNode(n),
      delete: (n) => this.onNodeDeleted(n),
    });
    this.pools.addEventHandler({
      add: (p) => this.onPoolChanged(undefined, p),
      update: (o, p) => this.onPoolChanged(o, p),
      delete: (p) => this.onPoolChanged(p, undefined),
    });
    this.machineConfigs.addEventHandler({
      add: (mc) => this.onMachineConfig(mc),
      update: (o, mc) => {
        this.onMachineConfig(o);
        this.onMachineConfig(mc);
      },
      delete: (mc) => this.onMachineConfig(mc),
    });
    this.containerRuntimeConfigs.addEventHandler({
      add: (c) => this.onContainerRuntimeConfig(c),
      update: (_, c) => this.onContainerRuntimeConfig(c),
      delete: (c) => this.onContainerRuntimeConfig(c),
    });
    // A draining daemon waits for its node's pods to go.
    const onPod = (p: Pod) => {
      const node = p.spec?.nodeName;
      if (node && this.daemons.isDraining(node)) this.daemon.queue.add(node);
    };
    this.pods.addEventHandler({ add: onPod, update: (_, p) => onPod(p), delete: onPod });
  }

  /** Runs the informers (idempotent if shared) and, once they have synced, the controllers. */
  async start(signal: AbortSignal): Promise<void> {
    const informers = [this.nodes, this.pools, this.machineConfigs, this.containerRuntimeConfigs, this.pods] as Informer<KubeObject>[];
    for (const i of informers) void i.run(signal);
    await Promise.all(informers.map((i) => i.waitForSync(signal)));
    this.recomputeMembership();
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
    void this.controller.run(signal);
    void this.daemon.run(signal);
    this.log.info(
      { rebootMs: this.rebootMs, pickupDelayMs: this.pickupDelayMs, drainRetryMs: this.drainRetryMs },
      'machine config operator simulator running',
    );
  }

  /** The pool a node belongs to (undefined: none, e.g. it matches two custom pools). */
  poolOf(node: string): string | undefined {
    return this.membership.poolOf(node);
  }

  /** The names of the nodes in a pool, in update order (by name, numbers compared as numbers). */
  nodesOf(pool: string): string[] {
    return this.membership.nodesOf(pool);
  }

  // ---- event routing ----------------------------------------------------------------------------------

  private enqueuePool(name: string | undefined): void {
    if (name) this.controller.queue.add(`pool:${name}`);
  }

  private nodeWritten(n: Node): void {
    this.nodeView.observe(n);
    this.enqueuePool(this.poolOf(objectName(n)));
  }

  private onNode(n: Node): void {
    const name = objectName(n);
    for (const p of this.membership.assign(name, this.nodeView.get(name) ?? n, this.poolView.values())) this.enqueuePool(p);
    this.daemon.queue.add(name);
  }

  private onNodeDeleted(n: Node): void {
    const name = objectName(n);
    for (const p of this.membership.assign(name, undefined, this.poolView.values())) this.enqueuePool(p);
    this.daemon.queue.add(name);
  }

  private recomputeMembership(): void {
    for (const n of this.nodeView.values())
      for (const p of this.membership.assign(objectName(n), n, this.poolView.values())) this.enqueuePool(p);
  }

  private onPoolChanged(old: MachineConfigPool | undefined, cur: MachineConfigPool | undefined): void {
    const name = (cur ?? old)?.metadata.name;
    this.enqueuePool(name);
    const changed = (f: (p: MachineConfigPool) => unknown) => !old || !cur || !isDeepStrictEqual(f(old), f(cur));
    if (changed((p) => p.spec?.nodeSelector)) this.recomputeMembership();
    if (changed((p) => p.metadata.labels)) {
      // Which pools a ContainerRuntimeConfig selects may have changed.
      this.poolController.invalidateRender();
      for (const c of this.containerRuntimeConfigs.list()) this.controller.queue.add(`crc:${c.metadata.name}`);
      for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
    }
  }

  private onMachineConfig(mc: MachineConfig): void {
    const pool = ownerOf(mc, 'MachineConfigPool');
    if (pool && isRenderedMC(mc)) {
      this.enqueuePool(pool.name);
      return;
    }
    const crc = ownerOf(mc, 'ContainerRuntimeConfig');
    if (crc) {
      this.controller.queue.add(`crc:${crc.name}`);
      return;
    }
    this.poolController.invalidateRender();
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
  }

  private onContainerRuntimeConfig(c: ContainerRuntimeConfig): void {
    this.poolController.invalidateRender();
    this.controller.queue.add(`crc:${c.metadata.name}`);
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
  }

  private syncContainerRuntimeConfig(name: string, signal: AbortSignal): Promise<void> {
    return syncContainerRuntimeConfig(
      {
        client: this.client,
        containerRuntimeConfigs: this.containerRuntimeConfigs,
        machineConfigs: this.machineConfigs,
        mcView: this.mcView,
        pools: () => this.poolView.values(),
        generated: () => this.poolController.generated(),
      },
      name,
      signal,
    );
  }
}
