import { customResourceDefinition } from './crd.ts';
import type { CustomResourceDefinition, KubeObject, ResourceType } from './meta.ts';
import { type Infer, type Schema, s } from './schema.ts';

/**
 * The PeerPodConfig API (docs/peerpods.md): `peerpodconfig-openshift` in the operator namespace says how many pod
 * VMs each kata node may run (`spec.limit`, advertised as the extended resource `kata.peerpods.io/vm`).
 * Same group, version, kind and fields as the original operator's CRD, so that the documented
 * `oc patch peerpodconfig peerpodconfig-openshift ... -p '{"spec":{"limit":"<n>"}}'` works as written.
 */

export const PEERPODCONFIG_GROUP = 'confidentialcontainers.org';
export const PEERPODCONFIG_VERSION = 'v1alpha1';

/**
 * `limit` is a string in the original API (and in the documented patch), but an administrator may well write
 * a number: both are accepted, and the API server refuses anything that is not a whole number from 1 up.
 */
const limitSchema: Schema<string | number> = {
  openapi: {
    'x-kubernetes-int-or-string': true,
    description:
      'The maximum number of peer pod VMs per node, exposed as the extended resource kata.peerpods.io/vm on each kata node. ' +
      'A whole number, 1 or more, as a string ("10") or an integer.',
  },
};

/**
 * The limit's rule sits on spec, not on limit itself: the API server reports a CEL failure with the type
 * of the schema that holds the rule as the "value", and an int-or-string has none (`Invalid value: ""`).
 * From spec, with fieldPath, the error names spec.limit and the message quotes the value given.
 */
const limitRule = {
  rule: "!has(self.limit) || (type(self.limit) == int ? self.limit >= 1 : string(self.limit).matches('^[1-9][0-9]{0,8}$'))",
  fieldPath: '.limit',
  message: 'limit must be a whole number of peer pod VMs per node, 1 or more, like "10"',
  messageExpression:
    "'limit is ' + (type(self.limit) == int ? string(self.limit) : '\"' + string(self.limit) + '\"') + ': it must be a whole number of peer pod VMs per node, 1 or more, like \"10\"'",
};

export const peerPodConfigSpecSchema = s.object(
  {
    cloudSecretName: s.string({ description: 'The Secret with the cloud provider credentials (peer-pods-secret).' }),
    configMapName: s.string({ description: 'The ConfigMap with the peer pods settings (peer-pods-cm).' }),
    limit: limitSchema,
    instanceType: s.string({ description: 'Unused; kept for compatibility with the original API.' }),
    nodeSelector: s.map(s.string(), { description: 'The nodes that run peer pods (and get the extended resource).' }),
  },
  {
    required: ['cloudSecretName'],
    description: 'PeerPodConfigSpec defines the desired state of PeerPodConfig.',
    'x-kubernetes-validations': [limitRule],
  },
);

export const peerPodConfigStatusSchema = s.object(
  {
    setupCompleted: s.boolean({ description: 'True once the limit is advertised on every selected node.' }),
    nodes: s.array(s.string(), { description: 'Nodes that advertise kata.peerpods.io/vm = limit.' }),
  },
  { description: 'PeerPodConfigStatus defines the observed state of PeerPodConfig.' },
);

export type PeerPodConfigSpec = Infer<typeof peerPodConfigSpecSchema>;
export type PeerPodConfigStatus = Infer<typeof peerPodConfigStatusSchema>;

export interface PeerPodConfig extends KubeObject {
  spec: PeerPodConfigSpec;
  status?: PeerPodConfigStatus;
}

export const PeerPodConfigs: ResourceType<PeerPodConfig> = {
  group: PEERPODCONFIG_GROUP,
  version: PEERPODCONFIG_VERSION,
  plural: 'peerpodconfigs',
  kind: 'PeerPodConfig',
  namespaced: true,
};

/** `spec.limit` as a number, or undefined when it is absent or not a whole number from 1 up. */
export function parseLimit(limit: string | number | undefined): number | undefined {
  if (typeof limit === 'number') return Number.isSafeInteger(limit) && limit >= 1 ? limit : undefined;
  if (typeof limit !== 'string' || !/^[1-9]\d{0,8}$/.test(limit)) return undefined;
  return Number(limit);
}

/** The PeerPodConfig CRD, generated from the schema definitions above. */
export function peerPodConfigCRD(): CustomResourceDefinition {
  return customResourceDefinition({
    group: PEERPODCONFIG_GROUP,
    version: PEERPODCONFIG_VERSION,
    kind: 'PeerPodConfig',
    plural: 'peerpodconfigs',
    scope: 'Namespaced',
    description: 'PeerPodConfig is the Schema for the peerpodconfigs API',
    printerColumns: [
      { name: 'Limit', type: 'string', jsonPath: '.spec.limit' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: peerPodConfigSpecSchema,
    status: peerPodConfigStatusSchema,
  });
}
