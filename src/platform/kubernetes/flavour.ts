import type { Node } from '../../kube/resources.ts';

/**
 * Which Kubernetes the cluster is, as kata-deploy's `K8S_DISTRIBUTION` (its chart's `k8sDistribution`) names
 * it: k3s, rke2, k0s and microk8s embed containerd and keep its configuration and socket in their own
 * places, so kata-deploy must be told, and must be given the right directory to mount at /etc/containerd.
 */
export type KubernetesFlavour = 'k8s' | 'k3s' | 'rke2' | 'k0s' | 'microk8s';

/** The host directory kata-deploy mounts at /etc/containerd/ (its chart's containerdConfPath). */
export const CONTAINERD_CONFIG_DIR: Record<KubernetesFlavour, string> = {
  k8s: '/etc/containerd/',
  k3s: '/var/lib/rancher/k3s/agent/etc/containerd/',
  rke2: '/var/lib/rancher/rke2/agent/etc/containerd/',
  k0s: '/etc/k0s/',
  microk8s: '/var/snap/microk8s/current/args/',
};

/** containerd's CRI socket on the node (its chart's containerdRuntimeSocket). */
export const CONTAINERD_SOCKET: Record<KubernetesFlavour, string> = {
  k8s: '/run/containerd/containerd.sock',
  k3s: '/run/k3s/containerd/containerd.sock',
  rke2: '/run/k3s/containerd/containerd.sock',
  k0s: '/run/k0s/containerd.sock',
  microk8s: '/var/snap/microk8s/common/run/containerd.sock',
};

export const CRIO_SOCKET = '/run/crio/crio.sock';

/**
 * The flavour the nodes report: the kubelet's version carries k3s's, rke2's and k0s's build suffix
 * (`v1.31.4+k3s1`, `v1.31.4+rke2r1`, `v1.31.4+k0s`), microk8s labels its nodes; anything else is `k8s`.
 */
export function flavourOf(nodes: readonly Node[]): KubernetesFlavour {
  for (const n of nodes) {
    if (n.metadata.labels?.['microk8s.io/cluster'] !== undefined) return 'microk8s';
    const kubelet = n.status?.nodeInfo?.kubeletVersion ?? '';
    const suffix = /\+(k3s|rke2|k0s)/.exec(kubelet)?.[1] as KubernetesFlavour | undefined;
    if (suffix) return suffix;
  }
  return 'k8s';
}

/**
 * The CRI socket of the nodes' runtime: CRI-O's where they report `cri-o://`, else containerd's where the
 * flavour keeps it. A mixed set of nodes gets the runtime most of them run.
 */
export function runtimeSocketOf(nodes: readonly Node[]): string {
  const crio = nodes.filter((n) => /^cri-?o:/.test(n.status?.nodeInfo?.containerRuntimeVersion ?? '')).length;
  const reporting = nodes.filter((n) => n.status?.nodeInfo?.containerRuntimeVersion).length;
  if (reporting === 0 || crio * 2 >= reporting) return CRIO_SOCKET;
  return CONTAINERD_SOCKET[flavourOf(nodes)];
}
