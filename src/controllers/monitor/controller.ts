/**
 * The monitor controller: keeps the kata monitor (desired.ts) deployed while kata is installed, heals its
 * objects when they are edited or deleted, removes them when the KataConfig goes; and serves the five
 * kata_* gauges (metrics.ts) from the same caches.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { activeKataConfig, type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { objectName, sameStrings } from '../../api/meta.ts';
import {
  KATA_NODE_ROLE_LABEL,
  KATA_REMOTE_RUNTIME_CLASS,
  MONITOR_DAEMONSET,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  OPERATOR_NAMESPACE,
} from '../../api/names.ts';
import type { KubeClient, ResourceType } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import { DaemonSets, type Node, Nodes, type Pod, Pods, RuntimeClasses, ServiceAccounts, Services } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { runtimeSocketOf } from '../../platform/kubernetes/flavour.ts';
import type { Platform } from '../../platform/platform.ts';
import { Applier, type CacheLookup, cacheShows, type Write } from '../../runtime/applier.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import { type Informer, snapshotOf } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';
import { lastCall } from '../../runtime/memo.ts';
import { POD_CACHE } from '../kataconfig/controller.ts';
import { cachedNode } from '../nodecache.ts';
import { desiredMonitor, monitorImageFromEnv, PrometheusRules, ServiceMonitors } from './desired.ts';
import { registerKataGauges } from './metrics.ts';
import { CORE_PARTS, PROMETHEUS_PARTS, planMonitor } from './plan.ts';

const nameOf = (w: Write): string => (w.op === 'apply' ? objectName(w.object) : w.name);

export const MONITOR_CONTROLLER = 'monitor';
/** The field manager of the monitor's objects. */
export const MONITOR_FIELD_MANAGER = 'osc-monitor';

/** What of a KataConfig the monitor depends on (its status changes on every node's progress). */
const relevant = (k: KataConfig) => [k.metadata.uid, k.metadata.deletionTimestamp, k.spec?.logLevel, k.status?.runtimeClasses];
const ROLE_PREFIX = 'node-role.kubernetes.io/';
/** Whether two nodes have the same role labels (but kata-oc): compared on every node event, without allocating. */
function sameRoles(a: Node, b: Node): boolean {
  const role = (l: string) => l.startsWith(ROLE_PREFIX) && l !== KATA_NODE_ROLE_LABEL;
  const la = a.metadata.labels ?? {};
  const lb = b.metadata.labels ?? {};
  for (const l in la) if (role(l) && !(l in lb)) return false;
  for (const l in lb) if (role(l) && !(l in la)) return false;
  return true;
}
/** A DaemonSet change the monitor acts on: its spec (generation), labels, annotations or deletion, not its status. */
const daemonSetChanged = (a: KubeObject, b: KubeObject): boolean =>
  a.metadata.generation !== b.metadata.generation ||
  !sameStrings(a.metadata.labels, b.metadata.labels) ||
  !sameStrings(a.metadata.annotations, b.metadata.annotations) ||
  a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp;
const KEY = 'kata-monitor';
const POD_RUNTIME_CLASS_INDEX = 'monitor-runtime-class';

export interface MonitorOptions {
  namespace: string;
  /** The kata-monitor image; default $RELATED_IMAGE_KATA_MONITOR, else the original operator's. */
  image: string;
}

/** Whether the API server serves the Prometheus Operator's API (discovery, readable by any account). */
async function servesMonitoringAPI(client: KubeClient, signal: AbortSignal): Promise<boolean> {
  try {
    const res = await client.request<{ resources?: { name: string }[] }>(
      'GET',
      `/apis/${ServiceMonitors.group}/${ServiceMonitors.version}`,
      {
        signal,
      },
    );
    const names = new Set(res.resources?.map((r) => r.name));
    return names.has(ServiceMonitors.plural) && names.has(PrometheusRules.plural);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return false;
    throw e;
  }
}

