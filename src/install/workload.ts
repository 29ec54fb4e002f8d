/**
 * The operator's workload as `osc install` writes it: its names, ports and labels, and its Deployment (the
 * command line, the images it runs on nodes, the probes, the security context). The files it goes into, with
 * RBAC, Services, NetworkPolicy and webhooks: manifests.ts.
 */

import { STS_TOKEN_AUDIENCE, STS_TOKEN_PATH } from '../api/cloudcredential.ts';
import {
  CAA_IMAGE_ENV,
  DEFAULT_MONITOR_IMAGE,
  DEFAULT_PEER_PODS_IMAGES,
  METRICS_READER_ROLE,
  METRICS_SERVICE,
  MONITOR_IMAGE_ENV,
  OPERATOR_NAMESPACE,
  OPERATOR_SERVICE_ACCOUNT,
  PODVM_BUILDER_IMAGE_ENV,
} from '../api/names.ts';
import { defaultImage } from '../api/release.ts';
import type { KubeObject } from '../kube/types.ts';
import { DEFAULT_PLATFORM } from '../platform/index.ts';
import { DEFAULT_KATA_DEPLOY_IMAGE, KATA_DEPLOY_IMAGE_ENV } from '../platform/kubernetes/katadeploy.ts';
import type { PlatformName } from '../platform/platform.ts';
import { WEBHOOK_SERVICE } from '../webhooks/setup.ts';
import { DEFAULT_REPLICAS, DISRUPTION_BUDGET, OWN_PRIORITY_CLASS, operatorPriorityClass, spreadOverNodes } from './availability.ts';

export const NAMES = {
  serviceAccount: OPERATOR_SERVICE_ACCOUNT,
  deployment: 'osc-controller-manager',
  clusterRole: 'osc-manager-role',
  clusterRoleBinding: 'osc-manager-rolebinding',
  role: 'osc-manager-role',
  roleBinding: 'osc-manager-rolebinding',
  eventsRole: 'osc-events-role',
  eventsRoleBinding: 'osc-events-rolebinding',
  credentialsRole: 'osc-credentials-requests',
  webhookService: WEBHOOK_SERVICE,
  metricsService: METRICS_SERVICE,
  metricsCertSecret: 'osc-metrics-server-cert',
  metricsReader: METRICS_READER_ROLE,
  serviceMonitor: 'osc-metrics-monitor',
  container: 'manager',
  disruptionBudget: DISRUPTION_BUDGET,
  priorityClass: OWN_PRIORITY_CLASS,
} as const;

/** Where events about cluster-scoped objects go (see src/runtime/events.ts). */
export const EVENTS_NAMESPACE = 'default';

export const PORTS = { metrics: 8443, health: 8081, webhook: 9443 } as const;

/** Where the Deployment mounts the metrics serving certificate (from OpenShift's service CA, when it runs). */
export const METRICS_CERT_DIR = '/var/run/secrets/osc/metrics-cert';

export interface ManifestOptions {
  /** The operator image; default quay.io/osc/osc-operator:v<package version>. */
  image?: string;
  /** The operator's log level (its --log-level). */
  logLevel?: string;
  /** The kata monitor's image (the operator's RELATED_IMAGE_KATA_MONITOR). */
  monitorImage?: string;
  /** Operator replicas (default 2: one leads, the other keeps the fail-closed webhooks answering). */
  replicas?: number;
  /** The operator pods' priority class; default by distribution (operatorPriorityClass). */
  priorityClassName?: string;
  /** Include osc's own PriorityClass (default: when the pods use it); the Helm chart decides by its values. */
  ownPriorityClass?: boolean;
  /** The cluster the operator runs on (default openshift): its RBAC differs by platform. */
  distribution?: PlatformName;
}

