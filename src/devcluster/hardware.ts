import { CLUSTER_VERSION_NAME, NVIDIA_GPU_NODE_LABELS, type TeeKind, teePlatform } from '../api/confidential.ts';
import { ClusterVersions } from '../api/openshift.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/errors.ts';
import { CPU_SECURITY_ANNOTATION, NodeFeatureRules, teeHardware, teeNodeFeatureRule } from './nfd/rules.ts';

/**
 * The dev cluster's confidential computing hardware: which nodes have a TEE (and how many key slots), which
 * have NVIDIA GPUs, and the OpenShift release the cluster reports. A TEE is hardware the nodes register
 * with (CPU_SECURITY_ANNOTATION); the NodeFeatureRule the documentation has the administrator create turns
 * it into NFD's label and key-slot resource. GPU nodes carry the NVIDIA GPU operator's labels, as that
 * operator would have put them.
 */
export interface DevHardware {
  tee?: {
    kind: TeeKind;
    /** Default: every worker. */
    nodes?: readonly string[];
    /** Key slots per TEE node (tdx.intel.com/keys or sev-snp.amd.com/esids); default 4. */
    keySlots?: number;
  };
  gpuNodes?: readonly string[];
  /** The ClusterVersion's version; default DEFAULT_CLUSTER_VERSION. */
  clusterVersion?: string;
}

/** The newest minimum the product documentation lists (4.21.9: GPUs in kata VMs too). */
export const DEFAULT_CLUSTER_VERSION = '4.21.9';
export const DEFAULT_KEY_SLOTS = 4;
export const TEE_KINDS: readonly TeeKind[] = ['tdx', 'snp'];

/** Whether this node has the TEE (workers by default). */
export const hasTee = (hw: DevHardware, name: string, role: 'master' | 'worker'): boolean =>
  !!hw.tee && (hw.tee.nodes ? hw.tee.nodes.includes(name) : role === 'worker');

/** What a node registers with: its hardware, and the GPU operator's labels on a GPU node. */
export function nodeHardware(hw: DevHardware, name: string, role: 'master' | 'worker') {
  const annotations: Record<string, string> = {};
  if (hw.tee && hasTee(hw, name, role))
    annotations[CPU_SECURITY_ANNOTATION] = teeHardware(hw.tee.kind, hw.tee.keySlots ?? DEFAULT_KEY_SLOTS);
  const labels: Record<string, string> = hw.gpuNodes?.includes(name) ? { ...NVIDIA_GPU_NODE_LABELS } : {};
  return { annotations, labels };
}

/** The TEE label a node is waited for, if it has one. */
export const teeLabelOf = (hw: DevHardware) => (hw.tee ? teePlatform(hw.tee.kind).label : undefined);

/** The NodeFeatureRule of the TEE (where there is one) and, on OpenShift, the ClusterVersion. */
export async function seedHardware(client: KubeClient, hw: DevHardware, openshift: boolean): Promise<void> {
  const ignoreExisting = (e: unknown) => {
    if (!isAlreadyExists(e)) throw e;
  };
  if (hw.tee) await client.create(NodeFeatureRules, teeNodeFeatureRule(hw.tee.kind)).catch(ignoreExisting);
  if (!openshift) return;
  await client
    .create(ClusterVersions, { metadata: { name: CLUSTER_VERSION_NAME }, spec: { channel: 'stable-4.20', clusterID: 'osc-dev' } })
    .catch(ignoreExisting);
  await setClusterVersion(client, hw.clusterVersion ?? DEFAULT_CLUSTER_VERSION);
}

/** What the Cluster Version Operator reports once an upgrade to `version` is under way. */
export async function setClusterVersion(client: KubeClient, version: string): Promise<void> {
  await client.patch(
    ClusterVersions,
    CLUSTER_VERSION_NAME,
    { status: { desired: { version }, history: [{ state: 'Completed', version }] } },
    { subresource: 'status' },
  );
}
