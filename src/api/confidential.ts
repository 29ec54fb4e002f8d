/**
 * Confidential containers on bare metal: the fixed names of the product (TEE node labels, key-slot
 * resources, runtime classes and handlers, the NVIDIA GPU operator's node labels) and every text about
 * them. Names and values are those of the original operator; docs/confidential-containers.md explains them.
 */

export type TeeKind = 'tdx' | 'snp' | 'se';

export interface TeePlatform {
  kind: TeeKind;
  /** What the documentation calls it. */
  title: string;
  /** The label Node Feature Discovery puts on a node with this TEE (value "true"). */
  label: string;
  /** The extended resource counting the TEE's key slots on a node; each pod VM takes one. */
  keySlots?: string;
  /** The kata handler of `kata-cc` on OpenShift (the sandboxed-containers extension's runtime). */
  handler: string;
  /** The kata handler of `kata-cc-nvidia-gpu` on OpenShift, where the TEE supports confidential GPUs. */
  gpuHandler?: string;
  /** kata-deploy's shim for this TEE (plain Kubernetes: the handler is `kata-<shim>`). */
  shim: string;
  /** kata-deploy's shim for a confidential GPU on this TEE. */
  gpuShim?: string;
}

export const TEE_PLATFORMS: readonly TeePlatform[] = [
  {
    kind: 'tdx',
    title: 'Intel TDX',
    label: 'intel.feature.node.kubernetes.io/tdx',
    keySlots: 'tdx.intel.com/keys',
    handler: 'kata-tdx',
    gpuHandler: 'kata-tdx-nvidia-gpu',
    shim: 'qemu-tdx',
    gpuShim: 'qemu-nvidia-gpu-tdx',
  },
  {
    kind: 'snp',
    title: 'AMD SEV-SNP',
    label: 'amd.feature.node.kubernetes.io/snp',
    keySlots: 'sev-snp.amd.com/esids',
    handler: 'kata-snp',
    gpuHandler: 'kata-snp-nvidia-gpu',
    shim: 'qemu-snp',
    gpuShim: 'qemu-nvidia-gpu-snp',
  },
  { kind: 'se', title: 'IBM Secure Execution', label: 'ibm.feature.node.kubernetes.io/se', handler: 'kata-se', shim: 'qemu-se' },
];

export const teePlatform = (kind: TeeKind): TeePlatform => TEE_PLATFORMS.find((t) => t.kind === kind) as TeePlatform;

export const KATA_CC_RUNTIME_CLASS = 'kata-cc';
export const KATA_NVIDIA_GPU_RUNTIME_CLASS = 'kata-nvidia-gpu';
export const KATA_CC_NVIDIA_GPU_RUNTIME_CLASS = 'kata-cc-nvidia-gpu';
/** The handler of `kata-nvidia-gpu` on OpenShift, and kata-deploy's shim for it. */
export const KATA_NVIDIA_GPU_HANDLER = 'kata-nvidia-gpu';
export const KATA_NVIDIA_GPU_SHIM = 'qemu-nvidia-gpu';

/** Pod overheads: a confidential pod VM as a kata one (plus one key slot), a GPU pod VM larger. */
export const KATA_CC_OVERHEAD = { cpu: '250m', memory: '350Mi' };
export const KATA_NVIDIA_GPU_OVERHEAD = { cpu: '1', memory: '4096Mi' };

/** The NVIDIA GPU operator's labels on a node set up for GPUs in kata VMs (confidential computing off). */
export const NVIDIA_GPU_NODE_LABELS: Readonly<Record<string, string>> = {
  'nvidia.com/gpu.present': 'true',
  'nvidia.com/gpu.deploy.vfio-manager': 'true',
  'nvidia.com/gpu.deploy.kata-sandbox-device-plugin': 'true',
  'nvidia.com/cc.mode.state': 'off',
  'nvidia.com/cc.ready.state': 'false',
};
/** The same, with the GPU in confidential computing mode. */
export const NVIDIA_CC_GPU_NODE_LABELS: Readonly<Record<string, string>> = {
  ...NVIDIA_GPU_NODE_LABELS,
  'nvidia.com/cc.mode.state': 'on',
  'nvidia.com/cc.ready.state': 'true',
};

/**
 * The NVIDIA GPU operator's node label an administrator sets to ask for a node's GPUs to be passed to VMs
 * (the operator then deploys its VFIO manager and sandbox device plugin there, and labels the node for them).
 */
export const NVIDIA_GPU_WORKLOAD_LABEL = 'nvidia.com/gpu.workload.config';
export const NVIDIA_GPU_VM_PASSTHROUGH = 'vm-passthrough';

/**
 * On every RuntimeClass osc makes: the class goes only once no Running, Pending or Unknown pod uses it,
 * whoever deletes it (an uninstall, a feature gate turned off, an administrator, the garbage collector).
 */
