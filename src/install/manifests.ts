/**
 * The manifests that put the operator into a cluster (`osc install`, committed under config/): namespace,
 * CRDs, ServiceAccount, least-privilege RBAC, the operator Deployment, its Services and the admission
 * webhook configurations. Pure and deterministic: the same inputs give byte-identical YAML, so that the
 * committed copy can be checked against what `osc install --dry-run` prints.
 */
import { stringify } from 'yaml';
import { CCO_NAMESPACE } from '../api/cloudcredential.ts';
import { oscCRDs } from '../api/crds.ts';
import { OPERATOR_NAMESPACE } from '../api/names.ts';
import { defaultImage, packageVersion } from '../api/release.ts';
import type { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { DEFAULT_PLATFORM, platformCluster, platformDescriptors, runsNodeInstaller } from '../platform/index.ts';
import { kubernetes } from '../platform/kubernetes/descriptor.ts';
import type { PlatformCluster } from '../platform/platform.ts';
import { CERT_SECRETS, SERVICE_CA_SECRET_ANNOTATION } from '../webhooks/certsource.ts';
import { registerWebhooks, WEBHOOK_SERVICE, type WebhookTrust } from '../webhooks/setup.ts';
import { DEFAULT_REPLICAS, disruptionBudget, OWN_PRIORITY_CLASS, operatorPriorityClass, ownPriorityClass } from './availability.ts';
import { kataDeployIdentity } from './katadeploy-rbac.ts';
import { clusterRules, credentialsRequestRules, eventRules, metricsReaderRules, namespaceRules } from './rbac.ts';
import { oscSecurityIdentity } from './scc.ts';
import { deployment, EVENTS_NAMESPACE, labels, type ManifestOptions, NAMES, PORTS, podLabels } from './workload.ts';

export { EVENTS_NAMESPACE, type ManifestOptions, METRICS_CERT_DIR, NAMES, operatorArgs, PORTS } from './workload.ts';
export { DEFAULT_REPLICAS, operatorPriorityClass };

/** OpenShift's in-cluster Prometheus, which scrapes namespaces labelled openshift.io/cluster-monitoring. */
const CLUSTER_PROMETHEUS = { kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'openshift-monitoring' };

export { defaultImage, packageVersion };

const ns = OPERATOR_NAMESPACE;

export interface ManifestFile {
  /** File name under config/. */
  file: string;
  title: string;
  objects: KubeObject[];
}

/**
 * The webhook configurations exactly as the operator registers them (src/webhooks/setup.ts), pointing at
 * the operator's Service. The committed copy says nothing about trust: `osc install` and the operator at
 * start choose the certificate's source and write either osc's CA bundle or the annotation that has the
 * platform's injector write it (src/webhooks/certsource.ts).
 */
export async function webhookConfigurations(trust: WebhookTrust = { caPem: '' }): Promise<KubeObject[]> {
  const objects: KubeObject[] = [];
  const recorder = {
    apply: async (rt: { group: string; version: string; kind: string }, obj: KubeObject) => {
      objects.push({ apiVersion: `${rt.group}/${rt.version}`, kind: rt.kind, ...obj });
      return obj;
    },
  };
  await registerWebhooks(recorder as unknown as KubeClient, { service: { namespace: ns, name: WEBHOOK_SERVICE, port: 443 } }, trust);
  return objects;
}

/** Every manifest, grouped into the files under config/ (applied in this order). */
export async function manifestFiles(opts: ManifestOptions = {}): Promise<ManifestFile[]> {
  const cluster = platformCluster(opts.distribution ?? DEFAULT_PLATFORM);
  const sa = { kind: 'ServiceAccount', name: NAMES.serviceAccount, namespace: ns };
  const rbac = 'rbac.authorization.k8s.io/v1';
  return [
    {
      file: '00-namespace.yaml',
      title: 'The operator namespace',
      objects: [
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name: ns,
            labels: {
              ...labels('operator'),
              'openshift.io/cluster-monitoring': 'true',
              'pod-security.kubernetes.io/enforce': 'privileged',
              'pod-security.kubernetes.io/audit': 'privileged',
              'pod-security.kubernetes.io/warn': 'privileged',
            },
          },
        },
      ],
    },
    {
      file: '10-crds.yaml',
      title: 'The KataConfig API',
      objects: oscCRDs().map((c) => ({ ...c, metadata: { ...c.metadata, labels: { ...c.metadata.labels, ...labels('api') } } })),
    },
    {
      file: '20-rbac.yaml',
      title: 'The operator ServiceAccount and its least-privilege RBAC (see src/install/rbac.ts for why each rule)',
      objects: [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: NAMES.serviceAccount, namespace: ns, labels: labels('operator') } },
        {
          apiVersion: rbac,
          kind: 'ClusterRole',
          metadata: { name: NAMES.clusterRole, labels: labels('rbac') },
          rules: clusterRules(opts.distribution),
        },
        {
          apiVersion: rbac,
          kind: 'ClusterRoleBinding',
          metadata: { name: NAMES.clusterRoleBinding, labels: labels('rbac') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAMES.clusterRole },
          subjects: [sa],
        },
        {
          apiVersion: rbac,
          kind: 'Role',
          metadata: { name: NAMES.role, namespace: ns, labels: labels('rbac') },
          rules: namespaceRules(opts.distribution),
        },
        {
          apiVersion: rbac,
          kind: 'RoleBinding',
          metadata: { name: NAMES.roleBinding, namespace: ns, labels: labels('rbac') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.role },
          subjects: [sa],
        },
        {
          apiVersion: rbac,
          kind: 'Role',
          metadata: { name: NAMES.eventsRole, namespace: EVENTS_NAMESPACE, labels: labels('rbac') },
          rules: eventRules(),
        },
        {
          apiVersion: rbac,
          kind: 'RoleBinding',
          metadata: { name: NAMES.eventsRoleBinding, namespace: EVENTS_NAMESPACE, labels: labels('rbac') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.eventsRole },
          subjects: [sa],
        },
        // Peer pods' CredentialsRequest, where the Cloud Credential Operator reads it (OpenShift).
        ...(!cluster.cloudCredentialOperator
          ? []
          : [
              {
                apiVersion: rbac,
                kind: 'Role',
                metadata: { name: NAMES.credentialsRole, namespace: CCO_NAMESPACE, labels: labels('rbac') },
                rules: credentialsRequestRules(),
              },
              {
                apiVersion: rbac,
                kind: 'RoleBinding',
                metadata: { name: NAMES.credentialsRole, namespace: CCO_NAMESPACE, labels: labels('rbac') },
                roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.credentialsRole },
                subjects: [sa],
              },
            ]),
        // Who may scrape /metrics: bind this ClusterRole to a scraper's ServiceAccount (the operator asks the
        // API server with a SubjectAccessReview). Bound here to OpenShift's cluster Prometheus.
        {
          apiVersion: rbac,
          kind: 'ClusterRole',
          metadata: { name: NAMES.metricsReader, labels: labels('metrics') },
          rules: metricsReaderRules(),
        },
        {
          apiVersion: rbac,
          kind: 'ClusterRoleBinding',
          metadata: { name: NAMES.metricsReader, labels: labels('metrics') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAMES.metricsReader },
          subjects: [CLUSTER_PROMETHEUS],
        },
      ] as KubeObject[],
    },
    // Where osc runs kata's node installer: always on plain Kubernetes, on OpenShift with deploymentMode DaemonSet.
    ...(runsNodeInstaller(opts.distribution ?? DEFAULT_PLATFORM)
      ? [
          {
            file: KATA_DEPLOY_RBAC_FILE,
            title:
              "kata-deploy's ServiceAccount and RBAC, for the installer DaemonSet the operator runs (see src/install/katadeploy-rbac.ts)",
            objects: kataDeployIdentity(ns),
          },
        ]
      : []),
    ...(cluster.securityContextConstraints
      ? [
          {
            file: SCC_FILE,
            title:
              "osc's SecurityContextConstraints, its workloads' ServiceAccounts and their use grants, pinned by resourceNames (see src/install/scc.ts)",
            objects: oscSecurityIdentity(ns),
          },
        ]
      : []),
    {
      file: '30-operator.yaml',
      title: 'The operator Deployment, its disruption budget and its Services',
      objects: [
        ...((opts.ownPriorityClass ??
        (opts.priorityClassName ?? operatorPriorityClass(opts.distribution ?? DEFAULT_PLATFORM)) === OWN_PRIORITY_CLASS)
          ? [ownPriorityClass(labels('operator'))]
          : []),
        deployment(opts),
        ...((opts.replicas ?? DEFAULT_REPLICAS) > 1 ? [disruptionBudget(ns, podLabels, labels('operator'))] : []),
        {
          apiVersion: 'v1',
          kind: 'Service',
          // On OpenShift the service CA issues (and rotates) the webhook's certificate into this Secret; the
          // operator reads it from there (docs/security.md). Elsewhere the annotation means nothing.
          metadata: {
            name: NAMES.webhookService,
            namespace: ns,
            labels: labels('webhook'),
            annotations: { [SERVICE_CA_SECRET_ANNOTATION]: CERT_SECRETS['service-ca'] },
          },
          spec: { selector: podLabels, ports: [{ name: 'https', port: 443, targetPort: 'webhook-server', protocol: 'TCP' }] },
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: {
            name: NAMES.metricsService,
            namespace: ns,
            labels: labels('metrics'),
            annotations: { 'service.beta.openshift.io/serving-cert-secret-name': NAMES.metricsCertSecret },
          },
          spec: { selector: podLabels, ports: [{ name: 'metrics', port: PORTS.metrics, targetPort: 'metrics', protocol: 'TCP' }] },
        },
      ] as KubeObject[],
    },
    {
      file: '35-network-policy.yaml',
      title: "Who may reach the operator's ports: the API server (webhooks) and the monitoring stack (metrics)",
      objects: [networkPolicy(cluster)],
    },
    {
      file: '40-webhooks.yaml',
      title:
        'Admission webhooks (caBundle, or the annotation that has the service CA or cert-manager inject it, is written by "osc install" and by the operator)',
      objects: await webhookConfigurations(),
    },
    {
      // A folder of its own: `kubectl apply -f config/` must work on clusters without the Prometheus Operator.
      file: 'prometheus-operator/servicemonitor.yaml',
      title:
        "For clusters that run the Prometheus Operator: scrape the operator's metrics Service (osc install skips it where monitoring.coreos.com is not served)",
      objects: [serviceMonitor()],
    },
  ];
}

