import { MC_ROLE_LABEL, POOL_LABEL_PREFIX, WORKER_ROLE_LABEL } from '../../api/names.ts';
import type { Infrastructure, MachineConfig, MachineConfigPool } from '../../api/openshift.ts';
import { CONTROLLER_VERSION, GENERATED_BY_CONTROLLER_ANNOTATION, IGNITION_SPEC_VERSION } from '../mco/index.ts';

// What the OpenShift installer and the MCO put on every cluster.

const dataUrl = (s: string) => `data:text/plain;charset=utf-8;base64,${Buffer.from(s).toString('base64')}`;
const file = (path: string, contents: string, mode = 0o644) => ({ path, mode, overwrite: true, contents: { source: dataUrl(contents) } });

/** The base MachineConfigs of a role, named as on a real cluster, so that pools have something to render. */
export function baseMachineConfigs(role: 'master' | 'worker'): MachineConfig[] {
  const generated = { [GENERATED_BY_CONTROLLER_ANNOTATION]: CONTROLLER_VERSION };
  const labels = { [MC_ROLE_LABEL]: role };
  const ignition = { version: IGNITION_SPEC_VERSION };
  const mc = (name: string, config: Record<string, unknown>, annotations: Record<string, string> = generated): MachineConfig => ({
    metadata: { name, labels, annotations },
    spec: { config: { ignition, ...config }, extensions: [], fips: false, kernelArguments: [], kernelType: '', osImageURL: '' },
  });
  return [
    mc(`00-${role}`, {
      storage: {
        files: [
          file('/etc/kubernetes/kubelet-ca.crt', '# the kubelet client CA bundle\n'),
          file('/etc/NetworkManager/conf.d/99-osc-dev.conf', `[main]\n# ${role} node network configuration\n`),
          file('/etc/sysctl.d/forward.conf', 'net.ipv4.ip_forward = 1\n'),
        ],
      },
      systemd: { units: [{ name: 'machine-config-daemon-firstboot.service', enabled: true }] },
    }),
    mc(`01-${role}-container-runtime`, {
      storage: {
        files: [
          file('/etc/crio/crio.conf.d/00-default', '[crio]\n  [crio.runtime]\n    log_level = "info"\n    default_runtime = "crun"\n'),
        ],
      },
    }),
    mc(`01-${role}-kubelet`, {
      storage: {
        files: [file('/etc/kubernetes/kubelet.conf', `kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n# ${role}\n`)],
      },
      systemd: { units: [{ name: 'kubelet.service', enabled: true }] },
    }),
    mc(`99-${role}-generated-registries`, {
      storage: {
        files: [file('/etc/containers/registries.conf', 'unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]\n')],
      },
    }),
    mc(
      `99-${role}-ssh`,
      { passwd: { users: [{ name: 'core', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOscDevClusterKey osc-dev'] }] } },
      {},
    ),
  ];
}

/** The built-in `master` and `worker` pools. */
export function basePools(): MachineConfigPool[] {
  const builtIn = 'machineconfiguration.openshift.io/mco-built-in';
  return [
    {
      metadata: {
        name: 'master',
        labels: {
          [builtIn]: '',
          'operator.machineconfiguration.openshift.io/required-for-upgrade': '',
          [`${POOL_LABEL_PREFIX}master`]: '',
        },
      },
      spec: {
        machineConfigSelector: { matchLabels: { [MC_ROLE_LABEL]: 'master' } },
        nodeSelector: { matchLabels: { 'node-role.kubernetes.io/master': '' } },
        paused: false,
      },
    },
    {
      metadata: { name: 'worker', labels: { [builtIn]: '', [`${POOL_LABEL_PREFIX}worker`]: '' } },
      spec: {
        machineConfigSelector: { matchLabels: { [MC_ROLE_LABEL]: 'worker' } },
        nodeSelector: { matchLabels: { [WORKER_ROLE_LABEL]: '' } },
        paused: false,
      },
    },
  ];
}

/**
 * The `cluster` Infrastructure as the installer writes it: the platform type (and for AWS its region), the
 * API server's URL, the topologies the node counts make, the infrastructure name, and what the simulated
 * cloud adds to the platform status.
 */
export function infrastructureOf(c: {
  platform: string;
  masters: number;
  /** Nodes that run workloads: the workers, or the masters of a compact cluster. */
  schedulable: number;
  apiserverUrl: string;
  name: string;
  awsRegion: string;
  cloudStatus: Record<string, unknown>;
}): { spec: Infrastructure['spec']; status: Infrastructure['status'] & Record<string, unknown> } {
  return {
    spec: { cloudConfig: { name: '' }, platformSpec: { type: c.platform } } as Infrastructure['spec'],
    status: {
      apiServerURL: c.apiserverUrl,
      apiServerInternalURI: c.apiserverUrl,
      controlPlaneTopology: c.masters >= 3 ? 'HighlyAvailable' : 'SingleReplica',
      infrastructureTopology: c.schedulable >= 2 ? 'HighlyAvailable' : 'SingleReplica',
      cpuPartitioning: 'None',
      etcdDiscoveryDomain: '',
      infrastructureName: c.name,
      platform: c.platform,
      platformStatus: {
        type: c.platform,
        ...(c.platform === 'AWS' ? { aws: { region: c.awsRegion } } : {}),
        ...c.cloudStatus,
      },
    } as Infrastructure['status'] & Record<string, unknown>,
  };
}
