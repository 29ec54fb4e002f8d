/**
 * The monitor controller's plan: from the desired monitor (desired.ts) to the writes that make the cluster
 * show it. Pure: every part is applied while the monitor is wanted and deleted once it is not; the applier
 * (src/runtime/applier.ts) writes only what its caches do not show already.
 */

import { MONITOR_DAEMONSET, MONITOR_RULES, MONITOR_SERVICE, MONITOR_SERVICE_ACCOUNT, MONITOR_SERVICE_MONITOR } from '../../api/names.ts';
import type { ResourceType } from '../../kube/client.ts';
import { DaemonSets, ServiceAccounts, Services } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { Write } from '../../runtime/applier.ts';
import { type MonitorObjects, PrometheusRules, ServiceMonitors } from './desired.ts';

export interface MonitorPart {
  resource: ResourceType;
  name: string;
  desired: (m: MonitorObjects) => KubeObject | undefined;
}

/** The parts every cluster gets, watched by the controller's caches. */
export const CORE_PARTS: readonly MonitorPart[] = [
  { resource: ServiceAccounts, name: MONITOR_SERVICE_ACCOUNT, desired: (m) => m.serviceAccount },
  { resource: DaemonSets, name: MONITOR_DAEMONSET, desired: (m) => m.daemonSet },
  { resource: Services, name: MONITOR_SERVICE, desired: (m) => m.service },
];

/** The Prometheus Operator's parts, where its API is served (no cache: the kinds may not exist). */
export const PROMETHEUS_PARTS: readonly MonitorPart[] = [
  { resource: ServiceMonitors, name: MONITOR_SERVICE_MONITOR, desired: (m) => m.serviceMonitor },
  { resource: PrometheusRules, name: MONITOR_RULES, desired: (m) => m.prometheusRule },
];

/** The writes for `parts`: each one applied as desired, or deleted when the monitor (or that part) is not wanted. */
export function planMonitor(desired: MonitorObjects | undefined, namespace: string, parts: readonly MonitorPart[]): Write[] {
  return parts.map((part): Write => {
    const object = desired && part.desired(desired);
    if (object) return { op: 'apply', resource: part.resource, object };
    return { op: 'delete', resource: part.resource, name: part.name, namespace, propagationPolicy: 'Background' };
  });
}
