import type { CustomResourceDefinition } from '../kube/resources.ts';
import { kataConfigSpecSchema, kataConfigStatusSchema } from './kataconfig.ts';
import { KATACONFIG_GROUP } from './names.ts';
import { peerPodConfigCRD } from './peerpodconfig.ts';

/** The KataConfig CRD, generated from the schema definitions in kataconfig.ts. */
export function kataConfigCRD(): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `kataconfigs.${KATACONFIG_GROUP}` },
    spec: {
      group: KATACONFIG_GROUP,
      scope: 'Cluster',
      names: { kind: 'KataConfig', listKind: 'KataConfigList', plural: 'kataconfigs', singular: 'kataconfig' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'In Progress', type: 'string', jsonPath: '.status.conditions[?(@.type=="InProgress")].status' },
            { name: 'Completed', type: 'integer', jsonPath: '.status.kataNodes.readyNodeCount' },
            { name: 'Total', type: 'integer', jsonPath: '.status.kataNodes.nodeCount' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'KataConfig is the Schema for the kataconfigs API: one per cluster.',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: kataConfigSpecSchema.openapi,
                status: kataConfigStatusSchema.openapi,
              },
            },
          },
        },
      ],
    },
  };
}

/** Every CRD osc itself defines (the OpenShift ones come from the platform or the dev cluster). */
export function oscCRDs(): CustomResourceDefinition[] {
  return [kataConfigCRD(), peerPodConfigCRD()];
}
