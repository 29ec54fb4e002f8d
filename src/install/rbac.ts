/**
 * The operator's permissions, derived from every API call it makes (src/controllers/kataconfig,
 * src/webhooks, src/runtime) and from what peer pods needs. Least privilege: namespaced things are granted
 * by Roles in the namespace where they live; names are pinned with resourceNames wherever the verb allows
 * it (create and collection-wide list/watch cannot be restricted by name; a list or watch with a
 * `metadata.name=` field selector is authorized against resourceNames).
 */

import { CredentialsRequests } from '../api/cloudcredential.ts';
import { KATA_CC_NVIDIA_GPU_RUNTIME_CLASS, KATA_CC_RUNTIME_CLASS, KATA_NVIDIA_GPU_RUNTIME_CLASS } from '../api/confidential.ts';
import { KataConfigs } from '../api/kataconfig.ts';
import { KataNodes } from '../api/katanode.ts';
import {
  KATA_REMOTE_RUNTIME_CLASS,
  KATA_RUNTIME_CLASS,
  KATACONFIG_GROUP,
  LEADER_ELECTION_LEASE,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
} from '../api/names.ts';
import type { PolicyRule } from '../kube/resources.ts';
import { credentialsRequestNames } from '../peerpods/credentials.ts';
import { DEFAULT_PLATFORM, platformDescriptor } from '../platform/index.ts';
import type { PlatformName } from '../platform/platform.ts';
import { CERT_MANAGER } from '../webhooks/certsource.ts';
import { MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION, WEBHOOK_SECRET } from '../webhooks/setup.ts';

export type { PolicyRule };

/** Matches src/operator.ts LEADER_ELECTION_LEASE (kept literal so that this module imports no runtime). */
export { LEADER_ELECTION_LEASE };

const READ = ['get', 'list', 'watch'];

/**
 * The platforms an operator installed for a distribution may run: its own, and those its deploymentMode
 * feature gate may choose there (OpenShift's DaemonSet mode runs kata-deploy's).
 */
const platformsOf = (distribution: PlatformName) => {
  const own = platformDescriptor(distribution);
  return [own, ...(own.modePlatforms ?? []).map(platformDescriptor)];
};

/**
 * Cluster-scoped objects, and pods in every namespace: what every platform needs, and the named platform's
 * own rules (its descriptor's).
 */
export function clusterRules(distribution: PlatformName = DEFAULT_PLATFORM): PolicyRule[] {
  // Copies: the manifests must not share objects with the descriptor (nor with each other).
  const platform = structuredClone(platformsOf(distribution).flatMap((d) => d.rbac.cluster));
  return [
    // The KataConfig: read (informer, the webhook's duplicate check), finalizer (merge patch), status (PUT).
    { apiGroups: [KATACONFIG_GROUP], resources: [KataConfigs.plural], verbs: [...READ, 'patch'] },
    { apiGroups: [KATACONFIG_GROUP], resources: [`${KataConfigs.plural}/status`], verbs: ['update', 'patch'] },
    // Owner references with blockOwnerDeletion need this where OwnerReferencesPermissionEnforcement runs (OpenShift).
    { apiGroups: [KATACONFIG_GROUP], resources: [`${KataConfigs.plural}/finalizers`], verbs: ['update'] },
    // One KataNode per node that is or was selected: made with its status, adopted, its status applied
    // (all server-side applies of the object: it has no status subresource), deleted when the node is done.
    { apiGroups: [KATACONFIG_GROUP], resources: [KataNodes.plural], verbs: [...READ, 'create', 'patch', 'delete'] },
    // Node selection and the kata-oc role label (merge patch of labels); peer pods advertises
    // kata.peerpods.io/vm in node status.
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    // Uninstall refuses while pods use the runtime: pods are listed and watched cluster-wide, never written.
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    // The cluster's UID (kube-system's), which the adaptor tags every pod VM with: how leaked ones are found.
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: ['kube-system'] },
    ...platform,
    // RuntimeClasses: all are read (never overwrite one that exists), ours are created and deleted, and
    // adopted (owner reference patched) when an earlier KataConfig made them; the runtime-class-cleanup
    // finalizer is added and removed with a patch.
    { apiGroups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: [...READ, 'create'] },
    {
      apiGroups: ['node.k8s.io'],
      resources: ['runtimeclasses'],
      verbs: ['patch', 'delete'],
      resourceNames: [
        KATA_RUNTIME_CLASS,
        KATA_REMOTE_RUNTIME_CLASS,
        KATA_CC_RUNTIME_CLASS,
        KATA_NVIDIA_GPU_RUNTIME_CLASS,
        KATA_CC_NVIDIA_GPU_RUNTIME_CLASS,
      ],
    },
    // The admission webhooks register themselves (server-side apply: patch, and create the first time), and
    // the leader watches the two registrations by name to restore them (list/watch with a name field selector).
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'],
      verbs: ['create'],
    },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'],
      verbs: ['get', 'list', 'watch', 'patch', 'update'],
      resourceNames: [VALIDATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION],
    },
    // Secure metrics: each scraper's bearer token is reviewed by the API server, then its right to get /metrics.
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ];
}

