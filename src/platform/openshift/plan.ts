import { isDeepStrictEqual } from 'node:util';
import { objectName } from '../../api/meta.ts';
import {
  CONFIDENTIAL_MACHINE_CONFIG,
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  KATA_NODE_ROLE_LABEL,
  KATA_POOL,
  type LogLevel,
  POOL_CREATED_BY_OPERATOR_ANNOTATION,
} from '../../api/names.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
} from '../../api/openshift.ts';
import { type Node, Nodes } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import type { PlatformPlan, PlatformWrite } from '../platform.ts';
import { live } from '../selection.ts';
import { desiredConfidentialMachineConfig } from './confidential.ts';
import { desiredCrioConfig, desiredExtensionMachineConfig, desiredKataPool, isKataPoolConfig, nodeMcoView } from './machineconfig.ts';

/**
 * The writes that put kata on nodes and take it off through the Machine Config Operator, compared with
 * what the caches show: our MachineConfig, the kata-oc pool, the kata-oc node label, and CRI-O's
 * ContainerRuntimeConfig. Pure: the KataConfig controller makes the writes.
 */

/** What OpenShift's planning reads from its caches. */
export interface OpenShiftObserved {
  pools: readonly MachineConfigPool[];
  /** Our MachineConfig (50-enable-sandboxed-containers-extension), when it exists. */
  machineConfig?: MachineConfig;
  /** Our ContainerRuntimeConfig (kata-crio-config), when it exists. */
  crioConfig?: ContainerRuntimeConfig;
  /** Our MachineConfig for the confidential handlers (51-sandboxed-containers-confidential), when it exists. */
  confidentialMachineConfig?: MachineConfig;
}

/** Node label changes per pass: on a large cluster status writes are not held up behind a thousand patches. */
export const LABELS_PER_PASS = 64;

export const poolNamed = (o: OpenShiftObserved, name: string): MachineConfigPool | undefined =>
  o.pools.find((p) => p.metadata.name === name);

const step = (writes: (PlatformWrite | undefined)[]): PlatformWrite[] => writes.filter((w): w is PlatformWrite => !!w);

function machineConfigWrite(existing: MachineConfig | undefined, desired: MachineConfig): PlatformWrite | undefined {
  if (!existing) return { op: 'create', resource: MachineConfigs, object: desired };
  const labelsMatch = Object.entries(desired.metadata.labels ?? {}).every(([k, v]) => existing.metadata.labels?.[k] === v);
  const ownersMatch = isDeepStrictEqual(existing.metadata.ownerReferences, desired.metadata.ownerReferences);
  if (labelsMatch && ownersMatch && isDeepStrictEqual(existing.spec.extensions, desired.spec.extensions)) return undefined;
  return {
    op: 'patch',
    resource: MachineConfigs,
    name: objectName(desired),
    patch: { metadata: { labels: desired.metadata.labels, ownerReferences: desired.metadata.ownerReferences }, spec: desired.spec },
  };
}

/** The confidential handlers' MachineConfig: its files are osc's alone, so any difference is put back. */
function confidentialWrite(existing: MachineConfig | undefined, desired: MachineConfig | undefined): PlatformWrite | undefined {
  if (!desired) return deleteIfPresent(existing, MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG);
  if (!existing) return { op: 'create', resource: MachineConfigs, object: desired };
  const labelsMatch = Object.entries(desired.metadata.labels ?? {}).every(([k, v]) => existing.metadata.labels?.[k] === v);
  const ownersMatch = isDeepStrictEqual(existing.metadata.ownerReferences, desired.metadata.ownerReferences);
  if (labelsMatch && ownersMatch && isDeepStrictEqual(existing.spec.config, desired.spec.config)) return undefined;
  return {
    op: 'patch',
    resource: MachineConfigs,
    name: CONFIDENTIAL_MACHINE_CONFIG,
    patch: { metadata: { labels: desired.metadata.labels, ownerReferences: desired.metadata.ownerReferences }, spec: desired.spec },
  };
}

