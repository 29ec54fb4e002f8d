import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { type CustomResourceDefinition, CustomResourceDefinitions } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';

/** Creates or replaces each CRD, then waits until the API server serves every one (Established). */
export async function installCRDs(client: KubeClient, crds: KubeObject[]): Promise<void> {
  for (const crd of crds) {
    const existing = await client.find(CustomResourceDefinitions, objectName(crd));
    if (existing) {
      await client.update(CustomResourceDefinitions, {
        ...(crd as CustomResourceDefinition),
        metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
      });
    } else {
      await client.create(CustomResourceDefinitions, crd as CustomResourceDefinition);
    }
  }
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const got = await client.get(CustomResourceDefinitions, objectName(crd));
      const established = got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      if (established) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not established after 60s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