export function setupMonitorController(
  mgr: Manager,
  platform: Pick<Platform, 'kataNodeSelector'>,
  options: Partial<MonitorOptions> = {},
): void {
  const opts: MonitorOptions = { namespace: OPERATOR_NAMESPACE, image: monitorImageFromEnv(), ...options };
  const ns = opts.namespace;
  const byName = (name: string) => ({ namespace: ns, fieldSelector: `metadata.name=${name}` });
  const kataConfigs = mgr.informer(KataConfigs);
  const nodes = mgr.informer(Nodes, { transform: cachedNode });
  const runtimeClasses = mgr.informer(RuntimeClasses);
  const pods = mgr.informer(Pods, POD_CACHE);
  pods.addIndex(POD_RUNTIME_CLASS_INDEX, (p: Pod) => (p.spec?.runtimeClassName ? [p.spec.runtimeClassName] : []));
  const daemonSets = mgr.informer(DaemonSets, byName(MONITOR_DAEMONSET));
  const services = mgr.informer(Services, byName(MONITOR_SERVICE));
  const serviceAccounts = mgr.informer(ServiceAccounts, byName(MONITOR_SERVICE_ACCOUNT));

  registerKataGauges(mgr.metrics.registry, () => ({
    kataConfigs: kataConfigs.list(),
    runtimeClasses: runtimeClasses.list().map((rc) => objectName(rc)),
    remotePodPhases: pods.byIndex(POD_RUNTIME_CLASS_INDEX, KATA_REMOTE_RUNTIME_CLASS).map((p) => p.status?.phase),
  }));

  const client = mgr.client;
  const applier = new Applier({ client, fieldManager: MONITOR_FIELD_MANAGER, metrics: mgr.metrics });
  const caches = new Map<ResourceType, Informer<KubeObject>>([
    [ServiceAccounts, serviceAccounts],
    [DaemonSets, daemonSets],
    [Services, services],
  ] as [ResourceType, Informer<KubeObject>][]);
  for (const [rt, informer] of caches) applier.watch(rt, informer);
  const cachedCore: CacheLookup = (rt, name) => caches.get(rt)?.get(`${ns}/${name}`);

  // Whether the Prometheus Operator's API is served, as discovered by the last pass that made all its
  // writes. Discovery is asked only when the caches show the monitor's own objects not as planned (a
  // KataConfig change, an edit or a deletion of one of them), or the last pass failed: a rollout's many
  // KataConfig and node changes cost no request while the monitor stands.
  let monitoringAPI: boolean | undefined;
  // The kata nodes' runtime socket, for a snapshot of the nodes (a walk over every node).
  const socketOf = lastCall((all: readonly Node[], selector: Record<string, string>) => runtimeSocketOf(selectedNodes(all, selector)));

  async function reconcile(log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const all = snapshotOf(nodes);
    const kataNodeSelector = platform.kataNodeSelector(all);
    const runtimeSocket = socketOf(all, kataNodeSelector);
    const desired = (prometheusOperator: boolean) =>
      desiredMonitor({
        namespace: ns,
        image: opts.image,
        kataConfig: activeKataConfig(kataConfigs.list()),
        kataNodeSelector,
        runtimeSocket,
        prometheusOperator,
      });
    if (monitoringAPI !== undefined) {
      const core = planMonitor(desired(monitoringAPI), ns, CORE_PARTS);
      if (core.every((w) => cacheShows(w, cachedCore(w.resource, nameOf(w), ns)))) return undefined;
    }
    monitoringAPI = undefined;
    const served = await servesMonitoringAPI(client, signal);
    const parts = served ? [...CORE_PARTS, ...PROMETHEUS_PARTS] : CORE_PARTS;
    // The Prometheus Operator's kinds have no cache (they may not exist): read when the monitor is reconciled.
    const live = new Map<string, KubeObject | undefined>();
    if (served) for (const p of PROMETHEUS_PARTS) live.set(p.name, await client.find(p.resource, p.name, ns, signal));
    const lookup: CacheLookup = (rt, name) => (caches.has(rt) ? cachedCore(rt, name, ns) : live.get(name));
    const writes = planMonitor(desired(served), ns, parts);
    const existed = writes.map((w) => !!lookup(w.resource, nameOf(w), ns));
    const outcomes = await applier.run(writes, lookup, signal);
    monitoringAPI = served;
    for (const [i, w] of writes.entries()) {
      if (outcomes[i] !== 'written') continue;
      const msg =
        w.op === 'delete' ? 'kata monitor object removed' : existed[i] ? 'kata monitor object corrected' : 'kata monitor object created';
      log.info({ kind: w.resource.kind, name: nameOf(w) }, msg);
    }
    return undefined;
  }

  const key = () => [KEY];
  const controller = mgr.addController({
    name: MONITOR_CONTROLLER,
    watches: [
      { informer: kataConfigs, keys: key, updated: (a: KataConfig, b: KataConfig) => !isDeepStrictEqual(relevant(a), relevant(b)) },
      // Compact or not decides where the monitor runs: only role labels matter (not kata-oc, set per node).
      { informer: nodes, keys: key, updated: (a: Node, b: Node) => !sameRoles(a, b) },
      // Its rollout's status changes (a thousand pods becoming ready) change nothing the monitor writes.
      { informer: daemonSets, keys: key, updated: daemonSetChanged },
      { informer: services, keys: key },
      { informer: serviceAccounts, keys: key },
    ],
    reconcile: async (_key, { log, signal }) => reconcile(log, signal),
  });
  // A write taken back before any cache showed it (an etcd restore) brings no event: the pass is asked for.
  applier.onUnshownExpired(() => controller.queue.add(KEY));
}

/** The nodes a selector picks (all of them while none is picked yet: the runtime is the cluster's). */
function selectedNodes(all: readonly Node[], selector: Record<string, string>): readonly Node[] {
  const picked = all.filter((n) => Object.entries(selector).every(([k, v]) => n.metadata.labels?.[k] === v));
  return picked.length ? picked : all;
}