/** The scraper's side: get on the operator's /metrics (a non-resource URL). */
export function metricsReaderRules(): { nonResourceURLs: string[]; verbs: string[] }[] {
  return [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }];
}

/** In the operator's namespace: what every platform needs, and the named platform's own rules. */
export function namespaceRules(distribution: PlatformName = DEFAULT_PLATFORM): PolicyRule[] {
  return [
    ...structuredClone(platformsOf(distribution).flatMap((d) => d.rbac.namespace)),
    // Leader election: one Lease, created by the first replica.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'update', 'patch'],
      resourceNames: [LEADER_ELECTION_LEASE],
    },
    // Events about namespaced objects.
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    // The webhook serving certificate (created by the first replica when absent) and peer-pods-secret (read).
    { apiGroups: [''], resources: ['secrets'], verbs: [...READ, 'create'] },
    // osc's own webhook certificate is rotated in place by the leader (src/webhooks/certificates.ts).
    { apiGroups: [''], resources: ['secrets'], verbs: ['update'], resourceNames: [WEBHOOK_SECRET] },
    // Where cert-manager runs and is the webhook certificate's source: its Issuers and Certificates (server-side apply).
    { apiGroups: ['cert-manager.io'], resources: ['issuers', 'certificates'], verbs: ['create'] },
    {
      apiGroups: ['cert-manager.io'],
      resources: ['issuers', 'certificates'],
      verbs: ['get', 'patch'],
      resourceNames: [CERT_MANAGER.selfSignedIssuer, CERT_MANAGER.caIssuer, CERT_MANAGER.caCertificate, CERT_MANAGER.servingCertificate],
    },
    // peer-pods-cm: read by the pod webhook and the peer pods controller, PODVM_AMI_ID written back;
    // osc-feature-gates: read (watched by name) by the KataConfig controller.
    { apiGroups: [''], resources: ['configmaps'], verbs: [...READ, 'create', 'update', 'patch'] },
    // Peer pods: the cloud-api-adaptor DaemonSet, the pod VM image jobs and the PeerPodConfig.
    { apiGroups: ['apps'], resources: ['daemonsets'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] },
    { apiGroups: ['batch'], resources: ['jobs'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] },
    { apiGroups: ['confidentialcontainers.org'], resources: ['peerpodconfigs'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] },
    // Its status (setupCompleted, the nodes that advertise pod VMs): written by the peer pods controller.
    { apiGroups: ['confidentialcontainers.org'], resources: ['peerpodconfigs/status'], verbs: ['update'] },
    // The kata monitor (src/controllers/monitor): its ServiceAccount and Service (the DaemonSet is above),
    // and its ServiceMonitor and recording rule where the Prometheus Operator runs. Server-side apply.
    { apiGroups: [''], resources: ['serviceaccounts', 'services'], verbs: ['create'] },
    { apiGroups: [''], resources: ['serviceaccounts'], verbs: [...READ, 'patch', 'delete'], resourceNames: [MONITOR_SERVICE_ACCOUNT] },
    { apiGroups: [''], resources: ['services'], verbs: [...READ, 'patch', 'delete'], resourceNames: [MONITOR_SERVICE] },
    { apiGroups: ['monitoring.coreos.com'], resources: ['servicemonitors', 'prometheusrules'], verbs: ['create'] },
    {
      apiGroups: ['monitoring.coreos.com'],
      resources: ['servicemonitors'],
      verbs: ['get', 'patch', 'delete'],
      resourceNames: [MONITOR_SERVICE_MONITOR],
    },
    {
      apiGroups: ['monitoring.coreos.com'],
      resources: ['prometheusrules'],
      verbs: ['get', 'patch', 'delete'],
      resourceNames: [MONITOR_RULES],
    },
  ];
}

/**
 * In the Cloud Credential Operator's namespace (OpenShift), where it reads CredentialsRequests: osc's
 * request for peer pods' cloud credentials (one name per cloud), applied (server-side: create the first time), watched by name,
 * deleted with peer pods (docs/cloud-credentials.md). The Secret it names lands in osc's own namespace.
 */
export function credentialsRequestRules(): PolicyRule[] {
  return [
    { apiGroups: [CredentialsRequests.group], resources: [CredentialsRequests.plural], verbs: ['create'] },
    {
      apiGroups: [CredentialsRequests.group],
      resources: [CredentialsRequests.plural],
      verbs: [...READ, 'patch', 'delete'],
      resourceNames: credentialsRequestNames(),
    },
  ];
}

/** In `default`, where events about cluster-scoped objects (the KataConfig) go, as client-go does. */
export function eventRules(): PolicyRule[] {
  return [{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }];
}
