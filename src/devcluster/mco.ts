import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { LOG_LEVELS, MC_ROLE_LABEL, MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../api/names.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
  type PoolCondition,
} from '../api/openshift.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import { selectorMatches, selectorString } from '../kube/labels.ts';
import { type Node, Nodes } from '../kube/resources.ts';
import { type KubeObject, keyOf, type OwnerReference } from '../kube/types.ts';
import { mapLimit } from '../runtime/concurrency.ts';
import { rfc3339 } from '../runtime/conditions.ts';
import { Controller } from '../runtime/controller.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import { conditionTaints, readyCondition } from './nodes.ts';

/**
 * A simulator of the Machine Config Operator (docs/devcluster.md), faithful to what a client can observe:
 *
 * - render controller: each pool's configuration is rendered from the MachineConfigs its
 *   machineConfigSelector selects into a MachineConfig named `rendered-<pool>-<md5 of the merged config>`
 *   (owned by the pool), and written to the pool's `spec.configuration`;
 * - container runtime config controller: each ContainerRuntimeConfig becomes a generated MachineConfig
 *   `99-<pool>-generated-containerruntime` for every pool it selects, and reports `Success`;
 * - node controller: nodes belong to the pool whose nodeSelector matches (a custom pool wins over
 *   `worker`, `master` wins over `worker`); nodes whose `desiredConfig` differs from the pool's target are
 *   handed the target at most `maxUnavailable` at a time; the pool's status (counts, configuration,
 *   `Updated`/`Updating`/`Degraded`/`NodeDegraded`/`RenderDegraded`) is recomputed on every change;
 * - machine config daemon, one per node: on a new `desiredConfig` the node goes `state=Working`, is cordoned
 *   and NotReady while it "reboots" (`rebootMs`), then `currentConfig=desiredConfig`, `state=Done`,
 *   uncordoned and Ready;
 * - garbage collection that the (absent) kube-controller-manager would do: rendered configs of deleted pools
 *   and generated configs of deleted ContainerRuntimeConfigs are removed.
 *
 * Everything is event-driven from informers; the only timers are the reboots.
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
export { selectorMatches, selectorString };

export const FAIL_NEXT_UPDATE_ANNOTATION = 'osc.dev/fail-next-update';

/** The reason written when the failure annotation's value is empty. */
export const DEFAULT_FAILURE_REASON = 'simulated failure: osc.dev/fail-next-update is set on this node';

export const GENERATED_BY_CONTROLLER_ANNOTATION = 'machineconfiguration.openshift.io/generated-by-controller-version';
export const RELEASE_IMAGE_VERSION_ANNOTATION = 'machineconfiguration.openshift.io/release-image-version';
/** The version the simulated controller stamps on what it generates. */
export const CONTROLLER_VERSION = '4f7b2c1e8d3a9b6c5e0f1a2b3c4d5e6f7a8b9c0d';
export const RELEASE_VERSION = '4.19.0';
export const IGNITION_SPEC_VERSION = '3.4.0';
export const DEFAULT_OS_IMAGE_URL =
  'quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2f2a6a1e9c9f5bb8d4c8e0d3a1b7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9';

const MCO_API_VERSION = 'machineconfiguration.openshift.io/v1';
const CONTROLLER_MANAGER = 'machine-config-controller';
const DAEMON_MANAGER = 'machine-config-daemon';

export type NodeState = 'Done' | 'Working' | 'Degraded' | 'Unreconcilable';

/** Whether a label selector selects a set of labels. An absent selector selects nothing, `{}` everything. */
// ---------------------------------------------------------------------------------------------------------
// Node and pool arithmetic, as the real node controller does it (pkg/controller/node/status.go).

const annotation = (n: Node, key: string): string | undefined => n.metadata.annotations?.[key];
export const nodeState = (n: Node): string | undefined => annotation(n, MCO_STATE);

/** Ready condition True, network available, and not cordoned. */
export function isNodeReady(n: Node): boolean {
  for (const c of n.status?.conditions ?? []) {
    if (c.type === 'Ready' && c.status !== 'True') return false;
    if (c.type === 'NetworkUnavailable' && c.status !== 'False') return false;
  }
  return !n.spec?.unschedulable;
}

/** The daemon finished: current == desired and state Done. */
export function isNodeDone(n: Node): boolean {
  const cur = annotation(n, MCO_CURRENT_CONFIG);
  return cur !== undefined && cur === annotation(n, MCO_DESIRED_CONFIG) && nodeState(n) === 'Done';
}

export const isNodeDoneAt = (n: Node, target: string | undefined): boolean =>
  !!target && isNodeDone(n) && annotation(n, MCO_CURRENT_CONFIG) === target;

const isNodeFailing = (n: Node): boolean => nodeState(n) === 'Degraded' || nodeState(n) === 'Unreconcilable';

/** Not ready, or updating; a node whose daemon failed does not count (it may be retargeted). */
export function isNodeUnavailable(n: Node): boolean {
  if (!isNodeReady(n)) return true;
  if (isNodeDone(n)) return false;
  return !isNodeFailing(n);
}

/** maxUnavailable: an int or a percentage of the pool's nodes (rounded down), at least 1; default 1. */
export function maxUnavailableOf(pool: MachineConfigPool, nodeCount: number): number {
  const v = pool.spec?.maxUnavailable;
  let n = 1;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string') {
    const pct = /^(\d+)%$/.exec(v.trim());
    if (pct) n = Math.floor((nodeCount * Number(pct[1])) / 100);
    else if (/^\d+$/.test(v.trim())) n = Number(v);
  }
  return Math.max(1, Math.floor(n));
}