export const labels = (component: string) => ({
  'app.kubernetes.io/name': 'osc',
  'app.kubernetes.io/component': component,
  'app.kubernetes.io/part-of': 'openshift-sandboxed-containers',
});
export const podLabels = { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': 'operator' };

const ns = OPERATOR_NAMESPACE;

/** The operator's command line in the Deployment (`osc run ...`). */
export function operatorArgs(logLevel = 'info'): string[] {
  return [
    'run',
    '--leader-elect',
    `--metrics-bind-address=:${PORTS.metrics}`,
    `--metrics-cert-dir=${METRICS_CERT_DIR}`,
    `--health-probe-bind-address=:${PORTS.health}`,
    `--webhook-bind-address=:${PORTS.webhook}`,
    `--log-level=${logLevel}`,
  ];
}

/** The projected ServiceAccount token of the operator's pods, where the Cloud Credential Operator's tools expect one. */
const OPERATOR_TOKEN_VOLUME = 'bound-sa-token';
const tokenDir = STS_TOKEN_PATH.slice(0, STS_TOKEN_PATH.lastIndexOf('/'));
const tokenFile = STS_TOKEN_PATH.slice(STS_TOKEN_PATH.lastIndexOf('/') + 1);

export function deployment(opts: ManifestOptions): KubeObject {
  const replicas = opts.replicas ?? DEFAULT_REPLICAS;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAMES.deployment, namespace: ns, labels: labels('operator') },
    spec: {
      replicas,
      selector: { matchLabels: podLabels },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: { ...labels('operator'), ...podLabels },
          annotations: { 'kubectl.kubernetes.io/default-container': NAMES.container },
        },
        spec: {
          serviceAccountName: NAMES.serviceAccount,
          priorityClassName: opts.priorityClassName ?? operatorPriorityClass(opts.distribution ?? DEFAULT_PLATFORM),
          affinity: spreadOverNodes(podLabels),
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          terminationGracePeriodSeconds: 30,
          // Filled by OpenShift's service CA (annotation on the metrics Service); optional elsewhere, where
          // the operator makes its own certificate.
          volumes: [
            { name: 'metrics-cert', secret: { secretName: NAMES.metricsCertSecret, optional: true } },
            // The leaked pod VM collector's workload identity on a Manual-mode cluster (docs/cloud-credentials.md):
            // a token of the operator's ServiceAccount for OpenShift's audience, which the identity ccoctl made
            // from the collector's CredentialsRequest trusts; the kubelet renews it. Unused elsewhere.
            {
              name: OPERATOR_TOKEN_VOLUME,
              projected: {
                sources: [{ serviceAccountToken: { audience: STS_TOKEN_AUDIENCE, expirationSeconds: 3600, path: tokenFile } }],
              },
            },
          ],
          containers: [
            {
              name: NAMES.container,
              image: opts.image ?? defaultImage(),
              imagePullPolicy: 'IfNotPresent',
              args: operatorArgs(opts.logLevel),
              env: [
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                // In the User-Agent of its requests: the audit log tells the replicas apart.
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                // The kata monitor's image (OLM lists RELATED_IMAGE_* among the bundle's related images).
                { name: MONITOR_IMAGE_ENV, value: opts.monitorImage ?? DEFAULT_MONITOR_IMAGE },
                ...operandImages(),
              ],
              ports: [
                { name: 'webhook-server', containerPort: PORTS.webhook, protocol: 'TCP' },
                { name: 'metrics', containerPort: PORTS.metrics, protocol: 'TCP' },
                { name: 'health', containerPort: PORTS.health, protocol: 'TCP' },
              ],
              volumeMounts: [
                { name: 'metrics-cert', mountPath: METRICS_CERT_DIR, readOnly: true },
                { name: OPERATOR_TOKEN_VOLUME, mountPath: tokenDir, readOnly: true },
              ],
              livenessProbe: { httpGet: { path: '/healthz', port: 'health' }, initialDelaySeconds: 15, periodSeconds: 20 },
              readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, initialDelaySeconds: 5, periodSeconds: 10 },
              resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
              },
            },
          ],
        },
      },
    },
  } as KubeObject;
}

/**
 * The other images the operator runs on nodes, named in the Deployment so that a release can pin them by
 * digest (src/install/images.ts) and a disconnected cluster can mirror them: kata-deploy (plain
 * Kubernetes) and the peer pods images (OpenShift). The values are the operator's own defaults; all of them
 * in both distributions, so that the Deployment is one and the same (a platform ignores what it never runs).
 */
function operandImages(): { name: string; value: string }[] {
  return [
    { name: KATA_DEPLOY_IMAGE_ENV, value: DEFAULT_KATA_DEPLOY_IMAGE },
    { name: CAA_IMAGE_ENV, value: DEFAULT_PEER_PODS_IMAGES.caa },
    { name: PODVM_BUILDER_IMAGE_ENV, value: DEFAULT_PEER_PODS_IMAGES.podvmBuilder },
  ];
}