export const RUNTIME_CLASS_CLEANUP_FINALIZER = 'kataconfig.openshift.io/runtime-class-cleanup';
/** The pod phases that keep a RuntimeClass: a pod in any other phase no longer needs its runtime. */
export const ACTIVE_POD_PHASES: readonly string[] = ['Running', 'Pending', 'Unknown'];

/**
 * The oldest OpenShift Container Platform release that supports OpenShift sandboxed containers 1.12
 * (product documentation, "Compatibility": 4.18.38 or later without GPU, 4.21.9 or later with GPU).
 */
export const MINIMUM_OCP_VERSION = '4.18.38';
export const MINIMUM_OCP_VERSION_GPU = '4.21.9';
/** OpenShift's ClusterVersion (config.openshift.io/v1), always named `version`. */
export const CLUSTER_VERSION_NAME = 'version';

/** The InProgress reason of a cluster too old for confidential containers (the original's). */
export const UNSUPPORTED_OCP_VERSION = 'UnsupportedOCPVersion';

const labelsOf = (kinds: readonly TeeKind[]) => kinds.map((k) => `${teePlatform(k).label}=true`).join(', ');

export const confidentialTexts = {
  /** The original's words, and which TEEs and nodes it found. */
  multipleTees: (found: readonly { kind: TeeKind; nodes: readonly string[] }[]) =>
    `multiple TEE platforms detected; only one per cluster supported (${found
      .map((f) => `${teePlatform(f.kind).title} on ${f.nodes.join(', ')}`)
      .join('; ')}): narrow kataConfigPoolSelector to the nodes of one TEE`,
  noTee: () =>
    `the confidential feature gate is on but no selected node has a TEE: no node is labelled ${labelsOf(['tdx', 'snp', 'se'])} (is Node Feature Discovery running with the TEE rules?); kata-cc is not created`,
  noTeePeerPods: () => 'no selected node has a TEE: kata-cc is not created on bare metal (confidential peer pods are unaffected)',
  unsupportedVersion: (version: string, minimum: string) =>
    `OpenShift version ${version} does not support confidential containers on bare metal (minimum required: ${minimum} or higher)`,
  unsupportedGpuVersion: (version: string, minimum: string) =>
    `OpenShift version ${version || '(unknown)'} does not support GPUs in kata VMs (minimum required: ${minimum} or higher): kata-nvidia-gpu and kata-cc-nvidia-gpu are not created`,
  unreadableVersion: (version: string) => `OpenShift version ${JSON.stringify(version)} cannot be read as major.minor.patch`,
  versionUnknown: () => 'the ClusterVersion "version" reports no version yet: confidential containers wait for it',
  /** A gate turned off while pods still use the class. */
  removalBlocked: (rc: string, pods: readonly string[]) =>
    `RuntimeClass ${rc} is no longer wanted but ${pods.length} pod${pods.length === 1 ? '' : 's'} still use${pods.length === 1 ? 's' : ''} it (${pods.slice(0, 5).join(', ')}${pods.length > 5 ? ', …' : ''}): delete ${pods.length === 1 ? 'it' : 'them'} for the class to go`,
  /** The runtime-class-cleanup finalizer holding a deleted class. */
  keptForPods: (rc: string, pods: readonly string[]) =>
    `RuntimeClass ${rc} is being deleted and is kept while ${pods.length} pod${pods.length === 1 ? '' : 's'} (Running, Pending or Unknown) use${pods.length === 1 ? 's' : ''} it: ${pods.slice(0, 5).join(', ')}${pods.length > 5 ? ', …' : ''}`,
  /** Nodes asked for GPUs in VMs, but none the GPU operator has prepared for them. */
  noGpuNodes: (requesting: readonly string[]) =>
    `${requesting.join(', ')} ${requesting.length === 1 ? 'is' : 'are'} labelled ${NVIDIA_GPU_WORKLOAD_LABEL}=${NVIDIA_GPU_VM_PASSTHROUGH} but no selected node carries the NVIDIA GPU operator's labels for GPUs in kata VMs (${Object.entries(
      NVIDIA_GPU_NODE_LABELS,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(
        ', ',
      )}, or the confidential ones): kata-nvidia-gpu is not created until the GPU operator has prepared a node (is it installed, with sandbox workloads enabled?)`,
  /** A GPU class osc offered whose nodes no longer carry the GPU operator's labels. */
  gpuClassWithdrawn: (rc: string) =>
    `no selected node carries the NVIDIA GPU operator's labels for ${rc} any more: it is no longer offered, and goes once no pod uses it`,
  /** A node labelled with the TEE but advertising no key slot: no kata-cc pod can be scheduled there. */
  noKeySlots: (nodes: readonly string[], resource: string) =>
    `${nodes.join(', ')} ${nodes.length === 1 ? 'has' : 'have'} the TEE label but no ${resource} in ${nodes.length === 1 ? 'its' : 'their'} allocatable resources: no kata-cc pod can run there`,
};