export const KATA_DEPLOY_RBAC_FILE = '25-kata-deploy-rbac.yaml';
export const SCC_FILE = '25-security-context-constraints.yaml';

/** The folder under config/ with the files that differ on plain Kubernetes (each platform's folder is its name). */
export const KUBERNETES_OVERLAY = kubernetes.name;

/**
 * The committed config/ tree: the default platform's (OpenShift's) manifests, and under a folder named after
 * each other platform the files it replaces or adds (plain Kubernetes: its RBAC and kata-deploy's identity), so that
 * `kubectl apply -f config/ -f config/kubernetes/` installs what `osc install --distribution kubernetes` does.
 */
export async function configFiles(opts: Omit<ManifestOptions, 'distribution'> = {}): Promise<ManifestFile[]> {
  const base = await manifestFiles({ ...opts, distribution: DEFAULT_PLATFORM });
  const same = (f: ManifestFile) => {
    const o = base.find((x) => x.file === f.file);
    return !!o && fileText(o) === fileText(f);
  };
  // Each other platform: a folder named after it, with the files that differ.
  const overlays: ManifestFile[] = [];
  for (const p of platformDescriptors().filter((d) => d.name !== DEFAULT_PLATFORM)) {
    const files = await manifestFiles({ ...opts, distribution: p.name });
    overlays.push(...files.filter((f) => !same(f)).map((f) => ({ ...f, file: `${p.name}/${f.file}` })));
  }
  return [...base, ...overlays];
}

