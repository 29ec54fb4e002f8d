/**
 * The monitor controller: keeps the kata monitor (desired.ts) deployed while kata is installed, heals its
 * objects when they are edited or deleted, removes them when the KataConfig goes; and serves the five
 * kata_* gauges (metrics.ts) from the same caches.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { activeKataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE } from '../../api/names.ts';
import type { KubeClient, ResourceType } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import { DaemonSets, type Node, Nodes, type Pod, Pods, RuntimeClasses, ServiceAccounts, Services } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';
import { minimalPod } from '../kataconfig/controller.ts';
import { isCompactCluster } from '../kataconfig/state.ts';
import {
  desiredMonitor,
  MONITOR_DAEMONSET,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
  monitorImageFromEnv,
  PrometheusRules,
  ServiceMonitors,
  upToDate,
} from './desired.ts';
import { registerKataGauges } from './metrics.ts';

export const MONITOR_CONTROLLER = 'monitor';
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

export function setupMonitorController(mgr: Manager, options: Partial<MonitorOptions> = {}): void {
  const opts: MonitorOptions = { namespace: OPERATOR_NAMESPACE, image: monitorImageFromEnv(), ...options };
  const ns = opts.namespace;
  const byName = (name: string) => ({ namespace: ns, fieldSelector: `metadata.name=${name}` });
  const kataConfigs = mgr.informer(KataConfigs);
  const nodes = mgr.informer(Nodes);
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

  async function reconcile(log: Logger, signal: AbortSignal): Promise<undefined> {
    const prometheusOperator = await servesMonitoringAPI(client, signal);
    const desired = desiredMonitor({
      namespace: ns,
      image: opts.image,
      kataConfig: activeKataConfig(kataConfigs.list()),
      compact: isCompactCluster(nodes.list()),
      prometheusOperator,
    });
    const live = async (rt: ResourceType, name: string) => client.find(rt, name, ns, signal);
    const parts: [ResourceType, string, () => Promise<KubeObject | undefined>, KubeObject | undefined][] = [
      [ServiceAccounts, MONITOR_SERVICE_ACCOUNT, async () => cached(serviceAccounts, MONITOR_SERVICE_ACCOUNT), desired?.serviceAccount],
      [DaemonSets, MONITOR_DAEMONSET, async () => cached(daemonSets, MONITOR_DAEMONSET), desired?.daemonSet],
      [Services, MONITOR_SERVICE, async () => cached(services, MONITOR_SERVICE), desired?.service],
    ];
    if (prometheusOperator) {
      // Not cached: only read when the monitor is reconciled (a KataConfig, node or monitor object changed).
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
    return undefined;
  }

  const key = () => [KEY];
  mgr.addController({
    name: MONITOR_CONTROLLER,
    watches: [
      { informer: kataConfigs, keys: key },
      // Compact or not decides where the monitor runs: only role labels and deletions matter.
      { informer: nodes, keys: key, updated: (a: Node, b: Node) => !isDeepStrictEqual(a.metadata.labels, b.metadata.labels) },
      { informer: daemonSets, keys: key },
      { informer: services, keys: key },
      { informer: serviceAccounts, keys: key },
    ],
    reconcile: async (_key, { log, signal }) => reconcile(log, signal),
  });
}
