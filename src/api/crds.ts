import { customResourceDefinition } from './crd.ts';
import { kataConfigSpecSchema, kataConfigStatusSchema } from './kataconfig.ts';
import { kataNodeCRD } from './katanode.ts';
import type { CustomResourceDefinition } from './meta.ts';
import { KATACONFIG_GROUP } from './names.ts';
import { peerPodConfigCRD } from './peerpodconfig.ts';

/** The KataConfig CRD, generated from the schema definitions in kataconfig.ts. */
export function kataConfigCRD(): CustomResourceDefinition {
  return customResourceDefinition({
    group: KATACONFIG_GROUP,
    version: 'v1',
    kind: 'KataConfig',
    plural: 'kataconfigs',
    scope: 'Cluster',
    description: 'KataConfig is the Schema for the kataconfigs API: one per cluster.',
    printerColumns: [
      { name: 'In Progress', type: 'string', jsonPath: '.status.conditions[?(@.type=="InProgress")].status' },
      { name: 'Completed', type: 'integer', jsonPath: '.status.kataNodes.readyNodeCount' },
      { name: 'Total', type: 'integer', jsonPath: '.status.kataNodes.nodeCount' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: kataConfigSpecSchema,
    status: kataConfigStatusSchema,
  });
}

/** Every CRD osc itself defines (the OpenShift ones come from the platform or the dev cluster). */
export function oscCRDs(): CustomResourceDefinition[] {
  return [kataConfigCRD(), kataNodeCRD(), peerPodConfigCRD()];
}
