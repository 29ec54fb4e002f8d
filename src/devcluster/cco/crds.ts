import type { CustomResourceDefinition } from '../../kube/resources.ts';

/**
 * The Cloud Credential Operator's API types for the dev cluster: CredentialsRequest
 * (cloudcredential.openshift.io/v1, namespaced, with its status subresource) and the cluster's
 * CloudCredential configuration (operator.openshift.io/v1, cluster-scoped). Names and scopes as the real
 * ones; the provider spec and status are preserved, as in the real schema.
 */

type Schema = Record<string, unknown>;
const str = (): Schema => ({ type: 'string' });
const preserved = (): Schema => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });

function crd(c: {
  group: string;
  plural: string;
  singular: string;
  kind: string;
  scope: 'Namespaced' | 'Cluster';
  spec: Schema;
  status: Schema;
  required?: string[];
}): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${c.plural}.${c.group}`, labels: { 'osc.dev/simulated-openshift-api': 'true' } },
    spec: {
      group: c.group,
      scope: c.scope,
      names: { kind: c.kind, listKind: `${c.kind}List`, plural: c.plural, singular: c.singular },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              ...(c.required ? { required: c.required } : {}),
              properties: { apiVersion: str(), kind: str(), metadata: { type: 'object' }, spec: c.spec, status: c.status },
            },
          },
        },
      ],
    },
  } as CustomResourceDefinition;
}

export function credentialsRequestCRD(): CustomResourceDefinition {
  return crd({
    group: 'cloudcredential.openshift.io',
    plural: 'credentialsrequests',
    singular: 'credentialsrequest',
    kind: 'CredentialsRequest',
    scope: 'Namespaced',
    required: ['spec'],
    spec: {
      type: 'object',
      required: ['secretRef'],
      properties: {
        secretRef: { type: 'object', properties: { name: str(), namespace: str() }, 'x-kubernetes-map-type': 'atomic' },
        providerSpec: preserved(),
        serviceAccountNames: { type: 'array', items: str() },
        cloudTokenPath: str(),
      },
    },
    status: {
      type: 'object',
      required: ['lastSyncGeneration', 'provisioned'],
      properties: {
        provisioned: { type: 'boolean' },
        lastSyncTimestamp: { type: 'string', format: 'date-time' },
        lastSyncGeneration: { type: 'integer', format: 'int64' },
        lastSyncCloudCredsSecretResourceVersion: str(),
        providerStatus: preserved(),
        conditions: {
          type: 'array',
          items: {
            type: 'object',
            required: ['status', 'type'],
            properties: {
              type: str(),
              status: str(),
              lastProbeTime: { type: 'string', format: 'date-time' },
              lastTransitionTime: { type: 'string', format: 'date-time' },
              reason: str(),
              message: str(),
            },
          },
        },
      },
    },
  });
}

export function cloudCredentialCRD(): CustomResourceDefinition {
  return crd({
    group: 'operator.openshift.io',
    plural: 'cloudcredentials',
    singular: 'cloudcredential',
    kind: 'CloudCredential',
    scope: 'Cluster',
    spec: {
      type: 'object',
      properties: {
        credentialsMode: { type: 'string', enum: ['', 'Manual', 'Mint', 'Passthrough'] },
        managementState: str(),
        logLevel: str(),
        operatorLogLevel: str(),
      },
    },
    status: preserved(),
  });
}

export const ccoCRDs = (): CustomResourceDefinition[] => [credentialsRequestCRD(), cloudCredentialCRD()];
