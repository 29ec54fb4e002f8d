import { createHash } from 'node:crypto';
import {
  CONTROL_PLANE_ROLE_LABEL,
  MASTER_ROLE_LABEL,
  MCO_CURRENT_CONFIG,
  MCO_DESIRED_CONFIG,
  MCO_REASON,
  MCO_STATE,
  WORKER_ROLE_LABEL,
} from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/errors.ts';
import { type Node, Nodes } from '../kube/resources.ts';
import { KWOK_MANAGED } from './controlplane/kwok.ts';
import { NFD_FEATURE_LABELS_ANNOTATION, NodeFeatureDiscovery, VIRTUALIZATION_CAPABLE_ANNOTATION } from './nfd/index.ts';

/**
 * Node objects as a kubelet on Red Hat Enterprise Linux CoreOS registers them: role labels, well-known
 * labels, capacity, node info and conditions. No kubelet runs; the simulators change these objects the way
 * the real components would.
 */

export const KUBELET_VERSION = 'v1.34.4';
const OS_IMAGE = 'Red Hat Enterprise Linux CoreOS 9.6.20251015-1 (Plow)';
const KERNEL = '5.14.0-570.49.1.el9_6.x86_64';
const CRIO = 'cri-o://1.34.1-2.rhaos4.21.gitd7ddd5b.el9';
/** A kubeadm node on a current Ubuntu LTS with containerd 2.1 (docs/kubernetes.md, "Nodes of a plain cluster"). */
const PLAIN_OS_IMAGE = 'Ubuntu 24.04.3 LTS';
const PLAIN_KERNEL = '6.8.0-87-generic';
export const CONTAINERD = 'containerd://2.1.4';

export type NodeRole = 'master' | 'worker';
/**
 * The platforms the dev cluster simulates (the descriptors that say `devCluster`), and which kind of
 * cluster registers a node: OpenShift (RHCOS, CRI-O, role labels) or kubeadm (Ubuntu, containerd).
 */
export const DISTRIBUTIONS = ['openshift', 'kubernetes'] as const;
export type Distribution = (typeof DISTRIBUTIONS)[number];
export const isSimulated = (name: string): name is Distribution => (DISTRIBUTIONS as readonly string[]).includes(name);

export interface NodeInit {
  name: string;
  role: NodeRole;
  /** Default openshift. */
  distribution?: Distribution;
  /** A master that also runs workloads (compact clusters): it carries the worker role too and no taint. */
  schedulableMaster?: boolean;
  /** The node's hardware can run VMs (Node Feature Discovery will label it). */
  virtualizationCapable?: boolean;
  /** Register it with the labels NFD gives such hardware already on (a cluster where NFD has run). */
  nfdLabelled?: boolean;
  /** The rendered config the node booted with (what the Machine Config Server served it). */
  bootConfig?: string;
  /** Which address to give it: 10.0.<role>.<index+10>. */
  index?: number;
  cpu?: string;
  memory?: string;
  /** What stands for the node's hardware (e.g. its TEE, nfd/rules.ts) and labels it registers with besides. */
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}

const hex = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);
const uuid = (s: string) => {
  const h = hex(s, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/**
 * The container images a kubelet reports in a node's status: the 50 largest (its default
 * --node-status-max-images), each by digest and, for some, by tag too. On an OpenShift worker they are the
 * release payload's images (a few hundred MB each): about 10 KB of every Node object, the largest part of
 * it, which whoever caches nodes pays for.
 */
export const NODE_IMAGES = Array.from({ length: 50 }, (_, i) => {
  const digest = `quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${createHash('sha256').update(`image-${i}`).digest('hex')}`;
  return {
    names: i % 3 === 0 ? [digest, `registry.redhat.io/openshift4/ose-component-${i}-rhel9:v4.21`] : [digest],
    sizeBytes: 250_000_000 + ((i * 37_000_003) % 700_000_000),
  };
});

/** Node addresses on OpenShift's default machine network: masters 10.0.0.x, workers from 10.0.16.0 on. */
export function nodeAddress(role: NodeRole, index: number): string {
  if (role === 'master') return `10.0.0.${10 + index}`;
  return `10.0.${16 + Math.floor(index / 250)}.${2 + (index % 250)}`;
}

/**
 * The Node object a kubelet registers: labels, taints it registers with, capacity, addresses and node
 * info, and no conditions yet: kwok reports those once the node's "kubelet" runs (see
 * controlplane/kwok.ts). The kwok label puts the node under kwok's management.
 */
export function nodeObject(init: NodeInit, now = new Date()): Node {
  const node = init.distribution === 'kubernetes' ? plainNodeObject(init, now) : openshiftNodeObject(init, now);
  Object.assign((node.metadata.labels ??= {}), init.labels);
  Object.assign((node.metadata.annotations ??= {}), init.annotations);
  return node;
}

function openshiftNodeObject(init: NodeInit, now: Date): Node {
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': init.name,
    'kubernetes.io/os': 'linux',
    'node.openshift.io/os_id': 'rhcos',
    ...KWOK_MANAGED,
  };
  if (init.role === 'master') {
    labels[MASTER_ROLE_LABEL] = '';
    labels[CONTROL_PLANE_ROLE_LABEL] = '';
    if (init.schedulableMaster) labels[WORKER_ROLE_LABEL] = '';
  } else {
    labels[WORKER_ROLE_LABEL] = '';
  }
  const annotations: Record<string, string> = {
    'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    [VIRTUALIZATION_CAPABLE_ANNOTATION]: String(init.virtualizationCapable ?? true),
  };
  if (init.bootConfig) {
    annotations[MCO_CURRENT_CONFIG] = init.bootConfig;
    annotations[MCO_DESIRED_CONFIG] = init.bootConfig;
    annotations[MCO_STATE] = 'Done';
    annotations[MCO_REASON] = '';
  }
  if (init.nfdLabelled) {
    const features = NodeFeatureDiscovery.featureLabels({ metadata: { annotations } });
    Object.assign(labels, features);
    if (Object.keys(features).length) annotations[NFD_FEATURE_LABELS_ANNOTATION] = Object.keys(features).sort().join(',');
  }
  const cpu = init.cpu ?? (init.role === 'master' ? '8' : '16');
  const memory = init.memory ?? (init.role === 'master' ? '32Gi' : '64Gi');
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: init.name, labels, annotations },
    spec: {
      providerID: `none://${init.name}`,
      ...(init.role === 'master' && !init.schedulableMaster ? { taints: [{ key: MASTER_ROLE_LABEL, effect: 'NoSchedule' }] } : {}),
    },
    status: {
      capacity: { cpu, memory, pods: '250', 'ephemeral-storage': '125293548Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' },
      allocatable: {
        cpu: `${Number(cpu) * 1000 - 500}m`,
        memory,
        pods: '250',
        'ephemeral-storage': '114396791822',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
      },
      ...identity(init, now, { kernelVersion: KERNEL, osImage: OS_IMAGE, containerRuntimeVersion: CRIO }),
      images: NODE_IMAGES,
    },
  };
}

