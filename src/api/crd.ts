import type { CustomResourceDefinition } from './meta.ts';
import type { Schema } from './schema.ts';

export interface CRDDefinition {
  group: string;
  version: string;
  kind: string;
  plural: string;
  scope: 'Cluster' | 'Namespaced';
  description: string;
  printerColumns: { name: string; type: string; jsonPath: string }[];
  spec: Schema<unknown>;
  status: Schema<unknown>;
  /**
   * Whether the status is a subresource (the default): written apart from the object, by other rights.
   * Without it the status is part of the object, written with it in one request.
   */
  statusSubresource?: boolean;
}

/**
 * A CustomResourceDefinition (one served, stored version, with a status subresource unless told) from the
 * schema definitions that also give the TypeScript types.
 */
export function customResourceDefinition(d: CRDDefinition): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${d.plural}.${d.group}` },
    spec: {
      group: d.group,
      scope: d.scope,
      names: { kind: d.kind, listKind: `${d.kind}List`, plural: d.plural, singular: d.kind.toLowerCase() },
      versions: [
        {
          name: d.version,
          served: true,
          storage: true,
          ...(d.statusSubresource === false ? {} : { subresources: { status: {} } }),
          additionalPrinterColumns: d.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: d.description,
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: d.spec.openapi,
                status: d.status.openapi,
              },
            },
          },
        },
      ],
    },
  };
}
