import type { ResourceType } from '../kube/client.ts';
import type { Condition, KubeObject, LabelSelector } from '../kube/types.ts';
import { KATACONFIG_GROUP, type LogLevel } from './names.ts';

/** The KataConfig API (SPEC §3). The CRD schema in crds.ts is generated from the same definitions. */
export interface KataConfigSpec {
  checkNodeEligibility?: boolean;
  kataConfigPoolSelector?: LabelSelector | null;
  logLevel?: LogLevel;
  enablePeerPods?: boolean;
}

export interface KataNodes {
  nodeCount: number;
  readyNodeCount: number;
  installed?: string[];
  installing?: string[];
  waitingToInstall?: string[];
  failedToInstall?: string[];
  uninstalling?: string[];
  waitingToUninstall?: string[];
  failedToUninstall?: string[];
}

export interface KataConfigStatus {
  conditions?: Condition[];
  kataNodes?: KataNodes;
  runtimeClasses?: string[];
}

export interface KataConfig extends KubeObject {
  spec?: KataConfigSpec;
  status?: KataConfigStatus;
}

export const KataConfigs: ResourceType<KataConfig> = {
  group: KATACONFIG_GROUP,
  version: 'v1',
  plural: 'kataconfigs',
  kind: 'KataConfig',
  namespaced: false,
};

export const IN_PROGRESS = 'InProgress';

export type InProgressReason = 'Installing' | 'Updating' | 'Uninstalling' | 'Failed' | 'BlockedByExistingKataPods' | '';

/** The InProgress condition's text (SPEC §3 table; seed 000). `rt` is kata or kata-remote. */
export const messages = {
  installing: (rt: string) => `Performing initial installation of ${rt} on cluster`,
  updating: () => 'Adding and/or removing kata-enabled nodes',
  uninstalling: (rt: string) => `Removing ${rt} from cluster`,
  failed: (node: string, error: string) => `Node ${node} Degraded: ${error}`,
  blocked: (rt: string) =>
    `Existing pods using "${rt}" RuntimeClass found. Please delete the pods manually for KataConfig deletion to proceed`,
  listPodsFailed: (error: string) => `Failed to list kata pods: ${error}`,
  noEligibleNodes: () => 'no Nodes with required labels found. Is NFD running?',
  duplicate: () => 'A KataConfig instance already exists, refusing to create a duplicate',
};