/** What a kubelet reports about its machine: addresses, and node info for the given OS and runtime. */
function identity(
  init: NodeInit,
  now: Date,
  os: { kernelVersion: string; osImage: string; containerRuntimeVersion: string },
): Pick<NonNullable<Node['status']>, 'addresses' | 'nodeInfo'> {
  return {
    addresses: [
      { type: 'InternalIP', address: nodeAddress(init.role, init.index ?? 0) },
      { type: 'Hostname', address: init.name },
      // Every simulated node's kubelet API is kwok's server on this host (the API server prefers this type).
      { type: 'InternalDNS', address: 'localhost' },
    ],
    nodeInfo: {
      machineID: hex(`machine-${init.name}`, 32),
      systemUUID: uuid(`system-${init.name}`),
      bootID: uuid(`boot-${init.name}-${now.getTime()}`),
      ...os,
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
  };
}

/**
 * A node as kubeadm's kubelet registers it: control-plane nodes carry only the control-plane role label and
 * taint, workers no role label at all; containerd is the runtime. No OpenShift or MCO annotation.
 */
function plainNodeObject(init: NodeInit, now: Date): Node {
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': init.name,
    'kubernetes.io/os': 'linux',
    ...KWOK_MANAGED,
  };
  if (init.role === 'master') {
    labels[CONTROL_PLANE_ROLE_LABEL] = '';
    labels['node.kubernetes.io/exclude-from-external-load-balancers'] = '';
  }
  // Its hardware (a TEE) and labels another operator put on (the NVIDIA GPU operator's).
  Object.assign(labels, init.labels);
  const cpu = init.cpu ?? (init.role === 'master' ? '8' : '16');
  const memory = init.memory ?? (init.role === 'master' ? '32Gi' : '64Gi');
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: init.name,
      labels,
      annotations: {
        'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///var/run/containerd/containerd.sock',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        ...init.annotations,
      },
    },
    spec: init.role === 'master' && !init.schedulableMaster ? { taints: [{ key: CONTROL_PLANE_ROLE_LABEL, effect: 'NoSchedule' }] } : {},
    status: {
      capacity: { cpu, memory, pods: '110', 'ephemeral-storage': '102626232Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' },
      allocatable: { cpu, memory, pods: '110', 'ephemeral-storage': '94580335255', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' },
      ...identity(init, now, { kernelVersion: PLAIN_KERNEL, osImage: PLAIN_OS_IMAGE, containerRuntimeVersion: CONTAINERD }),
      // containerd 2.x reports its handlers (the default one and runc) and the kubelet lists them.
      runtimeHandlers: ['', 'runc'].map((name) => ({ name, features: { recursiveReadOnlyMounts: true, userNamespaces: true } })),
    },
  } as Node;
}

/**
 * Registers a node the way a kubelet does: creates the object with its status (the API server keeps a
 * Node's status on create). The NodeTaint admission plugin gives it the not-ready taint, which the
 * controller-manager's node lifecycle controller removes once kwok reports it Ready. An existing node is
 * left as it is.
 */
export async function registerNode(client: KubeClient, init: NodeInit): Promise<Node> {
  try {
    return await client.create(Nodes, nodeObject(init));
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    return client.get(Nodes, init.name);
  }
}
