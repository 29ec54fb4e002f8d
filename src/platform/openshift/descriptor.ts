import { CONFIDENTIAL_MACHINE_CONFIG, CRIO_CONFIG, EXTENSION_MACHINE_CONFIG, KATA_POOL } from '../../api/names.ts';
import { MachineConfigs } from '../../api/openshift.ts';
import type { PlatformDescriptor } from '../platform.ts';

/** The API group that tells OpenShift (with its Machine Config Operator) from any other Kubernetes. */
export const MACHINE_CONFIG_GROUP = 'machineconfiguration.openshift.io';
const READ = ['get', 'list', 'watch'];

/** OpenShift: kata arrives through the Machine Config Operator (./platform.ts). It has no settings of its own. */
export const openshift: PlatformDescriptor<Record<string, never>> = {
  name: 'openshift',
  summary: 'the Machine Config Operator',
  recognises: (groups) => groups.has(MACHINE_CONFIG_GROUP),
  rbac: {
    // Machine Config Operator objects: all pools are read (the worker/master pool's rendered config decides
    // the node states); only kata-oc, our two MachineConfigs (the extension, the confidential handlers) and
    // our ContainerRuntimeConfig are written.
    cluster: [
      { apiGroups: [MACHINE_CONFIG_GROUP], resources: ['machineconfigpools'], verbs: READ },
      {
        apiGroups: [MACHINE_CONFIG_GROUP],
        resources: ['machineconfigpools', 'machineconfigs', 'containerruntimeconfigs'],
        verbs: ['create'],
      },
      { apiGroups: [MACHINE_CONFIG_GROUP], resources: ['machineconfigpools'], verbs: ['patch', 'delete'], resourceNames: [KATA_POOL] },
      {
        apiGroups: [MACHINE_CONFIG_GROUP],
        resources: ['machineconfigs'],
        verbs: [...READ, 'patch', 'delete'],
        resourceNames: [EXTENSION_MACHINE_CONFIG, CONFIDENTIAL_MACHINE_CONFIG],
      },
      {
        apiGroups: [MACHINE_CONFIG_GROUP],
        resources: ['containerruntimeconfigs'],
        verbs: [...READ, 'patch', 'delete'],
        resourceNames: [CRIO_CONFIG],
      },
      // The cluster's TLS security profile, followed by the webhook and metrics servers (a watch by name).
      { apiGroups: ['config.openshift.io'], resources: ['apiservers'], verbs: [...READ], resourceNames: ['cluster'] },
      // The cluster's release: confidential containers on bare metal need a minimum (watched by name).
      { apiGroups: ['config.openshift.io'], resources: ['clusterversions'], verbs: [...READ], resourceNames: ['version'] },
      // The cloud the cluster runs on, for the osc_setup_info metric (a watch by name).
      { apiGroups: ['config.openshift.io'], resources: ['infrastructures'], verbs: [...READ], resourceNames: ['cluster'] },
      // The cluster's credentials mode (Mint, Passthrough, Manual), for peer pods' cloud credentials (a watch by name).
      { apiGroups: ['operator.openshift.io'], resources: ['cloudcredentials'], verbs: [...READ], resourceNames: ['cluster'] },
    ],
    namespace: [],
  },
  // deploymentMode DaemonSet runs kata-deploy's platform here: its RBAC (and kata-deploy's identity) ships too.
  modePlatforms: ['kubernetes'],
  // Our extension MachineConfig, made by a KataConfig, puts kata on the nodes (a cluster without the
  // MachineConfig API answers 404: nothing of ours is there).
  async inUse(client) {
    const mc = await client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG);
    return !!mc?.metadata.ownerReferences?.some((o) => o.kind === 'KataConfig');
  },
  packaging: 'olm',
  devCluster: true,
  cluster: {
    systemPriorityClass: 'system-cluster-critical',
    // The API server runs on the host network, which OVN-Kubernetes puts in the namespaces of this policy group.
    apiServerPeers: [
      { namespaceSelector: { matchLabels: { 'policy-group.network.openshift.io/host-network': '' } } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-kube-apiserver' } } },
    ],
    securityContextConstraints: true,
    cloudCredentialOperator: true,
    prometheusOperator: true,
    clusterConfig: true,
    nodeFeatureDiscovery: true,
    // The sandboxed-containers extension names its CRI-O handlers itself (kata-snp, kata-tdx, ...).
    runtimeHandler: (extension) => extension,
  },
  parseSettings(raw) {
    const [unknown] = Object.keys(raw);
    if (unknown !== undefined) throw new Error(`the openshift platform has no setting ${unknown}: leave it out on OpenShift`);
    return {};
  },
  async create(opts) {
    return (await import('./platform.ts')).openShiftPlatform(opts);
  },
};
