/** Every fixed name of the product (docs/kataconfig.md, "Fixed names"). Users and documentation rely on these exact strings. */
export const OPERATOR_NAMESPACE = 'openshift-sandboxed-containers-operator';
/** The operator's own ServiceAccount (what a workload identity for its leaked-VM collector trusts). */
export const OPERATOR_SERVICE_ACCOUNT = 'osc-controller-manager';
/** The operator's Lease (leader election) in its namespace. */
export const LEADER_ELECTION_LEASE = 'osc-operator-leader';
/** The operator's metrics Service (its name is in the metrics serving certificate). */
export const METRICS_SERVICE = 'osc-metrics-service';
/** The ClusterRole a scraper needs for the operator's /metrics (RBAC nonResourceURLs). */
export const METRICS_READER_ROLE = 'osc-metrics-reader';
/** The field manager of the operator's writes; the installer applies the webhook configurations under it too. */
export const OPERATOR_FIELD_MANAGER = 'osc-operator';
/** On everything osc's controllers make (DaemonSets and their pods, jobs): `app.kubernetes.io/managed-by`. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'osc-operator';

export const KATACONFIG_GROUP = 'kataconfiguration.openshift.io';
export const KATACONFIG_FINALIZER = 'kataconfiguration.openshift.io/finalizer';

export const KATA_POOL = 'kata-oc';
export const KATA_NODE_ROLE_LABEL = 'node-role.kubernetes.io/kata-oc';
export const WORKER_ROLE_LABEL = 'node-role.kubernetes.io/worker';
export const MASTER_ROLE_LABEL = 'node-role.kubernetes.io/master';
export const CONTROL_PLANE_ROLE_LABEL = 'node-role.kubernetes.io/control-plane';
export const POOL_LABEL_PREFIX = 'pools.operator.machineconfiguration.openshift.io/';
/**
 * On a `kata-oc` pool osc created itself. An administrator may make the pool ahead (to set its
 * maxUnavailable, say); osc adopts such a pool, and with no KataConfig it removes only a pool it made.
 */
export const POOL_CREATED_BY_OPERATOR_ANNOTATION = 'kataconfiguration.openshift.io/created-by-operator';
export const MC_ROLE_LABEL = 'machineconfiguration.openshift.io/role';

export const EXTENSION_MACHINE_CONFIG = '50-enable-sandboxed-containers-extension';
export const SANDBOXED_CONTAINERS_EXTENSION = 'sandboxed-containers';
export const IGNITION_VERSION = '3.2.0';
export const CRIO_CONFIG = 'kata-crio-config';
/**
 * Confidential containers on OpenShift: the CRI-O runtime entry and the kata configuration of the TEE's
 * handler (kata-tdx, kata-snp, kata-se), written to the kata pool's nodes while `kata-cc` needs them.
 */
export const CONFIDENTIAL_MACHINE_CONFIG = '51-sandboxed-containers-confidential';

export const KATA_RUNTIME_CLASS = 'kata';
export const KATA_REMOTE_RUNTIME_CLASS = 'kata-remote';
export const NFD_KATA_LABEL = 'feature.node.kubernetes.io/runtime.kata';

export const PEER_PODS_CM = 'peer-pods-cm';
export const PEER_PODS_SECRET = 'peer-pods-secret';
export const PEER_POD_CONFIG = 'peerpodconfig-openshift';
export const CAA_DAEMONSET = 'osc-caa-ds';
export const PODVM_IMAGE_CREATION_JOB = 'osc-podvm-image-creation';
export const PODVM_IMAGE_DELETION_JOB = 'osc-podvm-image-deletion';
export const PEER_POD_VM_RESOURCE = 'kata.peerpods.io/vm';

/** The kata monitor's objects in the operator namespace (the installer's RBAC names each). */
export const MONITOR_DAEMONSET = 'openshift-sandboxed-containers-monitor';
export const MONITOR_SERVICE = 'metrics';
export const MONITOR_SERVICE_ACCOUNT = 'monitor';
export const MONITOR_SERVICE_MONITOR = MONITOR_DAEMONSET;
export const MONITOR_RULES = 'prometheus-sandboxed-containers-rules';
export const DEFAULT_MONITOR_IMAGE = 'quay.io/openshift_sandboxed_containers/openshift-sandboxed-containers-monitor:latest';
/** The monitor image, as OLM passes related images to an operator (RELATED_IMAGE_*). */
export const MONITOR_IMAGE_ENV = 'RELATED_IMAGE_KATA_MONITOR';

/** Machine Config Operator node annotations (what the MCO says about each node). */
export const MCO_STATE = 'machineconfiguration.openshift.io/state';
export const MCO_CURRENT_CONFIG = 'machineconfiguration.openshift.io/currentConfig';
export const MCO_DESIRED_CONFIG = 'machineconfiguration.openshift.io/desiredConfig';
export const MCO_REASON = 'machineconfiguration.openshift.io/reason';

export const LOG_LEVELS = ['fatal', 'panic', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The peer pods images: the cloud-api-adaptor's and the pod VM image builder's. */
export interface PeerPodsImages {
  /** The cloud-api-adaptor (CAA) image the DaemonSet runs. */
  caa: string;
  /** The image of the pod VM image jobs (`/podvm-builder.sh create|delete`). */
  podvmBuilder: string;
}

/** The product's images, as OpenShift sandboxed containers 1.12 ships them. */
export const DEFAULT_PEER_PODS_IMAGES: PeerPodsImages = {
  caa: 'registry.redhat.io/openshift-sandboxed-containers/osc-cloud-api-adaptor-rhel9:1.12.0',
  podvmBuilder: 'registry.redhat.io/openshift-sandboxed-containers/osc-podvm-builder-rhel9:1.12.0',
};
/** How the operator's Deployment overrides them (RELATED_IMAGE_*, OLM's convention). */
export const CAA_IMAGE_ENV = 'RELATED_IMAGE_CAA';
export const PODVM_BUILDER_IMAGE_ENV = 'RELATED_IMAGE_PODVM_BUILDER';