function poolWrite(existing: MachineConfigPool | undefined, desired: MachineConfigPool): PlatformWrite | undefined {
  if (!existing) return { op: 'create', resource: MachineConfigPools, object: desired };
  if (
    isDeepStrictEqual(existing.spec.machineConfigSelector, desired.spec.machineConfigSelector) &&
    isDeepStrictEqual(existing.spec.nodeSelector, desired.spec.nodeSelector)
  )
    return undefined;
  // Replaced whole, not merged: a merge patch would keep a label an administrator added to the selector,
  // and the pool would stay wrong while every reconcile patched it again.
  return {
    op: 'patch',
    resource: MachineConfigPools,
    name: objectName(desired),
    type: 'json',
    patch: [
      { op: 'add', path: '/spec/machineConfigSelector', value: desired.spec.machineConfigSelector },
      { op: 'add', path: '/spec/nodeSelector', value: desired.spec.nodeSelector },
    ],
  };
}

function crioWrite(existing: ContainerRuntimeConfig | undefined, desired: ContainerRuntimeConfig): PlatformWrite | undefined {
  if (!existing) return { op: 'create', resource: ContainerRuntimeConfigs, object: desired };
  if (
    isDeepStrictEqual(existing.spec, desired.spec) &&
    isDeepStrictEqual(existing.metadata.ownerReferences, desired.metadata.ownerReferences)
  )
    return undefined;
  return {
    op: 'patch',
    resource: ContainerRuntimeConfigs,
    name: CRIO_CONFIG,
    patch: { metadata: { ownerReferences: desired.metadata.ownerReferences }, spec: desired.spec },
  };
}

/**
 * The kata-oc role label on the wanted nodes and on no other: at most LABELS_PER_PASS patches, and how
 * many more remain.
 */
export function labelWrites(nodes: readonly Node[], wanted: ReadonlySet<string>): { writes: PlatformWrite[]; pending: number } {
  // The pool selects the label with the value "": one edited to another value is put back too.
  const changes = live(nodes).filter((n) =>
    wanted.has(objectName(n)) ? n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== '' : n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined,
  );
  const now = changes.slice(0, LABELS_PER_PASS);
  return {
    writes: now.map((node) => ({
      op: 'patch' as const,
      resource: Nodes,
      name: objectName(node),
      patch: { metadata: { labels: { [KATA_NODE_ROLE_LABEL]: wanted.has(objectName(node)) ? '' : null } } },
    })),
    pending: changes.length - now.length,
  };
}

const deleteIfPresent = (present: unknown, resource: PlatformWrite['resource'], name: string): PlatformWrite | undefined =>
  present ? { op: 'delete', resource, name } : undefined;

export interface InstallPlanInput {
  observed: OpenShiftObserved;
  nodes: readonly Node[];
  selected: ReadonlySet<string>;
  compact: boolean;
  kataConfigName: string;
  owner: OwnerReference;
  logLevel: LogLevel;
  /** The confidential handlers the classes need on the kata nodes (confidential.ts); none: no such MachineConfig. */
  confidentialHandlers?: readonly string[];
}

/**
 * Our MachineConfigs exist before the pool, so that the pool's first rendering already has kata (and the
 * confidential handlers a class needs); then the pool, the node labels (not on compact clusters: the
 * masters' pool gets kata as a whole), and CRI-O's log level (its ContainerRuntimeConfig only for a level
 * other than info).
 */
export function installPlan(input: InstallPlanInput): PlatformPlan {
  const pool = input.compact ? 'master' : KATA_POOL;
  const { observed: o } = input;
  const handlers = input.confidentialHandlers ?? [];
  const confidential = handlers.length ? desiredConfidentialMachineConfig(pool, input.kataConfigName, handlers, input.owner) : undefined;
  const steps: PlatformWrite[][] = [
    step([
      machineConfigWrite(o.machineConfig, desiredExtensionMachineConfig(pool, input.kataConfigName, input.owner)),
      confidentialWrite(o.confidentialMachineConfig, confidential),
    ]),
  ];
  let pending = 0;
  let detached: PlatformWrite[] = [];
  if (!input.compact) {
    steps.push(step([poolWrite(poolNamed(o, KATA_POOL), desiredKataPool())]));
    // The labels come once the pool exists (this pass's steps run first), and nothing waits for them.
    const labels = labelWrites(input.nodes, input.selected);
    detached = labels.writes;
    pending = labels.pending;
  }
  steps.push(
    step([
      input.logLevel !== 'info'
        ? crioWrite(o.crioConfig, desiredCrioConfig(pool, input.logLevel, input.owner))
        : deleteIfPresent(o.crioConfig, ContainerRuntimeConfigs, CRIO_CONFIG),
    ]),
  );
  return { steps: steps.filter((s) => s.length), pending, ...(detached.length ? { detached } : {}) };
}