// ---------------------------------------------------------------------------------------------------------
// Rendering.

type MCSpec = MachineConfig['spec'];
interface ConfigPart {
  name: string;
  labels: Record<string, string>;
  spec: MCSpec;
}

interface Ignition {
  ignition?: { version?: string };
  storage?: { files?: { path: string }[]; [k: string]: unknown };
  systemd?: { units?: { name: string }[] };
  passwd?: { users?: { name: string; sshAuthorizedKeys?: string[] }[] };
  [k: string]: unknown;
}

/** Merges MachineConfigs (in name order) the way the MCO does: later files/units win, lists are unions. */
export function mergeMachineConfigs(parts: readonly { spec: MCSpec }[]): MCSpec {
  const files = new Map<string, unknown>();
  const units = new Map<string, unknown>();
  const users = new Map<string, { name: string; sshAuthorizedKeys?: string[] }>();
  const extraIgnition: Record<string, unknown> = {};
  const kargs: string[] = [];
  const extensions: string[] = [];
  let fips = false;
  let kernelType = '';
  let osImageURL = '';
  let extensionsImage = '';
  for (const { spec } of parts) {
    const cfg = (spec?.config ?? {}) as Ignition;
    for (const f of cfg.storage?.files ?? []) files.set(f.path, f);
    for (const u of cfg.systemd?.units ?? []) units.set(u.name, u);
    for (const u of cfg.passwd?.users ?? []) {
      const prev = users.get(u.name);
      const keys = [...(prev?.sshAuthorizedKeys ?? [])];
      for (const k of u.sshAuthorizedKeys ?? []) if (!keys.includes(k)) keys.push(k);
      users.set(u.name, { ...prev, ...u, sshAuthorizedKeys: keys });
    }
    for (const [k, v] of Object.entries(cfg)) if (!['ignition', 'storage', 'systemd', 'passwd'].includes(k)) extraIgnition[k] = v;
    for (const a of spec?.kernelArguments ?? []) if (!kargs.includes(a)) kargs.push(a);
    for (const e of spec?.extensions ?? []) if (!extensions.includes(e)) extensions.push(e);
    if (spec?.fips) fips = true;
    if (spec?.kernelType) kernelType = spec.kernelType;
    if (spec?.osImageURL) osImageURL = spec.osImageURL;
    if (typeof spec?.baseOSExtensionsContainerImage === 'string' && spec.baseOSExtensionsContainerImage)
      extensionsImage = spec.baseOSExtensionsContainerImage;
  }
  const config: Ignition = { ignition: { version: IGNITION_SPEC_VERSION }, ...extraIgnition };
  if (users.size) config.passwd = { users: [...users.values()] };
  if (files.size) config.storage = { files: [...files.values()] as { path: string }[] };
  if (units.size) config.systemd = { units: [...units.values()] as { name: string }[] };
  return {
    baseOSExtensionsContainerImage: extensionsImage || `${DEFAULT_OS_IMAGE_URL.split('@')[0]}@sha256:${'e'.repeat(64)}`,
    config,
    extensions,
    fips,
    kernelArguments: kargs,
    kernelType: kernelType || 'default',
    osImageURL: osImageURL || DEFAULT_OS_IMAGE_URL,
  };
}

/** JSON with sorted keys: the same content always hashes the same. */
export function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export const renderedName = (pool: string, merged: MCSpec): string =>
  `rendered-${pool}-${createHash('md5').update(canonicalJSON(merged)).digest('hex')}`;

const ownerOf = (o: KubeObject, kind: string): OwnerReference | undefined => o.metadata.ownerReferences?.find((r) => r.kind === kind);
const isRenderedMC = (mc: MachineConfig): boolean => !!ownerOf(mc, 'MachineConfigPool') && (mc.metadata.name ?? '').startsWith('rendered-');
const isGeneratedCrcMC = (mc: MachineConfig): boolean => !!ownerOf(mc, 'ContainerRuntimeConfig');

const toSnake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const tomlValue = (v: unknown) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(String(v)));

/** The CRI-O drop-in files a ContainerRuntimeConfig turns into (one per setting, as the real controller). */
export function containerRuntimeConfigSpec(crc: ContainerRuntimeConfig): MCSpec {
  const settings = crc.spec?.containerRuntimeConfig ?? {};
  const files = Object.keys(settings)
    .sort()
    .filter((k) => settings[k] !== undefined && settings[k] !== null && settings[k] !== '')
    .map((k) => {
      const body =
        k === 'overlaySize'
          ? `[storage]\n  [storage.options]\n    size = ${tomlValue(settings[k])}\n`
          : `[crio]\n  [crio.runtime]\n    ${toSnake(k)} = ${tomlValue(settings[k])}\n`;
      const path =
        k === 'overlaySize' ? '/etc/containers/storage.conf.d/01-ctrcfg-overlaySize.conf' : `/etc/crio/crio.conf.d/01-ctrcfg-${k}`;
      return {
        path,
        mode: 0o644,
        overwrite: true,
        contents: { source: `data:text/plain;charset=utf-8;base64,${Buffer.from(body).toString('base64')}` },
      };
    });
  return {
    config: { ignition: { version: IGNITION_SPEC_VERSION }, storage: { files } },
    extensions: [],
    fips: false,
    kernelArguments: [],
    kernelType: '',
    osImageURL: '',
  };
}

