/**
 * The kata monitor, as the original operator deploys it: a kata-monitor DaemonSet on the kata nodes (it
 * reads CRI-O's socket and the sandboxes' state to export per-sandbox metrics), its Service, and where the
 * Prometheus Operator's API is served, a ServiceMonitor and a recording rule. Pure: from the KataConfig and
 * the cluster's shape to the objects that should exist (none when there is nothing to monitor).
 */

import { type KataConfig, kataConfigOwner } from '../../api/kataconfig.ts';
import {
  DEFAULT_MONITOR_IMAGE,
  MONITOR_DAEMONSET,
  MONITOR_IMAGE_ENV,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
} from '../../api/names.ts';
import { MONITOR_SCC, REQUIRED_SCC_ANNOTATION } from '../../api/scc.ts';
import type { ResourceType } from '../../kube/client.ts';
import type { DaemonSet } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { covers } from '../../runtime/applier.ts';

export const MONITOR_PORT = 8090;
/** The pods' label, which the Service and the ServiceMonitor select on. */
export const MONITOR_LABELS = { name: MONITOR_DAEMONSET };
export const SHIM_COUNT_RECORD = 'cluster:kata_monitor_running_shim_count:sum';

export const monitorImageFromEnv = (env: Record<string, string | undefined> = process.env): string =>
  env[MONITOR_IMAGE_ENV] || DEFAULT_MONITOR_IMAGE;

const MONITORING_GROUP = 'monitoring.coreos.com';
export const ServiceMonitors: ResourceType = {
  group: MONITORING_GROUP,
  version: 'v1',
  plural: 'servicemonitors',
  kind: 'ServiceMonitor',
  namespaced: true,
};
export const PrometheusRules: ResourceType = {
  group: MONITORING_GROUP,
  version: 'v1',
  plural: 'prometheusrules',
  kind: 'PrometheusRule',
  namespaced: true,
};

export interface MonitorInput {
  namespace: string;
  image: string;
  /** The KataConfig osc acts on, if any. */
  kataConfig: KataConfig | undefined;
  /** The kata nodes, by the platform's selector. */
  kataNodeSelector: Record<string, string>;
  /** Whether the API server serves monitoring.coreos.com/v1 (ServiceMonitor, PrometheusRule). */
  prometheusOperator: boolean;
  /** The kata nodes' CRI socket (default CRI-O's): containerd's on plain Kubernetes, where its flavour keeps it. */
  runtimeSocket?: string;
}

const CRIO_SOCKET = '/run/crio/crio.sock';

/**
 * A privileged pod on every kata node must run one build everywhere: by digest the image cannot change
 * under a node, so a cached copy is as good as a pull; by tag (`:latest`) only a pull gets the build the
 * tag names now, so that nodes do not keep whichever build they first cached.
 */
export const pullPolicyFor = (image: string): 'IfNotPresent' | 'Always' =>
  /@sha256:[0-9a-f]{64}$/.test(image) ? 'IfNotPresent' : 'Always';

/** The directory of a socket path: what is mounted (a socket replaced on restart stays reachable). */
const dirOf = (path: string) => `${path.slice(0, path.lastIndexOf('/') + 1)}`;

export interface MonitorObjects {
  serviceAccount: KubeObject;
  daemonSet: DaemonSet;
  service: KubeObject;
  serviceMonitor?: KubeObject;
  prometheusRule?: KubeObject;
}

const ownedLabels = {
  'app.kubernetes.io/name': 'osc',
  'app.kubernetes.io/component': 'kata-monitor',
  'app.kubernetes.io/managed-by': 'osc-operator',
};

/**
 * Whether the monitor should run: once kata is installed (the KataConfig has created a RuntimeClass), and
 * until its removal starts. Like the original, nothing is deployed during the first installation.
 */
export function monitorWanted(kc: KataConfig | undefined): kc is KataConfig {
  return !!kc && !kc.metadata.deletionTimestamp && (kc.status?.runtimeClasses?.length ?? 0) > 0;
}