/**
 * Nodes leave the kata pool (one reboot each, as the pool rolls them back to the worker config). On a
 * compact cluster the masters stay in their pool: removing our MachineConfig rolls them back.
 */
export function uninstallPlan(observed: OpenShiftObserved, nodes: readonly Node[], compact: boolean): PlatformPlan {
  const labels = compact ? { writes: [], pending: 0 } : labelWrites(nodes, new Set());
  // On a compact cluster the confidential handlers go with CRI-O's config, before the extension: the
  // masters' pool never renders the handlers without the kata they run.
  const steps = [
    labels.writes,
    step([
      deleteIfPresent(observed.crioConfig, ContainerRuntimeConfigs, CRIO_CONFIG),
      compact ? deleteIfPresent(observed.confidentialMachineConfig, MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG) : undefined,
    ]),
    step([compact ? deleteIfPresent(observed.machineConfig, MachineConfigs, EXTENSION_MACHINE_CONFIG) : undefined]),
  ];
  return { steps: steps.filter((s) => s.length), pending: labels.pending };
}

/** Everything osc created on the MCO's side goes, straight to the API server (a 404 is fine). */
export function cleanupPlan(): PlatformPlan {
  return {
    steps: [
      [
        { op: 'delete', resource: ContainerRuntimeConfigs, name: CRIO_CONFIG },
        { op: 'delete', resource: MachineConfigs, name: CONFIDENTIAL_MACHINE_CONFIG },
      ],
      [{ op: 'delete', resource: MachineConfigs, name: EXTENSION_MACHINE_CONFIG }],
      [{ op: 'delete', resource: MachineConfigPools, name: KATA_POOL }],
    ],
    pending: 0,
  };
}

const ownedByKataConfig = (o: { metadata: { ownerReferences?: OwnerReference[] } } | undefined) =>
  !!o?.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig');

/**
 * With no KataConfig at all: nodes leave the pool, our objects go, and the pool, if osc made it, goes
 * once no node runs its configuration (node and pool changes bring the controller back until then). A
 * pool an administrator made ahead stays: deleting it would lose their settings before the install.
 */
export function leftoversPlan(observed: OpenShiftObserved, nodes: readonly Node[], compact: boolean): PlatformPlan {
  const labels = compact ? { writes: [], pending: 0 } : labelWrites(nodes, new Set());
  const pool = poolNamed(observed, KATA_POOL);
  const nodesBack =
    labels.pending === 0 &&
    !nodes.some((n) => isKataPoolConfig(nodeMcoView(n).currentConfig) || n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined);
  const steps = [
    labels.writes,
    step([
      ownedByKataConfig(observed.crioConfig) ? { op: 'delete', resource: ContainerRuntimeConfigs, name: CRIO_CONFIG } : undefined,
      ownedByKataConfig(observed.confidentialMachineConfig)
        ? { op: 'delete', resource: MachineConfigs, name: CONFIDENTIAL_MACHINE_CONFIG }
        : undefined,
    ]),
    step([
      ownedByKataConfig(observed.machineConfig) ? { op: 'delete', resource: MachineConfigs, name: EXTENSION_MACHINE_CONFIG } : undefined,
    ]),
    step([
      !compact && pool && nodesBack && pool.metadata.annotations?.[POOL_CREATED_BY_OPERATOR_ANNOTATION] === 'true'
        ? { op: 'delete', resource: MachineConfigPools, name: KATA_POOL }
        : undefined,
    ]),
  ];
  return { steps: steps.filter((s) => s.length), pending: labels.pending };
}