export function validateContainerRuntimeConfig(crc: ContainerRuntimeConfig): string | undefined {
  const cfg = crc.spec?.containerRuntimeConfig;
  if (!cfg) return 'containerRuntimeConfig is empty';
  if (cfg.logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(cfg.logLevel))
    return `invalid LogLevel ${JSON.stringify(cfg.logLevel)}, must be one of ${LOG_LEVELS.join(', ')}`;
  if (cfg.pidsLimit !== undefined && cfg.pidsLimit !== -1 && cfg.pidsLimit < 20)
    return `invalid PidsLimit ${cfg.pidsLimit}, must be at least 20`;
  return undefined;
}

interface GeneratedMC extends ConfigPart {
  crc: string;
  crcUid: string;
  pool: string;
}

// ---------------------------------------------------------------------------------------------------------

const rvOf = (o: KubeObject): number => Number(o.metadata.resourceVersion ?? 0) || 0;

/**
 * The freshest copy of each object known here: the informer's, or the answer to our own last write if
 * that is newer. Deciding on it (not on a lagging cache) is what keeps `maxUnavailable` honest.
 */
class LatestView<T extends KubeObject> {
  private readonly objs = new Map<string, T>();
  private readonly gone = new Map<string, number>();
  constructor(informer: Informer<T>) {
    informer.addEventHandler({ add: (o) => this.observe(o), update: (_, o) => this.observe(o), delete: (o) => this.forget(o) });
  }
  observe(o: T | undefined): void {
    if (!o?.metadata) return;
    const key = keyOf(o);
    const rv = rvOf(o);
    const cur = this.objs.get(key);
    if (cur && rvOf(cur) >= rv) return;
    const tomb = this.gone.get(key);
    if (tomb !== undefined) {
      if (rv <= tomb) return;
      this.gone.delete(key);
    }
    this.objs.set(key, o);
  }
  forget(o: T): void {
    const key = keyOf(o);
    const cur = this.objs.get(key);
    this.objs.delete(key);
    this.gone.set(key, Math.max(rvOf(o), cur ? rvOf(cur) : 0));
  }
  get(key: string): T | undefined {
    return this.objs.get(key);
  }
  values(): IterableIterator<T> {
    return this.objs.values();
  }
}

interface NodeOp {
  kind: 'reboot' | 'fail';
  started: number;
  target: string;
}

interface Membership {
  pool?: string;
  error?: string;
  conflicting?: string[];
}

export interface MachineConfigOperatorOptions {
  client: KubeClient;
  log?: Logger;
  /** How long a node stays cordoned and NotReady while it reboots into a new config; default 2000ms. */
  rebootMs?: number;
  /** Shared informers; created (and run) here when absent. */
  informers?: {
    nodes?: Informer<Node>;
    pools?: Informer<MachineConfigPool>;
    machineConfigs?: Informer<MachineConfig>;
    containerRuntimeConfigs?: Informer<ContainerRuntimeConfig>;
  };
  /** Concurrent node reboots/updates the daemons may run at once (across pools); default 64. */
  daemonWorkers?: number;
}

export class MachineConfigOperator {
  /** Reboot duration; may be changed while running (applies to the next reboots). */
  rebootMs: number;
  readonly nodes: Informer<Node>;
  readonly pools: Informer<MachineConfigPool>;
  readonly machineConfigs: Informer<MachineConfig>;
  readonly containerRuntimeConfigs: Informer<ContainerRuntimeConfig>;
  /** Counters for tests and benchmarks. */
  readonly stats = { poolReconciles: 0, nodeReconciles: 0, renders: 0, nodeWrites: 0, poolStatusWrites: 0 };

  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly nodeView: LatestView<Node>;
  private readonly poolView: LatestView<MachineConfigPool>;
  private readonly mcView: LatestView<MachineConfig>;
  private readonly controller: Controller;
  private readonly daemon: Controller;

  private readonly membership = new Map<string, Membership>();
  private readonly members = new Map<string, Set<string>>();
  private readonly sortedMembers = new Map<string, string[]>();
  /** pool -> nodes that match it but cannot join (several custom pools). */
  private readonly conflicts = new Map<string, Set<string>>();
  private readonly ops = new Map<string, NodeOp>();

  /** Bumped whenever something that rendering reads changes. */
  private renderEpoch = 0;
  private generatedCache: { epoch: number; list: GeneratedMC[] } | undefined;
  private readonly renderCache = new Map<string, { key: string; result: RenderResult }>();

