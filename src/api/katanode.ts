import { customResourceDefinition } from './crd.ts';
import type { CustomResourceDefinition, KubeObject, ResourceType } from './meta.ts';
import { KATACONFIG_GROUP } from './names.ts';
import { type Infer, s } from './schema.ts';

/**
 * The KataNode API (docs/kataconfig.md, "KataNode"): one cluster-scoped object per node that is or was
 * selected for kata, named after the node and owned by the KataConfig. Its status is the node's
 * configuration as assigned, active and last known good, the error that explains why assigned is not
 * active, and the node's place in the rollout. As with kataconfig.ts, these definitions are the single
 * source of truth for both the TypeScript types and the CRD's validation schema.
 */

/**
 * The node's place in the rollout: each phase is one of the KataConfig's `status.kataNodes` lists.
 * A node that is not selected and has no kata has no phase (its KataNode goes).
 */
export const KATA_NODE_PHASES = [
  'WaitingToInstall',
  'Installing',
  'Installed',
  'FailedToInstall',
  'WaitingToUninstall',
  'Uninstalling',
  'FailedToUninstall',
] as const;
export type KataNodePhase = (typeof KATA_NODE_PHASES)[number];

export const configRefSchema = s.object(
  {
    id: s.string({
      description:
        'A stable identifier of the configuration: on OpenShift the rendered MachineConfig; on Kubernetes a digest of the installer image and settings.',
      maxLength: 253,
    }),
    description: s.string({ description: 'What the configuration is, for people.', maxLength: 1024 }),
  },
  { required: ['id', 'description'] },
);

export const kataNodeStatusSchema = s.object(
  {
    phase: s.enum(KATA_NODE_PHASES, {
      description: "The node's place in the rollout: the KataConfig status.kataNodes list that names it.",
    }),
    assigned: configRefSchema,
    active: configRefSchema,
    lastKnownGood: configRefSchema,
    error: s.string({ description: 'Why assigned is not active, when that is a failure; empty when none.', maxLength: 32768 }),
    lastTransitionTime: s.string({
      format: 'date-time',
      description: 'When phase, assigned, active or error last changed.',
    }),
  },
  {
    description:
      "A node's kata configuration: the one it is assigned, the one active on it, the last known good one it falls back to, and the error that explains why assigned is not active.",
  },
);

export type ConfigRef = Infer<typeof configRefSchema>;
export type KataNodeStatus = Infer<typeof kataNodeStatusSchema>;

export interface KataNode extends KubeObject {
  spec?: Record<string, never>;
  status?: KataNodeStatus;
}

export const KataNodes: ResourceType<KataNode> = {
  group: KATACONFIG_GROUP,
  version: 'v1alpha1',
  plural: 'katanodes',
  kind: 'KataNode',
  namespaced: false,
};

/** The KataNode CRD: `kubectl get katanodes` shows the phase, the three configurations and the error. */
export function kataNodeCRD(): CustomResourceDefinition {
  return customResourceDefinition({
    group: KATACONFIG_GROUP,
    version: KataNodes.version,
    kind: 'KataNode',
    plural: KataNodes.plural,
    scope: 'Cluster',
    description: 'KataNode is the kata state of one node, named after the node; made and deleted by the operator.',
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Assigned', type: 'string', jsonPath: '.status.assigned.id' },
      { name: 'Active', type: 'string', jsonPath: '.status.active.id' },
      { name: 'Last Known Good', type: 'string', jsonPath: '.status.lastKnownGood.id' },
      { name: 'Error', type: 'string', jsonPath: '.status.error' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: s.object({}, { description: 'Empty: the operator writes only the status.' }),
    status: kataNodeStatusSchema,
    // A report with no spec, written by the operator alone: made with its status in one request, and each
    // change one request, where a status subresource would take two to make one.
    statusSubresource: false,
  });
}

/** How long a node runs its assigned configuration without error before it becomes the last known good one (as the kubelet did). */
export const DEFAULT_SOAK_MS = 10 * 60_000;
