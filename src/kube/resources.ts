import type { CustomResourceDefinition, KubeObject, LabelSelector, ResourceType } from '../api/meta.ts';

export type { CustomResourceDefinition };

/** Where each kind osc touches lives in the API. OpenShift and osc kinds live in src/api. */
const rt = <T extends KubeObject>(group: string, version: string, plural: string, kind: string, namespaced: boolean): ResourceType<T> => ({
  group,
  version,
  plural,
  kind,
  namespaced,
});

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: { key: string; value?: string; effect: string }[]; providerID?: string };
  status?: {
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    conditions?: NodeCondition[];
    nodeInfo?: Record<string, string>;
    addresses?: { type: string; address: string }[];
    images?: { names: string[]; sizeBytes?: number }[];
  };
}

export interface Container {
  name: string;
  image?: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  [k: string]: unknown;
}

export interface Pod extends KubeObject {
  spec?: { runtimeClassName?: string; nodeName?: string; containers: Container[]; initContainers?: Container[]; [k: string]: unknown };
  status?: { phase?: string; conditions?: { type: string; status: string }[]; [k: string]: unknown };
}

export interface RuntimeClass extends KubeObject {
  handler: string;
  overhead?: { podFixed?: Record<string, string> };
  scheduling?: { nodeSelector?: Record<string, string>; tolerations?: unknown[] };
}

export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface KubeEvent extends KubeObject {
  eventTime?: string;
  reportingController?: string;
  reportingInstance?: string;
  action?: string;
  reason?: string;
  note?: string;
  type?: 'Normal' | 'Warning';
  regarding?: { apiVersion?: string; kind?: string; name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  series?: { count: number; lastObservedTime: string };
  deprecatedCount?: number;
}

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  /** Base64-encoded values (keys distinct from data's). */
  binaryData?: Record<string, string>;
}

export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export interface Namespace extends KubeObject {
  status?: { phase?: string };
}

export interface DaemonSet extends KubeObject {
  spec: {
    selector: LabelSelector;
    template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> };
    [k: string]: unknown;
  };
  status?: Record<string, unknown>;
}

export interface Job extends KubeObject {
  spec: {
    template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> };
    backoffLimit?: number;
    [k: string]: unknown;
  };
  status?: {
    active?: number;
    succeeded?: number;
    failed?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    startTime?: string;
    completionTime?: string;
  };
}

export const Nodes = rt<Node>('', 'v1', 'nodes', 'Node', false);
export const Pods = rt<Pod>('', 'v1', 'pods', 'Pod', true);
export const Namespaces = rt<Namespace>('', 'v1', 'namespaces', 'Namespace', false);
export const ConfigMaps = rt<ConfigMap>('', 'v1', 'configmaps', 'ConfigMap', true);
export const Secrets = rt<Secret>('', 'v1', 'secrets', 'Secret', true);
export const ServiceAccounts = rt<KubeObject>('', 'v1', 'serviceaccounts', 'ServiceAccount', true);
export const Services = rt<KubeObject & { spec?: Record<string, unknown> }>('', 'v1', 'services', 'Service', true);
export const NetworkPolicies = rt<KubeObject & { spec?: Record<string, unknown> }>(
  'networking.k8s.io',
  'v1',
  'networkpolicies',
  'NetworkPolicy',
  true,
);
export const RuntimeClasses = rt<RuntimeClass>('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', false);
export const Leases = rt<Lease>('coordination.k8s.io', 'v1', 'leases', 'Lease', true);
export const Events = rt<KubeEvent>('events.k8s.io', 'v1', 'events', 'Event', true);
export const CustomResourceDefinitions = rt<CustomResourceDefinition>(
  'apiextensions.k8s.io',
  'v1',
  'customresourcedefinitions',
  'CustomResourceDefinition',
  false,
);
export const DaemonSets = rt<DaemonSet>('apps', 'v1', 'daemonsets', 'DaemonSet', true);
export const Deployments = rt<KubeObject & { spec?: Record<string, unknown> }>('apps', 'v1', 'deployments', 'Deployment', true);
export const Jobs = rt<Job>('batch', 'v1', 'jobs', 'Job', true);
/** The operator's own disruption budget and (on plain Kubernetes) priority class, applied by osc install. */
export const PodDisruptionBudgets = rt<KubeObject>('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true);
export const PriorityClasses = rt<KubeObject>('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', false);
/** The Prometheus Operator's scrape target (served only where it is installed). */
/** cert-manager (where it runs): the webhook certificate's issuers and certificates. */
export const CertManagerIssuers = rt<KubeObject>('cert-manager.io', 'v1', 'issuers', 'Issuer', true);
export const CertManagerCertificates = rt<KubeObject>('cert-manager.io', 'v1', 'certificates', 'Certificate', true);
export const ServiceMonitors = rt<KubeObject>('monitoring.coreos.com', 'v1', 'servicemonitors', 'ServiceMonitor', true);
export const ValidatingWebhookConfigurations = rt<KubeObject & { webhooks?: unknown[] }>(
  'admissionregistration.k8s.io',
  'v1',
  'validatingwebhookconfigurations',
  'ValidatingWebhookConfiguration',
  false,
);
export const MutatingWebhookConfigurations = rt<KubeObject & { webhooks?: unknown[] }>(
  'admissionregistration.k8s.io',
  'v1',
  'mutatingwebhookconfigurations',
  'MutatingWebhookConfiguration',
  false,
);
export const ClusterRoles = rt<KubeObject>('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false);
export const ClusterRoleBindings = rt<KubeObject>('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false);
export const Roles = rt<KubeObject>('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true);
export const RoleBindings = rt<KubeObject>('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true);

/** One rule of an RBAC Role or ClusterRole. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
