/**
 * The peer pods configuration's vocabulary: the keys of peer-pods-cm and peer-pods-secret, their defaults
 * and limits, what a validation answers, and how its problems read in a condition message.
 */
export interface Problem {
  /** The ConfigMap or Secret key at fault, or the object's name when the object itself is missing. */
  key: string;
  message: string;
}

export interface PeerPodsConfig {
  cloudProvider: 'aws';
  /** VXLAN_PORT */
  vxlanPort: number;
  /** PROXY_TIMEOUT as written (a Go duration), and in milliseconds. */
  proxyTimeout: string;
  proxyTimeoutMs: number;
  /** PODVM_INSTANCE_TYPE: the default instance type. */
  instanceType: string;
  /** PODVM_INSTANCE_TYPES as listed ([] when unset). */
  instanceTypes: string[];
  /** The types a pod may get: PODVM_INSTANCE_TYPES plus PODVM_INSTANCE_TYPE (see instancetypes.ts). */
  allowedInstanceTypes: string[];
  /** PODVM_AMI_ID; '' means the operator must build the pod VM image. */
  amiId: string;
  region: string;
  subnetId: string;
  vpcId: string;
  securityGroupIds: string[];
  /** TAGS, in order. */
  tags: Record<string, string>;
  /** PEERPODS_LIMIT_PER_NODE */
  limitPerNode: number;
  /** ROOT_VOLUME_SIZE, GB */
  rootVolumeSizeGB: number;
  /** DISABLECVM */
  disableCVM: boolean;
  /** The Secret keys present (never their values), e.g. to check AWS_SESSION_TOKEN is there. */
  secretKeys: string[];
  /** The ConfigMap data as given, e.g. for the cloud-api-adaptor's environment. */
  data: Record<string, string>;
}

export interface PeerPodsValidation {
  /** Present only when there is no problem. */
  config?: PeerPodsConfig;
  problems: Problem[];
  /** Not errors, but worth showing (e.g. a key that looks misspelt). */
  warnings: Problem[];
}

/** Defaults for the optional keys. */
export const PEER_PODS_DEFAULTS = Object.freeze({
  /** The docs' value, and the port the documented security group procedure opens. */
  VXLAN_PORT: 9000,
  PROXY_TIMEOUT: '5m',
  /** The docs' example default type. */
  PODVM_INSTANCE_TYPE: 't3.medium',
  PEERPODS_LIMIT_PER_NODE: 10,
  ROOT_VOLUME_SIZE: 6,
  /** Plain sandboxed containers run in ordinary (non-confidential) VMs, as in the docs' example. */
  DISABLECVM: true,
});

export const MIN_ROOT_VOLUME_SIZE = 6;
/** The largest EBS gp3 volume, GiB. */
export const MAX_ROOT_VOLUME_SIZE = 16384;
/** The port the Kata agent listens on in the pod VM; the VXLAN tunnel must not take it. */
export const AGENT_PORT = 15150;
/** AWS allows 50 tags per instance; the cloud-api-adaptor adds `Name`. */
export const MAX_TAGS = 49;

export const SUPPORTED_CLOUD_PROVIDERS = ['aws'] as const;
/** Providers the product documents that this operator does not drive yet. */
export const OTHER_CLOUD_PROVIDERS = ['azure', 'gcp', 'libvirt'] as const;

/** The documented ConfigMap keys (docs/peerpods.md). */
export const PEER_PODS_CM_KEYS = [
  'CLOUD_PROVIDER',
  'VXLAN_PORT',
  'PROXY_TIMEOUT',
  'PODVM_INSTANCE_TYPE',
  'PODVM_INSTANCE_TYPES',
  'PODVM_AMI_ID',
  'AWS_REGION',
  'AWS_SUBNET_ID',
  'AWS_VPC_ID',
  'AWS_SG_IDS',
  'TAGS',
  'PEERPODS_LIMIT_PER_NODE',
  'ROOT_VOLUME_SIZE',
  'DISABLECVM',
] as const;

/** Keys checked apart from the others (config-initdata.ts): INITDATA, the guest's default initdata. */
export const CHECKED_APART_CM_KEYS = ['INITDATA'] as const;

/** Other keys the cloud-api-adaptor reads; accepted without comment. */
export const OTHER_CM_KEYS = [
  'USE_PUBLIC_IP',
  'USE_PODVM_LAUNCHTEMPLATE',
  'PODVM_LAUNCHTEMPLATE_NAME',
  'SSH_KP_NAME',
  'DISABLE_CLOUD_CONFIG',
  'ENABLE_CLOUD_PROVIDER_EXTERNAL_PLUGIN',
  'CLOUD_CONFIG_VERIFY',
] as const;

export const REQUIRED_SECRET_KEYS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;
export const OPTIONAL_SECRET_KEYS = ['AWS_SESSION_TOKEN'] as const;

/**
 * One line for a condition message ('' when there is no problem):
 * `Invalid peer pods configuration: ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more.`
 * or, for several, `Invalid peer pods configuration (2 problems): <first>. <second>.`
 */
export function formatProblems(problems: readonly Problem[]): string {
  if (problems.length === 0) return '';
  const head =
    problems.length === 1 ? 'Invalid peer pods configuration: ' : `Invalid peer pods configuration (${problems.length} problems): `;
  return head + problems.map((p) => p.message.replace(/\s*[\r\n]+\s*/g, ' ').replace(/\.$/, '')).join('. ') + '.';
}
