/**
 * The monitor controller: keeps the kata monitor (desired.ts) deployed while kata is installed, heals its
 * objects when they are edited or deleted, removes them when the KataConfig goes; and serves the five
 * kata_* gauges (metrics.ts) from the same caches.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { activeKataConfig, type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { KATA_NODE_ROLE_LABEL, KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE } from '../../api/names.ts';
import type { KubeClient, ResourceType } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import { DaemonSets, type Node, Nodes, type Pod, Pods, RuntimeClasses, ServiceAccounts, Services } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { runtimeSocketOf } from '../../platform/kubernetes/flavour.ts';
import type { Platform } from '../../platform/platform.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';
import { minimalPod } from '../kataconfig/controller.ts';
import { cachedNode } from '../nodecache.ts';
import {
  desiredMonitor,
  MONITOR_DAEMONSET,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
  type MonitorObjects,
  monitorImageFromEnv,
  PrometheusRules,
  ServiceMonitors,
  upToDate,
} from './desired.ts';
import { registerKataGauges } from './metrics.ts';

export const MONITOR_CONTROLLER = 'monitor';
/** How often the monitor is re-checked with nothing changed (the Prometheus Operator's API, its objects). */
const RECHECK_MS = 5 * 60_000;

type Part = [ResourceType, string, () => Promise<KubeObject | undefined>, KubeObject | undefined];

/** What of a KataConfig the monitor depends on (its status changes on every node's progress). */
const relevant = (k: KataConfig) => [k.metadata.uid, k.metadata.deletionTimestamp, k.spec?.logLevel, k.status?.runtimeClasses];
const roles = (n: Node) =>
  Object.keys(n.metadata.labels ?? {}).filter((l) => l.startsWith('node-role.kubernetes.io/') && l !== KATA_NODE_ROLE_LABEL);
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
  const pods = mgr.informer(Pods, { transform: minimalPod });
  pods.addIndex(POD_RUNTIME_CLASS_INDEX, (p: Pod) => (p.spec?.runtimeClassName ? [p.spec.runtimeClassName] : []));
  const daemonSets = mgr.informer(DaemonSets, byName(MONITOR_DAEMONSET));
  const services = mgr.informer(Services, byName(MONITOR_SERVICE));
  const serviceAccounts = mgr.informer(ServiceAccounts, byName(MONITOR_SERVICE_ACCOUNT));

  registerKataGauges(mgr.metrics.registry, () => ({
    kataConfigs: kataConfigs.list(),
    runtimeClasses: runtimeClasses.list().map((rc) => rc.metadata.name ?? ''),
    remotePodPhases: pods.byIndex(POD_RUNTIME_CLASS_INDEX, KATA_REMOTE_RUNTIME_CLASS).map((p) => p.status?.phase),
  }));

  const client = mgr.client;
  const cached = <T extends KubeObject>(inf: Informer<T>, name: string) => inf.list().find((o) => o.metadata.name === name);

  // Whether the Prometheus Operator's API is served, as last discovered. Discovery is asked only when
  // something is to be done or the periodic re-check is due: a rollout's many KataConfig and node changes
  // cost no request while the monitor is as it should be.
  let monitoringAPI: { served: boolean; at: number } | undefined;

  async function reconcile(log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const kataNodeSelector = platform.kataNodeSelector(nodes.list());
    const input = {
      namespace: ns,
      image: opts.image,
      kataConfig: activeKataConfig(kataConfigs.list()),
      kataNodeSelector,
      runtimeSocket: runtimeSocketOf(selectedNodes(nodes.list(), kataNodeSelector)),
    };
    const core = (d: MonitorObjects | undefined): Part[] => [
      [ServiceAccounts, MONITOR_SERVICE_ACCOUNT, async () => cached(serviceAccounts, MONITOR_SERVICE_ACCOUNT), d?.serviceAccount],
      [DaemonSets, MONITOR_DAEMONSET, async () => cached(daemonSets, MONITOR_DAEMONSET), d?.daemonSet],
      [Services, MONITOR_SERVICE, async () => cached(services, MONITOR_SERVICE), d?.service],
    ];
    const settled = async (parts: Part[]) => {
      for (const [, , current, want] of parts) {
        const existing = await current();
        if (want ? !upToDate(existing, want) : existing && !existing.metadata.deletionTimestamp) return false;
      }
      return true;
    };
    const due = !monitoringAPI || Date.now() - monitoringAPI.at >= RECHECK_MS;
    if (!due && monitoringAPI && (await settled(core(desiredMonitor({ ...input, prometheusOperator: monitoringAPI.served }))))) {
      return input.kataConfig ? { requeueAfterMs: RECHECK_MS } : undefined;
    }
    monitoringAPI = { served: await servesMonitoringAPI(client, signal), at: Date.now() };
    const desired = desiredMonitor({ ...input, prometheusOperator: monitoringAPI.served });
    const live = async (rt: ResourceType, name: string) => client.find(rt, name, ns, signal);
    const parts = core(desired);
    if (monitoringAPI.served) {
      // Not cached (no informer on a kind that may not exist): read when the monitor is reconciled.
      parts.push(
        [ServiceMonitors, MONITOR_SERVICE_MONITOR, () => live(ServiceMonitors, MONITOR_SERVICE_MONITOR), desired?.serviceMonitor],
        [PrometheusRules, MONITOR_RULES, () => live(PrometheusRules, MONITOR_RULES), desired?.prometheusRule],
      );
    }
    for (const [rt, name, current, want] of parts) {
      const existing = await current();
      if (want) {
        if (upToDate(existing, want)) continue;
        log.info({ kind: rt.kind, name }, existing ? 'kata monitor object corrected' : 'kata monitor object created');
        await client.apply(rt, want, { signal });
      } else if (existing && !existing.metadata.deletionTimestamp) {
        log.info({ kind: rt.kind, name }, 'kata monitor object removed');
        await client.delete(rt, name, { namespace: ns, propagationPolicy: 'Background', signal });
      }
    }
    // Re-checked now and then: the Prometheus Operator may come (or go), its objects be edited.
    return input.kataConfig ? { requeueAfterMs: RECHECK_MS } : undefined;
  }

  const key = () => [KEY];
  mgr.addController({
    name: MONITOR_CONTROLLER,
    watches: [
      { informer: kataConfigs, keys: key, updated: (a: KataConfig, b: KataConfig) => !isDeepStrictEqual(relevant(a), relevant(b)) },
      // Compact or not decides where the monitor runs: only role labels matter (not kata-oc, set per node).
      { informer: nodes, keys: key, updated: (a: Node, b: Node) => !isDeepStrictEqual(roles(a), roles(b)) },
      { informer: daemonSets, keys: key },
      { informer: services, keys: key },
      { informer: serviceAccounts, keys: key },
    ],
    reconcile: async (_key, { log, signal }) => reconcile(log, signal),
  });
}

/** The nodes a selector picks (all of them while none is picked yet: the runtime is the cluster's). */
function selectedNodes(all: readonly Node[], selector: Record<string, string>): readonly Node[] {
  const picked = all.filter((n) => Object.entries(selector).every(([k, v]) => n.metadata.labels?.[k] === v));
  return picked.length ? picked : all;
}
