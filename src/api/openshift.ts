import type { KubeObject, LabelSelector, ResourceType } from './meta.ts';

/**
 * The OpenShift API types osc reads and writes, as far as it uses them. On a real OpenShift cluster they
 * are served by the platform; the dev cluster installs them as CRDs (src/devcluster/openshift/crds.ts).
 */

export interface MachineConfig extends KubeObject {
  spec: {
    config?: { ignition?: { version?: string }; [k: string]: unknown };
    extensions?: string[];
    kernelArguments?: string[];
    kernelType?: string;
    osImageURL?: string;
    [k: string]: unknown;
  };
}

export interface PoolCondition {
  type: 'Updated' | 'Updating' | 'Degraded' | 'NodeDegraded' | 'RenderDegraded' | string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface MachineConfigPool extends KubeObject {
  spec: {
    machineConfigSelector?: LabelSelector;
    nodeSelector?: LabelSelector;
    maxUnavailable?: number | string;
    paused?: boolean;
    configuration?: { name?: string; source?: { apiVersion?: string; kind?: string; name: string }[] };
  };
  status?: {
    observedGeneration?: number;
    configuration?: { name?: string; source?: { apiVersion?: string; kind?: string; name: string }[] };
    machineCount?: number;
    updatedMachineCount?: number;
    readyMachineCount?: number;
    unavailableMachineCount?: number;
    degradedMachineCount?: number;
    conditions?: PoolCondition[];
  };
}

export interface ContainerRuntimeConfig extends KubeObject {
  spec: {
    machineConfigPoolSelector?: LabelSelector;
    containerRuntimeConfig: { logLevel?: string; pidsLimit?: number; logSizeMax?: string; [k: string]: unknown };
  };
  status?: { observedGeneration?: number; conditions?: PoolCondition[] };
}

export interface Infrastructure extends KubeObject {
  spec?: { platformSpec?: { type?: string } };
  status?: {
    /** The cluster's unique name, the prefix of what the installer and the CCO create in the cloud. */
    infrastructureName?: string;
    platform?: string;
    platformStatus?: {
      type?: string;
      aws?: { region?: string };
      azure?: { resourceGroupName?: string; networkResourceGroupName?: string; cloudName?: string };
      gcp?: { projectID?: string; region?: string };
    };
    controlPlaneTopology?: string;
    infrastructureTopology?: string;
  };
}

const MCO = 'machineconfiguration.openshift.io';
export const MachineConfigs: ResourceType<MachineConfig> = {
  group: MCO,
  version: 'v1',
  plural: 'machineconfigs',
  kind: 'MachineConfig',
  namespaced: false,
};
export const MachineConfigPools: ResourceType<MachineConfigPool> = {
  group: MCO,
  version: 'v1',
  plural: 'machineconfigpools',
  kind: 'MachineConfigPool',
  namespaced: false,
};
export const ContainerRuntimeConfigs: ResourceType<ContainerRuntimeConfig> = {
  group: MCO,
  version: 'v1',
  plural: 'containerruntimeconfigs',
  kind: 'ContainerRuntimeConfig',
  namespaced: false,
};
export const Infrastructures: ResourceType<Infrastructure> = {
  group: 'config.openshift.io',
  version: 'v1',
  plural: 'infrastructures',
  kind: 'Infrastructure',
  namespaced: false,
};

/** The cluster's API server configuration (one, named `cluster`): osc reads its TLS security profile. */
export interface APIServer extends KubeObject {
  spec?: { tlsSecurityProfile?: TLSSecurityProfile };
}
export const APIServers: ResourceType<APIServer> = {
  group: 'config.openshift.io',
  version: 'v1',
  plural: 'apiservers',
  kind: 'APIServer',
  namespaced: false,
};

/** The profiles of an APIServer's `spec.tlsSecurityProfile.type`. */
export type TLSProfileType = 'Old' | 'Intermediate' | 'Modern' | 'Custom';

/** OpenShift's TLS security profile (config.openshift.io/v1): a named profile, or a custom one. */
export interface TLSSecurityProfile {
  type?: TLSProfileType | string;
  custom?: { ciphers?: string[]; minTLSVersion?: string };
}

/** The cluster's release (one, named `version`): confidential containers on bare metal need a minimum. */
export interface ClusterVersion extends KubeObject {
  spec?: { channel?: string; clusterID?: string };
  status?: { desired?: { version?: string }; history?: { state?: string; version?: string }[] };
}
export const ClusterVersions: ResourceType<ClusterVersion> = {
  group: 'config.openshift.io',
  version: 'v1',
  plural: 'clusterversions',
  kind: 'ClusterVersion',
  namespaced: false,
};