  constructor(opts: MachineConfigOperatorOptions) {
    this.client = opts.client;
    this.log = (opts.log ?? silentLogger()).child({ component: 'mco-simulator' });
    this.rebootMs = opts.rebootMs ?? 2000;
    const inf = opts.informers ?? {};
    this.nodes = inf.nodes ?? new Informer(this.client, Nodes, { log: this.log });
    this.pools = inf.pools ?? new Informer(this.client, MachineConfigPools, { log: this.log });
    this.machineConfigs = inf.machineConfigs ?? new Informer(this.client, MachineConfigs, { log: this.log });
    this.containerRuntimeConfigs = inf.containerRuntimeConfigs ?? new Informer(this.client, ContainerRuntimeConfigs, { log: this.log });
    // Views first: the handlers below read them.
    this.nodeView = new LatestView(this.nodes);
    this.poolView = new LatestView(this.pools);
    this.mcView = new LatestView(this.machineConfigs);
    this.machineConfigs.addIndex('owner', (mc) => (mc.metadata.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`));

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
          if (kind === 'pool') await this.reconcilePool(name, ctx.signal);
          else if (kind === 'crc') await this.reconcileContainerRuntimeConfig(name, ctx.signal);
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
        reconcile: (key, ctx) => this.reconcileNode(key, ctx.signal),
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
  }

  /** Runs the informers (idempotent if shared) and, once they have synced, the controllers. */
  async start(signal: AbortSignal): Promise<void> {
    const informers = [this.nodes, this.pools, this.machineConfigs, this.containerRuntimeConfigs] as Informer<KubeObject>[];
    for (const i of informers) void i.run(signal);
    await Promise.all(informers.map((i) => i.waitForSync(signal)));
    this.recomputeMembership();
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
    void this.controller.run(signal);
    void this.daemon.run(signal);
    this.log.info({ rebootMs: this.rebootMs }, 'machine config operator simulator running');
  }

  /** The pool a node belongs to (undefined: none, e.g. it matches two custom pools). */
  poolOf(node: string): string | undefined {
    return this.membership.get(node)?.pool;
  }

  /** The names of the nodes in a pool, in update order (by name, numbers compared as numbers). */
  nodesOf(pool: string): string[] {
    let sorted = this.sortedMembers.get(pool);
    if (!sorted) {
      sorted = [...(this.members.get(pool) ?? [])].sort(nodeOrder);
      this.sortedMembers.set(pool, sorted);
    }
    return sorted;
  }

  // ---- event routing ----------------------------------------------------------------------------------

  private enqueuePool(name: string | undefined): void {
    if (name) this.controller.queue.add(`pool:${name}`);
  }

  private onNode(n: Node): void {
    const name = n.metadata.name ?? '';
    this.assign(name, this.nodeView.get(name) ?? n);
    this.daemon.queue.add(name);
  }

  private onNodeDeleted(n: Node): void {
    const name = n.metadata.name ?? '';
    this.assign(name, undefined);
    this.daemon.queue.add(name);
  }

  /** Recomputes one node's pool; queues every pool whose view of the node may have changed. */
  private assign(name: string, node: Node | undefined): void {
    const before = this.membership.get(name);
    const after: Membership = node ? this.primaryPool(node) : {};
    if (before?.pool === after.pool && isDeepStrictEqual(before?.conflicting, after.conflicting) && node) {
      this.membership.set(name, after);
      this.enqueuePool(after.pool);
      for (const p of after.conflicting ?? []) this.enqueuePool(p);
      return;
    }
    if (before?.pool) this.sortedMembers.delete(before.pool);
    if (after.pool) this.sortedMembers.delete(after.pool);
    if (before?.pool) this.members.get(before.pool)?.delete(name);
    for (const p of before?.conflicting ?? []) this.conflicts.get(p)?.delete(name);
    if (node) this.membership.set(name, after);
    else this.membership.delete(name);
    if (after.pool) setAdd(this.members, after.pool, name);
    for (const p of after.conflicting ?? []) setAdd(this.conflicts, p, name);
    for (const p of new Set([before?.pool, after.pool, ...(before?.conflicting ?? []), ...(after.conflicting ?? [])])) this.enqueuePool(p);
  }

  private recomputeMembership(): void {
    for (const n of this.nodeView.values()) this.assign(n.metadata.name ?? '', n);
  }

  /** The real MCO's GetPoolsForNode: custom pools win over worker; master wins over worker. */
  private primaryPool(node: Node): Membership {
    let master = false;
    let worker = false;
    const custom: string[] = [];
    for (const p of this.poolView.values()) {
      if (!selectorMatches(p.spec?.nodeSelector, node.metadata.labels)) continue;
      const name = p.metadata.name ?? '';
      if (name === 'master') master = true;
      else if (name === 'worker') worker = true;
      else custom.push(name);
    }
    custom.sort(byName);
    const nodeName = node.metadata.name;
    if (custom.length > 1)
      return { error: `node ${nodeName} belongs to ${custom.length} custom roles, cannot proceed with this Node`, conflicting: custom };
    if (custom.length === 1) {
      if (master) return { error: `node ${nodeName} has both master role and custom role ${custom[0]}`, conflicting: custom };
      return { pool: custom[0] };
    }
    if (master) return { pool: 'master' };
    if (worker) return { pool: 'worker' };
    return {};
  }

  private onPoolChanged(old: MachineConfigPool | undefined, cur: MachineConfigPool | undefined): void {
    const name = (cur ?? old)?.metadata.name;
    this.enqueuePool(name);
    const changed = (f: (p: MachineConfigPool) => unknown) => !old || !cur || !isDeepStrictEqual(f(old), f(cur));
    if (changed((p) => p.spec?.nodeSelector)) this.recomputeMembership();
    if (changed((p) => p.metadata.labels)) {
      // Which pools a ContainerRuntimeConfig selects may have changed.
      this.renderEpoch++;
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
    this.renderEpoch++;
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
  }

  private onContainerRuntimeConfig(c: ContainerRuntimeConfig): void {
    this.renderEpoch++;
    this.controller.queue.add(`crc:${c.metadata.name}`);
    for (const p of this.poolView.values()) this.enqueuePool(p.metadata.name);
  }

  // ---- render -----------------------------------------------------------------------------------------

  /** The MachineConfigs the ContainerRuntimeConfig controller generates (or will), per pool. */
  private generatedMachineConfigs(): GeneratedMC[] {
    if (this.generatedCache?.epoch === this.renderEpoch) return this.generatedCache.list;
    const crcs = this.containerRuntimeConfigs
      .list()
      .filter((c) => !c.metadata.deletionTimestamp && validateContainerRuntimeConfig(c) === undefined)
      .sort(
        (a, b) =>
          byName(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') || byName(a.metadata.name, b.metadata.name),
      );
    const list: GeneratedMC[] = [];
    const pools = [...this.poolView.values()].sort((a, b) => byName(a.metadata.name, b.metadata.name));
    for (const pool of pools) {
      const poolName = pool.metadata.name ?? '';
      const selecting = crcs.filter((c) => selectorMatches(c.spec?.machineConfigPoolSelector, pool.metadata.labels));
      selecting.forEach((c, i) => {
        list.push({
          name: `99-${poolName}-generated-containerruntime${i ? `-${i}` : ''}`,
          labels: { [MC_ROLE_LABEL]: poolName },
          spec: containerRuntimeConfigSpec(c),
          crc: c.metadata.name ?? '',
          crcUid: c.metadata.uid ?? '',
          pool: poolName,
        });
      });
    }
    this.generatedCache = { epoch: this.renderEpoch, list };
    return list;
  }

  private render(pool: MachineConfigPool): RenderResult {
    const name = pool.metadata.name ?? '';
    const key = `${this.renderEpoch}|${JSON.stringify(pool.spec?.machineConfigSelector ?? null)}`;
    const cached = this.renderCache.get(name);
    if (cached?.key === key) return cached.result;
    this.stats.renders++;
    const sel = pool.spec?.machineConfigSelector;
    const parts: ConfigPart[] = [];
    for (const mc of this.mcView.values()) {
      if (mc.metadata.deletionTimestamp || isRenderedMC(mc) || isGeneratedCrcMC(mc)) continue;
      if (selectorMatches(sel, mc.metadata.labels))
        parts.push({ name: mc.metadata.name ?? '', labels: mc.metadata.labels ?? {}, spec: mc.spec });
    }
    for (const g of this.generatedMachineConfigs()) if (selectorMatches(sel, g.labels)) parts.push(g);
    let result: RenderResult;
    if (parts.length === 0) {
      result = { error: `no MachineConfigs found matching selector ${selectorString(sel)}` };
    } else {
      parts.sort((a, b) => byName(a.name, b.name));
      const spec = mergeMachineConfigs(parts);
      result = {
        name: renderedName(name, spec),
        spec,
        source: parts.map((p) => ({ apiVersion: MCO_API_VERSION, kind: 'MachineConfig', name: p.name })),
      };
    }
    this.renderCache.set(name, { key, result });
    return result;
  }

  // ---- pool (render + node controller) ----------------------------------------------------------------

  private async reconcilePool(name: string, signal: AbortSignal): Promise<void> {
    this.stats.poolReconciles++;
    let pool = this.poolView.get(name);
    if (!pool) {
      // What the garbage collector does for the pool's rendered configs.
      for (const mc of this.machineConfigs.byIndex('owner', `MachineConfigPool/${name}`)) {
        if (isRenderedMC(mc)) await this.client.delete(MachineConfigs, mc.metadata.name ?? '', { signal });
      }
      this.renderCache.delete(name);
      return;
    }
    if (pool.metadata.deletionTimestamp) return;

    const rendered = this.render(pool);
    if ('name' in rendered) {
      await this.ensureRenderedMachineConfig(pool, rendered, signal);
      const conf = pool.spec?.configuration;
      if (conf?.name !== rendered.name || !isDeepStrictEqual(conf?.source ?? [], rendered.source)) {
        this.log.info({ pool: name, config: rendered.name }, 'rendered a new configuration');
        const patched = await this.client.patch(
          MachineConfigPools,
          name,
          { spec: { configuration: { name: rendered.name, source: rendered.source } } },
          { signal, fieldManager: CONTROLLER_MANAGER },
        );
        this.poolView.observe(patched);
        pool = this.poolView.get(name) ?? patched;
      }
    }

    const target = pool.spec?.configuration?.name;
    const memberNames = this.nodesOf(name);
    if (target) {
      await this.initializeNodes(memberNames, target, signal);
      if (!pool.spec?.paused) await this.updateCandidates(pool, memberNames, target, signal);
    } else if (!('error' in rendered)) {
      return;
    }
    await this.writePoolStatus(pool, memberNames, 'error' in rendered ? rendered.error : undefined, signal);
  }

  private async ensureRenderedMachineConfig(pool: MachineConfigPool, r: RenderOk, signal: AbortSignal): Promise<void> {
    const owner: OwnerReference = {
      apiVersion: MCO_API_VERSION,
      kind: 'MachineConfigPool',
      name: pool.metadata.name ?? '',
      uid: pool.metadata.uid ?? '',
      controller: true,
      blockOwnerDeletion: true,
    };
    const existing = this.mcView.get(r.name);
    if (existing) {
      if (ownerOf(existing, 'MachineConfigPool')?.uid !== owner.uid) {
        this.mcView.observe(
          await this.client.patch(
            MachineConfigs,
            r.name,
            { metadata: { ownerReferences: [owner] } },
            { signal, fieldManager: CONTROLLER_MANAGER },
          ),
        );
      }
      return;
    }
    try {
      const created = await this.client.create(
        MachineConfigs,
        {
          metadata: {
            name: r.name,
            annotations: {
              [GENERATED_BY_CONTROLLER_ANNOTATION]: CONTROLLER_VERSION,
              [RELEASE_IMAGE_VERSION_ANNOTATION]: RELEASE_VERSION,
            },
            ownerReferences: [owner],
          },
          spec: r.spec,
        },
        { signal, fieldManager: CONTROLLER_MANAGER },
      );
      this.mcView.observe(created);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }

  /** A node that joined without MCO annotations booted the pool's target config (served by the MCS). */
  private async initializeNodes(memberNames: string[], target: string, signal: AbortSignal): Promise<void> {
    const fresh = memberNames.filter((n) => {
      const node = this.nodeView.get(n);
      return node && annotation(node, MCO_CURRENT_CONFIG) === undefined;
    });
    await mapLimit(fresh, 16, (n) =>
      this.patchNode(
        n,
        {
          metadata: { annotations: { [MCO_CURRENT_CONFIG]: target, [MCO_DESIRED_CONFIG]: target, [MCO_STATE]: 'Done', [MCO_REASON]: '' } },
        },
        CONTROLLER_MANAGER,
        signal,
      ),
    );
  }

  /** Hands the target to as many nodes as maxUnavailable allows (getCandidateMachines). */
  private async updateCandidates(pool: MachineConfigPool, memberNames: string[], target: string, signal: AbortSignal): Promise<void> {
    const nodes = memberNames.map((n) => this.nodeView.get(n)).filter((n): n is Node => !!n);
    const maxUnavailable = maxUnavailableOf(pool, nodes.length);
    const unavailable = nodes.filter(isNodeUnavailable).length;
    if (unavailable >= maxUnavailable) return;
    let capacity = maxUnavailable - unavailable;
    let failingThisConfig = 0;
    const candidates: Node[] = [];
    for (const n of nodes) {
      if (annotation(n, MCO_DESIRED_CONFIG) === target) {
        if (isNodeFailing(n)) failingThisConfig++;
        continue;
      }
      candidates.push(n);
    }
    if (failingThisConfig >= capacity || candidates.length === 0) return;
    capacity -= failingThisConfig;
    // Nodes that are unavailable anyway go first: retargeting them costs no availability.
    candidates.sort(
      (a, b) => Number(isNodeUnavailable(b)) - Number(isNodeUnavailable(a)) || nodeOrder(a.metadata.name ?? '', b.metadata.name ?? ''),
    );
    const chosen = candidates.slice(0, capacity);
    await mapLimit(chosen, 16, (n) => {
      this.log.info({ pool: pool.metadata.name, node: n.metadata.name, config: target }, 'setting node desired config');
      return this.patchNode(
        n.metadata.name ?? '',
        { metadata: { annotations: { [MCO_DESIRED_CONFIG]: target } } },
        CONTROLLER_MANAGER,
        signal,
      );
    });
  }

  private async writePoolStatus(
    pool: MachineConfigPool,
    memberNames: string[],
    renderError: string | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const name = pool.metadata.name ?? '';
    const status = this.computePoolStatus(pool, memberNames, renderError);
    if (isDeepStrictEqual(normalize(pool.status), normalize(status))) return;
    this.stats.poolStatusWrites++;
    try {
      const patched = await this.client.patch(
        MachineConfigPools,
        name,
        { status },
        { subresource: 'status', signal, fieldManager: CONTROLLER_MANAGER },
      );
      this.poolView.observe(patched);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** The real node controller's calculateStatus. */
  computePoolStatus(pool: MachineConfigPool, memberNames: string[], renderError?: string): NonNullable<MachineConfigPool['status']> {
    const nodes = memberNames.map((n) => this.nodeView.get(n)).filter((n): n is Node => !!n);
    const target = pool.spec?.configuration?.name;
    const updated = nodes.filter((n) => isNodeDoneAt(n, target));
    const ready = updated.filter(isNodeReady);
    const unavailable = nodes.filter(isNodeUnavailable);
    const degraded = nodes.filter(isNodeFailing);
    const machineCount = nodes.length;
    const prev = pool.status;
    const now = rfc3339(new Date());
    const conditions: PoolCondition[] = [];
    const set = (type: string, status: 'True' | 'False', reason = '', message = '') => {
      const old = prev?.conditions?.find((c) => c.type === type);
      const lastTransitionTime = old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : now;
      conditions.push({ type, status, reason, message, lastTransitionTime });
    };

    set(
      'RenderDegraded',
      renderError ? 'True' : 'False',
      renderError ? 'RenderFailed' : '',
      renderError ? `Failed to render configuration for pool ${pool.metadata.name}: ${renderError}` : '',
    );
    const conflicted = [...(this.conflicts.get(pool.metadata.name ?? '') ?? [])].sort(nodeOrder);
    if (degraded.length > 0) {
      const reasons = degraded.map((n) => `Node ${n.metadata.name} is reporting: ${JSON.stringify(annotation(n, MCO_REASON) ?? '')}`);
      set('NodeDegraded', 'True', `${degraded.length} nodes are reporting degraded status on sync`, reasons.join(', '));
    } else if (conflicted.length > 0) {
      const msgs = conflicted.map((n) => this.membership.get(n)?.error ?? '');
      set('NodeDegraded', 'True', `${conflicted.length} nodes cannot join the pool`, msgs.join(', '));
    } else {
      set('NodeDegraded', 'False');
    }
    set('Degraded', degraded.length > 0 || conflicted.length > 0 || renderError ? 'True' : 'False');

    const allUpdated = !!target && updated.length === machineCount && ready.length === machineCount && unavailable.length === 0;
    let configuration = prev?.configuration;
    if (allUpdated) {
      set('Updated', 'True', '', `All nodes are updated with MachineConfig ${target}`);
      set('Updating', 'False');
      configuration = { name: target, source: pool.spec?.configuration?.source ?? [] };
    } else {
      set('Updated', 'False');
      if (pool.spec?.paused) set('Updating', 'False', '', `Pool is paused; will not update to MachineConfig ${target ?? ''}`);
      else if (target) set('Updating', 'True', '', `All nodes are updating to MachineConfig ${target}`);
      else set('Updating', 'False');
    }
    return {
      observedGeneration: pool.metadata.generation,
      ...(configuration ? { configuration } : {}),
      machineCount,
      updatedMachineCount: updated.length,
      readyMachineCount: ready.length,
      unavailableMachineCount: unavailable.length,
      degradedMachineCount: degraded.length,
      conditions,
    };
  }

  // ---- container runtime config controller ------------------------------------------------------------

  private async reconcileContainerRuntimeConfig(name: string, signal: AbortSignal): Promise<void> {
    const crc = this.containerRuntimeConfigs.get(name);
    const owned = this.machineConfigs.byIndex('owner', `ContainerRuntimeConfig/${name}`);
    const wanted = crc && !crc.metadata.deletionTimestamp ? this.generatedMachineConfigs().filter((g) => g.crc === name) : [];
    for (const g of wanted) {
      const mc: MachineConfig = {
        metadata: {
          name: g.name,
          labels: g.labels,
          annotations: { [GENERATED_BY_CONTROLLER_ANNOTATION]: CONTROLLER_VERSION },
          ownerReferences: [
            {
              apiVersion: MCO_API_VERSION,
              kind: 'ContainerRuntimeConfig',
              name: g.crc,
              uid: g.crcUid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: g.spec,
      };
      const existing = this.mcView.get(g.name);
      if (!existing) {
        try {
          this.mcView.observe(await this.client.create(MachineConfigs, mc, { signal, fieldManager: CONTROLLER_MANAGER }));
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
      } else if (
        !isDeepStrictEqual(normalize(existing.spec), normalize(mc.spec)) ||
        !isDeepStrictEqual(existing.metadata.labels ?? {}, mc.metadata.labels) ||
        ownerOf(existing, 'ContainerRuntimeConfig')?.uid !== g.crcUid
      ) {
        const updated = await this.client.update(
          MachineConfigs,
          { ...mc, metadata: { ...existing.metadata, labels: mc.metadata.labels, ownerReferences: mc.metadata.ownerReferences } },
          { signal, fieldManager: CONTROLLER_MANAGER },
        );
        this.mcView.observe(updated);
      }
    }
    const wantedNames = new Set(wanted.map((g) => g.name));
    for (const mc of owned) {
      if (!wantedNames.has(mc.metadata.name ?? '')) await this.client.delete(MachineConfigs, mc.metadata.name ?? '', { signal });
    }
    if (!crc || crc.metadata.deletionTimestamp) return;

    const invalid = validateContainerRuntimeConfig(crc);
    const selectsPool = [...this.poolView.values()].some((p) => selectorMatches(crc.spec?.machineConfigPoolSelector, p.metadata.labels));
    const error = invalid ?? (selectsPool ? undefined : `could not find any MachineConfigPool set for ContainerRuntimeConfig ${name}`);
    const old = crc.status?.conditions?.[0];
    const cond: PoolCondition = error
      ? { type: 'Failure', status: 'False', reason: '', message: `Error: ${error}`, lastTransitionTime: '' }
      : { type: 'Success', status: 'True', reason: '', message: 'Success', lastTransitionTime: '' };
    cond.lastTransitionTime =
      old && old.type === cond.type && old.message === cond.message && old.lastTransitionTime
        ? old.lastTransitionTime
        : rfc3339(new Date());
    const status = { observedGeneration: crc.metadata.generation, conditions: [cond] };
    if (isDeepStrictEqual(normalize(crc.status), normalize(status))) return;
    try {
      await this.client.patch(
        ContainerRuntimeConfigs,
        name,
        { status },
        { subresource: 'status', signal, fieldManager: CONTROLLER_MANAGER },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  // ---- machine config daemon --------------------------------------------------------------------------

  private async reconcileNode(name: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number } | undefined> {
    this.stats.nodeReconciles++;
    const node = this.nodeView.get(name);
    if (!node || node.metadata.deletionTimestamp) {
      this.ops.delete(name);
      return undefined;
    }
    const current = annotation(node, MCO_CURRENT_CONFIG);
    const desired = annotation(node, MCO_DESIRED_CONFIG);
    const state = nodeState(node);
    const failure = annotation(node, FAIL_NEXT_UPDATE_ANNOTATION);
    if (!desired) return undefined;
    const now = Date.now();
    let op = this.ops.get(name);

    // An update whose failure was injected: Working (cordoned) for a while, then Degraded.
    if (op?.kind === 'fail') {
      if (failure === undefined) {
        this.ops.delete(name);
        op = undefined;
      } else {
        const left = op.started + this.rebootMs - now;
        if (left > 0) return { requeueAfterMs: left };
        this.ops.delete(name);
        const reason = failure || DEFAULT_FAILURE_REASON;
        this.log.info({ node: name, reason }, 'node update failed (injected)');
        await this.patchNode(
          name,
          { metadata: { annotations: { [MCO_STATE]: 'Degraded', [MCO_REASON]: reason } } },
          DAEMON_MANAGER,
          signal,
        );
        return undefined;
      }
    }

    // A reboot in progress: NotReady until it is over, then on the new config.
    if (op?.kind === 'reboot') {
      const left = op.started + this.rebootMs - now;
      if (left > 0) return { requeueAfterMs: left };
      await this.setReady(name, true, signal);
      await this.patchNode(
        name,
        {
          metadata: { annotations: { [MCO_CURRENT_CONFIG]: op.target, [MCO_STATE]: 'Done', [MCO_REASON]: '' } },
          spec: { unschedulable: null, taints: conditionTaints(this.nodeView.get(name), { cordoned: false, notReady: false }) },
        },
        DAEMON_MANAGER,
        signal,
      );
      this.ops.delete(name);
      this.log.info({ node: name, config: op.target }, 'node updated');
      return undefined;
    }

    if (desired === current) {
      if (state === 'Done') return undefined;
      if (state === 'Working') {
        // Found mid-update with no record of it (the simulator restarted): finish the reboot.
        return this.startReboot(name, desired, signal);
      }
      // Degraded or unknown, but already on the desired config: nothing to apply.
      await this.patchNode(
        name,
        {
          metadata: { annotations: { [MCO_STATE]: 'Done', [MCO_REASON]: '' } },
          spec: { unschedulable: null, taints: conditionTaints(node, { cordoned: false, notReady: false }) },
        },
        DAEMON_MANAGER,
        signal,
      );
      return undefined;
    }

    if (failure !== undefined) {
      if (state === 'Degraded') {
        const reason = failure || DEFAULT_FAILURE_REASON;
        if (annotation(node, MCO_REASON) !== reason)
          await this.patchNode(name, { metadata: { annotations: { [MCO_REASON]: reason } } }, DAEMON_MANAGER, signal);
        return undefined;
      }
      await this.patchNode(
        name,
        {
          metadata: { annotations: { [MCO_STATE]: 'Working', [MCO_REASON]: '' } },
          spec: { unschedulable: true, taints: conditionTaints(node, { cordoned: true, notReady: false }) },
        },
        DAEMON_MANAGER,
        signal,
      );
      this.ops.set(name, { kind: 'fail', started: Date.now(), target: desired });
      return { requeueAfterMs: this.rebootMs };
    }
    return this.startReboot(name, desired, signal);
  }

  private async startReboot(name: string, target: string, signal: AbortSignal): Promise<{ requeueAfterMs: number }> {
    this.log.info({ node: name, config: target, rebootMs: this.rebootMs }, 'node updating: cordoned, rebooting');
    await this.patchNode(
      name,
      {
        metadata: { annotations: { [MCO_STATE]: 'Working', [MCO_REASON]: '' } },
        spec: { unschedulable: true, taints: conditionTaints(this.nodeView.get(name), { cordoned: true, notReady: true }) },
      },
      DAEMON_MANAGER,
      signal,
    );
    await this.setReady(name, false, signal);
    this.ops.set(name, { kind: 'reboot', started: Date.now(), target });
    return { requeueAfterMs: this.rebootMs };
  }

  private async setReady(name: string, ready: boolean, signal: AbortSignal): Promise<void> {
    try {
      const patched = await this.client.patch(
        Nodes,
        name,
        { status: { conditions: [readyCondition(ready)] } },
        { type: 'strategic', subresource: 'status', signal, fieldManager: 'kubelet' },
      );
      this.stats.nodeWrites++;
      this.nodeView.observe(patched);
      this.enqueuePool(this.poolOf(name));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async patchNode(name: string, patch: unknown, fieldManager: string, signal: AbortSignal): Promise<void> {
    try {
      const patched = await this.client.patch(Nodes, name, patch, { signal, fieldManager });
      this.stats.nodeWrites++;
      this.nodeView.observe(patched);
      this.enqueuePool(this.poolOf(name));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

interface RenderOk {
  name: string;
  spec: MCSpec;
  source: { apiVersion: string; kind: string; name: string }[];
}
type RenderResult = RenderOk | { error: string };

const nodeOrder = new Intl.Collator('en', { numeric: true }).compare;

function byName(a: string | undefined, b: string | undefined): number {
  const x = a ?? '';
  const y = b ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}

function setAdd(m: Map<string, Set<string>>, k: string, v: string): void {
  let s = m.get(k);
  if (!s) {
    s = new Set();
    m.set(k, s);
  }
  s.add(v);
}

function normalize(v: unknown): unknown {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}
