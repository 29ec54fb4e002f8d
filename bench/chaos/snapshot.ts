/**
 * What the chaos run compares with the model: the cluster as the API server and the dev cluster's caches show
 * it, the platform's part as that platform has it.
 */
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { KataNodes } from '../../src/api/katanode.ts';
import {
  CAA_DAEMONSET,
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  KATA_POOL,
  MONITOR_DAEMONSET,
  OPERATOR_NAMESPACE,
  PEER_POD_CONFIG,
  PEER_PODS_CM,
} from '../../src/api/names.ts';
import { ContainerRuntimeConfigs, MachineConfigs } from '../../src/api/openshift.ts';
import { PeerPodConfigs } from '../../src/api/peerpodconfig.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ConfigMaps, DaemonSets, Jobs, Pods, RuntimeClasses, ServiceAccounts, Services } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { INSTALLER_NAME } from '../../src/platform/kubernetes/katadeploy.ts';
import type { Snapshot } from './expected.ts';

const NS = OPERATOR_NAMESPACE;

export async function takeSnapshot(dev: DevCluster, KC: string): Promise<Snapshot> {
  const c = dev.client;
  const ns = { namespace: NS };
  const [kataConfig, rcs, monitor, kataNodes] = await Promise.all([
    c.find(KataConfigs, KC),
    c.list(RuntimeClasses),
    c.find(DaemonSets, MONITOR_DAEMONSET, NS),
    c.list(KataNodes),
  ]);
  const orphans: string[] = [];
  if (!kataConfig) {
    const owned = (o: KubeObject) => o.metadata.ownerReferences?.some((ref) => ref.kind === 'KataConfig');
    const openshift = dev.distribution === 'openshift';
    const kinds = [
      ['DaemonSet', () => c.list(DaemonSets, ns)],
      ['Service', () => c.list(Services, ns)],
      ['ServiceAccount', () => c.list(ServiceAccounts, ns)],
      ['Job', () => c.list(Jobs, ns)],
      ['ConfigMap', () => c.list(ConfigMaps, ns)],
      ...(openshift
        ? ([
            ['MachineConfig', () => c.list(MachineConfigs)],
            ['ContainerRuntimeConfig', () => c.list(ContainerRuntimeConfigs)],
          ] as const)
        : []),
      ['RuntimeClass', () => c.list(RuntimeClasses)],
      ['KataNode', () => c.list(KataNodes)],
    ] as const;
    const lists = await Promise.all(kinds.map(([, list]) => list()));
    for (const [i, [kind]] of kinds.entries())
      for (const o of (lists[i]?.items ?? []) as KubeObject[])
        if (owned(o)) orphans.push(`${kind} ${[o.metadata.namespace, o.metadata.name].filter(Boolean).join('/')}`);
  }
  const common = {
    kataConfig,
    runtimeClasses: rcs.items.map((x) => x.metadata.name ?? '').filter((n) => n === 'kata' || n === 'kata-remote'),
    nodes: dev.informers.nodes.list(),
    monitor: !!monitor,
    kataNodes: Object.fromEntries(kataNodes.items.map((k) => [k.metadata.name ?? '', k.status?.phase])),
    orphans,
  };
  if (dev.distribution === 'kubernetes') {
    const [installer, pods] = await Promise.all([
      c.find(DaemonSets, INSTALLER_NAME, NS),
      c.list(Pods, { namespace: NS, labelSelector: `name=${INSTALLER_NAME}` }),
    ]);
    return { ...common, kubernetes: { installer: !!installer, installerPods: pods.items } };
  }
  const [crc, caa, ppc, jobs, cm] = await Promise.all([
    c.find(ContainerRuntimeConfigs, CRIO_CONFIG),
    c.find(DaemonSets, CAA_DAEMONSET, NS),
    c.find(PeerPodConfigs, PEER_POD_CONFIG, NS),
    c.list(Jobs, ns),
    c.get(ConfigMaps, PEER_PODS_CM, NS),
  ]);
  return {
    ...common,
    openshift: {
      machineConfig: !!dev.informers.machineConfigs.get(EXTENSION_MACHINE_CONFIG),
      kataPool: dev.informers.pools.get(KATA_POOL),
      workerPool: dev.informers.pools.get('worker'),
      crioLogLevel: crc
        ? String((crc.spec as { containerRuntimeConfig?: { logLevel?: string } }).containerRuntimeConfig?.logLevel)
        : undefined,
      caaDaemonSet: !!caa,
      peerPodConfig: !!ppc,
      jobs: jobs.items.map((j) => j.metadata.name ?? ''),
      amiId: cm.data?.PODVM_AMI_ID ?? '',
      cloudImages: [...dev.cloud.images.keys()],
    },
  };
}
