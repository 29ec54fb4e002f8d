import { isDeepStrictEqual } from 'node:util';
import { objectName } from '../../api/meta.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  type MachineConfig,
  MachineConfigs,
  type PoolCondition,
} from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import { selectorMatches } from '../../kube/labels.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import type { Informer } from '../../runtime/informer.ts';
import {
  CONTROLLER_VERSION,
  GENERATED_BY_CONTROLLER_ANNOTATION,
  type GeneratedMC,
  MCO_API_VERSION,
  ownerOf,
  validateContainerRuntimeConfig,
} from './render.ts';
import type { LatestView } from './view.ts';

export const CONTROLLER_MANAGER = 'machine-config-controller';

export interface CrcContext {
  client: KubeClient;
  containerRuntimeConfigs: Informer<ContainerRuntimeConfig>;
  /** MachineConfigs, indexed by 'owner' (`<kind>/<name>`). */
  machineConfigs: Informer<MachineConfig>;
  mcView: LatestView<MachineConfig>;
  /** The pools that exist now. */
  pools(): Iterable<{ metadata: { labels?: Record<string, string> } }>;
  /** Every generated MachineConfig that should exist. */
  generated(): GeneratedMC[];
}

/**
 * The ContainerRuntimeConfig controller: keeps the generated MachineConfigs of one ContainerRuntimeConfig
 * as they should be (deleting those of a deleted one, as garbage collection would) and reports
 * `Success` or `Failure` on it.
 */
export async function syncContainerRuntimeConfig(ctx: CrcContext, name: string, signal: AbortSignal): Promise<void> {
  const { client } = ctx;
  const crc = ctx.containerRuntimeConfigs.get(name);
  const owned = ctx.machineConfigs.byIndex('owner', `ContainerRuntimeConfig/${name}`);
  const wanted = crc && !crc.metadata.deletionTimestamp ? ctx.generated().filter((g) => g.crc === name) : [];
  for (const g of wanted) {
    const mc: MachineConfig = {
      metadata: {
        name: g.name,
        labels: g.labels,
        annotations: { [GENERATED_BY_CONTROLLER_ANNOTATION]: CONTROLLER_VERSION },
        ownerReferences: [
          {
            apiVersion: MCO_API_VERSION,
            kind: 'ContainerRuntimeConfig',
            name: g.crc,
            uid: g.crcUid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: g.spec,
    };
    const existing = ctx.mcView.get(g.name);
    if (!existing) {
      try {
        ctx.mcView.observe(await client.create(MachineConfigs, mc, { signal, fieldManager: CONTROLLER_MANAGER }));
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
    } else if (
      !isDeepStrictEqual(normalize(existing.spec), normalize(mc.spec)) ||
      !isDeepStrictEqual(existing.metadata.labels ?? {}, mc.metadata.labels) ||
      ownerOf(existing, 'ContainerRuntimeConfig')?.uid !== g.crcUid
    ) {
      try {
        const updated = await client.update(
          MachineConfigs,
          { ...mc, metadata: { ...existing.metadata, labels: mc.metadata.labels, ownerReferences: mc.metadata.ownerReferences } },
          { signal, fieldManager: CONTROLLER_MANAGER },
        );
        ctx.mcView.observe(updated);
      } catch (e) {
        // Deleted meanwhile: its deletion event brings us back to create it.
        if (!isNotFound(e)) throw e;
      }
    }
  }
  const wantedNames = new Set(wanted.map((g) => g.name));
  for (const mc of owned) {
    if (!wantedNames.has(objectName(mc))) await client.delete(MachineConfigs, objectName(mc), { signal });
  }
  if (!crc || crc.metadata.deletionTimestamp) return;

  const invalid = validateContainerRuntimeConfig(crc);
  const selectsPool = [...ctx.pools()].some((p) => selectorMatches(crc.spec?.machineConfigPoolSelector, p.metadata.labels));
  const error = invalid ?? (selectsPool ? undefined : `could not find any MachineConfigPool set for ContainerRuntimeConfig ${name}`);
  const old = crc.status?.conditions?.[0];
  const cond: PoolCondition = error
    ? { type: 'Failure', status: 'False', reason: '', message: `Error: ${error}`, lastTransitionTime: '' }
    : { type: 'Success', status: 'True', reason: '', message: 'Success', lastTransitionTime: '' };
  cond.lastTransitionTime =
    old && old.type === cond.type && old.message === cond.message && old.lastTransitionTime ? old.lastTransitionTime : rfc3339(new Date());
  const status = { observedGeneration: crc.metadata.generation, conditions: [cond] };
  if (isDeepStrictEqual(normalize(crc.status), normalize(status))) return;
  try {
    await client.patch(ContainerRuntimeConfigs, name, { status }, { subresource: 'status', signal, fieldManager: CONTROLLER_MANAGER });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/** A JSON round trip: drops undefined fields so that what we computed compares with what the server answered. */
export function normalize(v: unknown): unknown {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}
