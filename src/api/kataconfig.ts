import type { KataNodePhase } from './katanode.ts';
import { apiVersionOf, type KubeObject, type OwnerReference, objectName, type ResourceType } from './meta.ts';
import { KATACONFIG_GROUP, LOG_LEVELS } from './names.ts';
import { type Extra, type Infer, s } from './schema.ts';

/**
 * The KataConfig API (docs/kataconfig.md). These definitions are the single source of truth: the TypeScript types
 * below are inferred from them, and crds.ts turns them into the CRD's validation schema.
 */

const labelValue = s.string({ maxLength: 63, pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$' });

/**
 * A label key as the API server accepts it on a node: an optional DNS-subdomain prefix (at most 253
 * characters) and '/', then a name of at most 63 characters. A selector key that no node can carry would
 * select nothing, so the CRD refuses it with a message naming the field (see docs/kataconfig.md).
 */
export const LABEL_KEY_REGEX =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
const labelKeyRule = (expr: string) => `${expr}.matches('${LABEL_KEY_REGEX}')`;
const LABEL_KEY_HINT =
  'a valid label key: an optional DNS subdomain prefix and "/", then at most 63 characters of letters, digits, "-", "_" or "." that begin and end with a letter or digit (e.g. node-role.kubernetes.io/kata-oc or custom-kata)';

export const labelSelectorRequirementSchema = s.object(
  {
    key: s.string({ description: 'The label key that the selector applies to.', minLength: 1, maxLength: 317 }),
    operator: s.enum(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const, {
      description: 'How the key relates to the values: In, NotIn, Exists or DoesNotExist.',
    }),
    values: s.array(labelValue, {
      description: 'Label values: required and non-empty for In and NotIn, absent for Exists and DoesNotExist.',
    }),
  },
  {
    required: ['key', 'operator'],
    'x-kubernetes-validations': [
      { rule: labelKeyRule('self.key'), fieldPath: '.key', message: `key must be ${LABEL_KEY_HINT}` },
      {
        rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : true",
        message: 'values must be a non-empty list when operator is In or NotIn: list the label values to match',
      },
      {
        rule: "self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : true",
        message: 'values must be empty when operator is Exists or DoesNotExist: remove values',
      },
    ],
  },
);

export const labelSelectorSchema = (extra: Extra = {}) =>
  s.object(
    {
      matchLabels: s.map(labelValue, {
        description: 'Nodes must carry every one of these labels with exactly this value.',
        maxProperties: 64,
        'x-kubernetes-validations': [{ rule: `self.all(k, ${labelKeyRule('k')})`, message: `every key must be ${LABEL_KEY_HINT}` }],
      }),
      matchExpressions: s.array(labelSelectorRequirementSchema, {
        description: 'Label selector requirements; all must hold.',
        maxItems: 64,
      }),
    },
    { 'x-kubernetes-map-type': 'atomic', ...extra },
  );

export const kataConfigSpecSchema = s.object(
  {
    checkNodeEligibility: s.boolean({
      description:
        'Install only on nodes labelled feature.node.kubernetes.io/runtime.kata=true (by Node Feature Discovery or by hand). Not used with peer pods.',
      default: false,
    }),
    kataConfigPoolSelector: labelSelectorSchema({ description: 'Which worker nodes get kata. Absent: all workers.', nullable: true }),
    logLevel: s.enum(LOG_LEVELS, { description: 'CRI-O log level on the kata nodes.', default: 'info' }),
    enablePeerPods: s.boolean({ description: 'Run pod VMs in the cloud (peer pods, runtime class kata-remote).', default: false }),
  },
  { description: 'KataConfig installs the Kata Containers runtime on the selected worker nodes.' },
);

export const conditionSchema = s.object(
  {
    type: s.string({ maxLength: 316 }),
    status: s.enum(['True', 'False', 'Unknown'] as const),
    reason: s.string({ maxLength: 1024 }),
    message: s.string({ maxLength: 32768 }),
    lastTransitionTime: s.string({ format: 'date-time' }),
    observedGeneration: s.integer({ minimum: 0 }),
  },
  { required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
);

const nodeList = (description: string) => s.array(s.string(), { description });

export const kataNodesSchema = s.object(
  {
    nodeCount: s.integer({ description: 'Nodes selected for kata (0 while uninstalling).' }),
    readyNodeCount: s.integer({ description: 'Nodes where kata is installed.' }),
    installed: nodeList('Nodes where kata is installed.'),
    installing: nodeList('Nodes installing kata now (rebooting).'),
    waitingToInstall: nodeList('Nodes waiting for their turn to install kata.'),
    failedToInstall: nodeList('Nodes whose installation failed.'),
    uninstalling: nodeList('Nodes removing kata now (rebooting).'),
    waitingToUninstall: nodeList('Nodes waiting for their turn to remove kata.'),
    failedToUninstall: nodeList('Nodes whose removal of kata failed.'),
  },
  { required: ['nodeCount', 'readyNodeCount'] },
);

export const kataConfigStatusSchema = s.object({
  conditions: s.array(conditionSchema, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  kataNodes: kataNodesSchema,
  runtimeClasses: s.array(s.string(), { description: 'RuntimeClasses this operator created.' }),
  uninstallStarted: s.boolean({
    description:
      'Set once the KataConfig is being deleted and no pod uses its RuntimeClasses any more: kata is leaving the nodes, and the peer-pod parts may go.',
  }),
});

export type KataConfigSpec = Infer<typeof kataConfigSpecSchema>;
export type KataNodes = Infer<typeof kataNodesSchema>;
/** The names of the kataNodes lists (every field but the two counts). */
export type KataNodeListName = Exclude<keyof KataNodes, 'nodeCount' | 'readyNodeCount'>;

/**
 * The kataNodes lists in the order every presentation shows them (`osc status`, must-gather, the console,
 * the metrics), each with the KataNode phase that puts a node in it and its name in words.
 */
export const KATA_NODE_LISTS = [
  { list: 'installed', phase: 'Installed', words: 'installed' },
  { list: 'installing', phase: 'Installing', words: 'installing' },
  { list: 'waitingToInstall', phase: 'WaitingToInstall', words: 'waiting to install' },
  { list: 'failedToInstall', phase: 'FailedToInstall', words: 'failed to install' },
  { list: 'uninstalling', phase: 'Uninstalling', words: 'uninstalling' },
  { list: 'waitingToUninstall', phase: 'WaitingToUninstall', words: 'waiting to uninstall' },
  { list: 'failedToUninstall', phase: 'FailedToUninstall', words: 'failed to uninstall' },
] as const satisfies readonly { list: KataNodeListName; phase: KataNodePhase; words: string }[];
export type KataConfigStatus = Infer<typeof kataConfigStatusSchema>;
export type KataCondition = Infer<typeof conditionSchema>;

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

/** The KataConfig's condition types the peer pods controller owns (docs/peerpods.md). */
export const CONFIG_VALID = 'PeerPodsConfigValid';
export const IMAGE_JOB_RUNNING = 'PodVMImageJobRunning';
export const IMAGE_JOB_COMPLETED = 'PodVMImageJobCompleted';
export const IMAGE_JOB_FAILED = 'PodVMImageJobFailed';
/** True while cloud-api-adaptor pods run an older pod template than osc-caa-ds's (absent otherwise). */
export const ADAPTOR_OUTDATED = 'PeerPodsAdaptorOutdated';
export const PEERPODS_CONDITIONS = [CONFIG_VALID, IMAGE_JOB_RUNNING, IMAGE_JOB_COMPLETED, IMAGE_JOB_FAILED, ADAPTOR_OUTDATED] as const;
export const IMAGE_CONDITIONS = [IMAGE_JOB_RUNNING, IMAGE_JOB_COMPLETED, IMAGE_JOB_FAILED] as const;

export type InProgressReason =
  | 'Installing'
  | 'Updating'
  | 'Uninstalling'
  | 'Failed'
  | 'BlockedByExistingKataPods'
  | 'Ignored'
  /** The confidential gate is on and OpenShift is older than confidential containers need (src/api/confidential.ts). */
  | 'UnsupportedOCPVersion'
  | '';

/** The InProgress condition's text (docs/kataconfig.md, "The InProgress condition"). `rt` is kata or kata-remote. */
export const messages = {
  installing: (rt: string) => `Performing initial installation of ${rt} on cluster`,
  updating: () => 'Adding and/or removing kata-enabled nodes',
  uninstalling: (rt: string) => `Removing ${rt} from cluster`,
  failed: (node: string, error: string) => `Node ${node} Degraded: ${error}`,
  /** Names the RuntimeClass(es) the blocking pods use, so that a search by runtimeClassName finds them. */
  blocked: (rts: readonly string[]) =>
    `Existing pods using ${rts.map((r) => `"${r}"`).join(' and ')} RuntimeClass${rts.length > 1 ? 'es' : ''} found. Please delete the pods manually for KataConfig deletion to proceed`,
  listPodsFailed: (error: string) => `Failed to list kata pods: ${error}`,
  noEligibleNodes: () => 'no Nodes with required labels found. Is NFD running?',
  noMatchingNodes: () => 'no worker Nodes match kataConfigPoolSelector: label the nodes that should run kata, or change the selector',
  duplicate: () => 'A KataConfig instance already exists, refusing to create a duplicate',
  /** enablePeerPods on a platform without peer pods (docs/kubernetes.md). */
  peerPodsUnsupported: (platform: string) =>
    `enablePeerPods: peer pods are supported on OpenShift only, and this cluster is ${platform}: set enablePeerPods to false (kata runs on the nodes themselves)`,
  ignored: (active: string) =>
    `A KataConfig instance already exists ("${active}"): this one is ignored, since only one may exist. Delete it`,
};

/**
 * An owner reference to the KataConfig, for what osc makes on its behalf. Informational: osc deletes
 * everything itself on uninstall (a cluster without a garbage collector must end up clean too).
 */
export const kataConfigOwner = (kc: KataConfig, controller: boolean): OwnerReference => ({
  apiVersion: apiVersionOf(KataConfigs),
  kind: 'KataConfig',
  name: objectName(kc),
  uid: kc.metadata.uid ?? '',
  controller,
  blockOwnerDeletion: false,
});

/**
 * The KataConfig osc acts on. Only one may exist (the webhook refuses a second); should another slip
 * through (webhook down, or created before the operator ran), the oldest wins and the others are ignored.
 */
export function activeKataConfig(all: readonly KataConfig[]): KataConfig | undefined {
  let active: KataConfig | undefined;
  for (const k of all) {
    if (!active) active = k;
    else {
      const [a, b] = [k.metadata.creationTimestamp ?? '', active.metadata.creationTimestamp ?? ''];
      if (a < b || (a === b && objectName(k) < objectName(active))) active = k;
    }
  }
  return active;
}