/**
 * A namespace whose Prometheus may scrape the operator carries this label (OpenShift's cluster monitoring,
 * in openshift-monitoring, is allowed by name).
 */
export const METRICS_SCRAPER_NAMESPACE_LABEL = 'kataconfiguration.openshift.io/metrics-scraper';

/**
 * Ingress to the operator's pods: the webhook port from the API server, the metrics port from the
 * monitoring stack, nothing else. The health port needs no rule: traffic from the pod's own node (the
 * kubelet's probes) is always allowed by NetworkPolicy. On OpenShift the API server runs on the host
 * network, which OVN-Kubernetes places in the namespaces labelled policy-group host-network; plain
 * Kubernetes has no selector for it (its address is the cluster's own), so there the webhook port stays
 * open to the cluster and relies on TLS and admission-only handlers (docs/security.md says how to narrow it).
 */
function networkPolicy(cluster: PlatformCluster): KubeObject {
  const webhookFrom = cluster.apiServerPeers ? { from: [...cluster.apiServerPeers] } : {};
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'osc-controller-manager', namespace: ns, labels: labels('operator') },
    spec: {
      podSelector: { matchLabels: podLabels },
      policyTypes: ['Ingress'],
      ingress: [
        { ...webhookFrom, ports: [{ protocol: 'TCP', port: PORTS.webhook }] },
        {
          from: [
            { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-monitoring' } } },
            { namespaceSelector: { matchLabels: { [METRICS_SCRAPER_NAMESPACE_LABEL]: 'true' } } },
          ],
          ports: [{ protocol: 'TCP', port: PORTS.metrics }],
        },
      ],
    },
  } as KubeObject;
}

/** Prometheus Operator: scrape the metrics Service (the console's metrics page queries that Prometheus). */
function serviceMonitor(): KubeObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: NAMES.serviceMonitor, namespace: ns, labels: labels('metrics') },
    spec: {
      selector: { matchLabels: labels('metrics') },
      namespaceSelector: { matchNames: [ns] },
      // HTTPS with Prometheus's own ServiceAccount token (the operator reviews it with the API server) and
      // the service CA's bundle, which OpenShift mounts into its Prometheus, to verify the serving certificate.
      endpoints: [
        {
          port: 'metrics',
          path: '/metrics',
          interval: '30s',
          scheme: 'https',
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
          tlsConfig: {
            caFile: '/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt',
            serverName: `${NAMES.metricsService}.${ns}.svc`,
          },
        },
      ],
    },
  } as KubeObject;
}

export async function manifests(opts: ManifestOptions = {}): Promise<KubeObject[]> {
  return (await manifestFiles(opts)).flatMap((f) => f.objects);
}

export const GENERATED_HEADER = '# Generated by "osc install --dry-run --output-dir config"; do not edit by hand.';

/** Objects as a multi-document YAML stream. */
export function toYaml(objects: KubeObject[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

export function fileText(f: ManifestFile): string {
  return `${GENERATED_HEADER}\n# ${f.title}\n${toYaml(f.objects)}`;
}
