/**
 * The peer pods configuration's vocabulary: the keys of peer-pods-cm and peer-pods-secret, their defaults
 * and limits, what a validation answers, and how its problems read in a condition message.
 */
import type { Problem } from './clouds/provider.ts';

export type { Problem };

/**
 * A valid configuration: the settings every cloud has, then the cloud's own (its provider's `validate`
 * answer, e.g. region and subnet), spread in.
 */
export type PeerPodsConfig = CommonPeerPodsConfig & { readonly [cloudSetting: string]: unknown };

export interface CommonPeerPodsConfig {
  /** CLOUD_PROVIDER: the provider's name (aws, azure, gcp). */
  cloudProvider: string;
  /** VXLAN_PORT */
  vxlanPort: number;
  /** PROXY_TIMEOUT as written (a Go duration), and in milliseconds. */
  proxyTimeout: string;
  proxyTimeoutMs: number;
  /** The default pod VM size (PODVM_INSTANCE_TYPE, AZURE_INSTANCE_SIZE, GCP_MACHINE_TYPE). */
  instanceType: string;
  /** The allowed sizes as listed (PODVM_INSTANCE_TYPES, AZURE_INSTANCE_SIZES; [] when unset). */
  instanceTypes: string[];
  /** The sizes a pod may get: the list plus the default (see instancetypes.ts). */
  allowedInstanceTypes: string[];
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

/** Defaults for the optional keys every cloud has (each cloud's default size is its provider's). */
export const PEER_PODS_DEFAULTS = Object.freeze({
  /** The docs' value, and the port the documented security group procedure opens. */
  VXLAN_PORT: 9000,
  PROXY_TIMEOUT: '5m',
  /** The AWS docs' example default type (kept here for callers that predate the other clouds). */
  PODVM_INSTANCE_TYPE: 't3.medium',
  PEERPODS_LIMIT_PER_NODE: 10,
  ROOT_VOLUME_SIZE: 6,
  /** Plain sandboxed containers run in ordinary (non-confidential) VMs, as in the docs' example. */
  DISABLECVM: true,
});

export const MIN_ROOT_VOLUME_SIZE = 6;
/** The port the Kata agent listens on in the pod VM; the VXLAN tunnel must not take it. */
export const AGENT_PORT = 15150;

/** Keys every cloud has, checked by config.ts. */
export const COMMON_CM_KEYS = [
  'CLOUD_PROVIDER',
  'VXLAN_PORT',
  'PROXY_TIMEOUT',
  'TAGS',
  'PEERPODS_LIMIT_PER_NODE',
  'ROOT_VOLUME_SIZE',
  'DISABLECVM',
] as const;

/**
 * Keys checked apart from the others (config-initdata.ts): INITDATA, the guest's default initdata, and
 * DEFAULT_POD_INITDATA, the one osc's pod webhook gives kata-remote pods that have none.
 */
export const CHECKED_APART_CM_KEYS = ['INITDATA', 'DEFAULT_POD_INITDATA'] as const;

/**
 * Adaptor keys osc sets itself on the adaptor's container, from the cluster's TLS security profile: the same
 * keys in peer-pods-cm are overridden (a warning says so) and their edits restart nothing.
 */
export const OSC_SET_ADAPTOR_KEYS = ['TLS_MIN_VERSION', 'TLS_CIPHER_SUITES'] as const;

/** Providers the product documents that this operator does not drive yet. */
export const OTHER_CLOUD_PROVIDERS = ['libvirt', 'ibmcloud', 'vsphere', 'docker'] as const;

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