/** Every object of the monitor. */
export function desiredMonitor(input: MonitorInput): MonitorObjects | undefined {
  const kc = input.kataConfig;
  if (!monitorWanted(kc)) return undefined;
  const ns = input.namespace;
  const owner = kataConfigOwner(kc, false);
  const meta = (name: string, labels: Record<string, string>) => ({
    name,
    namespace: ns,
    labels: { ...labels, ...ownedLabels },
    ownerReferences: [owner],
  });
  const nodeSelector = input.kataNodeSelector;
  const socket = input.runtimeSocket ?? CRIO_SOCKET;
  const dsSpec: DaemonSet['spec'] = {
    selector: { matchLabels: MONITOR_LABELS },
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
    template: {
      metadata: { labels: { ...MONITOR_LABELS, ...ownedLabels }, annotations: { [REQUIRED_SCC_ANNOTATION]: MONITOR_SCC } },
      spec: {
        serviceAccountName: MONITOR_SERVICE_ACCOUNT,
        nodeSelector,
        // On every kata node, whatever its taints (a monitor that skips a node hides its sandboxes).
        tolerations: [{ operator: 'Exists' }],
        priorityClassName: 'system-node-critical',
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'kata-monitor',
            image: input.image,
            imagePullPolicy: pullPolicyFor(input.image),
            command: [
              '/usr/bin/kata-monitor',
              `--listen-address=:${MONITOR_PORT}`,
              `--log-level=${kc.spec?.logLevel ?? 'info'}`,
              `--runtime-endpoint=${socket}`,
            ],
            ports: [{ name: 'metrics', containerPort: MONITOR_PORT, protocol: 'TCP' }],
            // The runtime's socket and the sandboxes' state directories belong to root on the node.
            securityContext: { privileged: true, readOnlyRootFilesystem: true },
            resources: { requests: { cpu: '10m', memory: '32Mi' } },
            volumeMounts: [
              { name: 'runtime-sock', mountPath: dirOf(socket) },
              { name: 'sbs', mountPath: '/run/vc/sbs/' },
            ],
          },
        ],
        volumes: [
          { name: 'runtime-sock', hostPath: { path: dirOf(socket) } },
          { name: 'sbs', hostPath: { path: '/run/vc/sbs/' } },
        ],
      },
    },
  };
  const serviceSpec = {
    selector: MONITOR_LABELS,
    ports: [{ name: 'metrics', port: MONITOR_PORT, targetPort: 'metrics', protocol: 'TCP' }],
  };
  const objects: MonitorObjects = {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(MONITOR_SERVICE_ACCOUNT, {}) },
    daemonSet: { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: meta(MONITOR_DAEMONSET, MONITOR_LABELS), spec: dsSpec },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(MONITOR_SERVICE, MONITOR_LABELS),
      spec: serviceSpec,
    } as KubeObject,
  };
  if (input.prometheusOperator) {
    const smSpec = { endpoints: [{ port: 'metrics' }], namespaceSelector: { matchNames: [ns] }, selector: { matchLabels: MONITOR_LABELS } };
    const ruleSpec = {
      groups: [{ name: 'kata_monitor_rules', rules: [{ record: SHIM_COUNT_RECORD, expr: 'sum(kata_monitor_running_shim_count)' }] }],
    };
    objects.serviceMonitor = {
      apiVersion: `${MONITORING_GROUP}/v1`,
      kind: 'ServiceMonitor',
      metadata: meta(MONITOR_SERVICE_MONITOR, {}),
      spec: smSpec,
    } as KubeObject;
    objects.prometheusRule = {
      apiVersion: `${MONITORING_GROUP}/v1`,
      kind: 'PrometheusRule',
      metadata: meta(MONITOR_RULES, {}),
      spec: ruleSpec,
    } as KubeObject;
  }
  return objects;
}

/**
 * Whether an existing object already is what is desired: every field osc sets (spec, labels, owner) has
 * its value, so a hand edit of any of them is corrected and an unchanged object is never rewritten.
 */
export function upToDate(existing: KubeObject | undefined, desired: KubeObject): boolean {
  if (!existing || existing.metadata.deletionTimestamp) return false;
  const { apiVersion: _a, kind: _k, metadata, ...body } = desired;
  const { namespace: _n, ...meta } = metadata;
  return covers(existing.metadata, meta) && covers(existing, body);
}
