import { objectName, sameStrings } from '../../api/meta.ts';
import {
  CONFIDENTIAL_MACHINE_CONFIG,
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  IGNITION_VERSION,
  KATA_NODE_ROLE_LABEL,
  KATA_POOL,
  type LogLevel,
  MC_ROLE_LABEL,
  MCO_CURRENT_CONFIG,
  MCO_DESIRED_CONFIG,
  MCO_REASON,
  MCO_STATE,
  POOL_CREATED_BY_OPERATOR_ANNOTATION,
  POOL_LABEL_PREFIX,
  SANDBOXED_CONTAINERS_EXTENSION,
} from '../../api/names.ts';
import type { ContainerRuntimeConfig, MachineConfig, MachineConfigPool } from '../../api/openshift.ts';
import type { Node } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { sameJson } from '../../runtime/samejson.ts';

/**
 * How kata reaches the nodes on OpenShift: a MachineConfig that adds the sandboxed-containers RHCOS
 * extension, applied by the Machine Config Operator to a pool of nodes (one reboot per node), and an
 * optional ContainerRuntimeConfig for CRI-O's log level. Pure: desired objects and readings of the
 * MCO's state; the controller does the I/O.
 */

/** The pool kata goes to: `kata-oc`, or `master` on a compact cluster where masters are the workers. */
export const kataPoolName = (compact: boolean): string => (compact ? 'master' : KATA_POOL);

/** The MachineConfigPool `kata-oc` (docs/kataconfig.md, "Fixed names"): worker configs plus ours, for the nodes labelled kata-oc. */
export function desiredKataPool(): MachineConfigPool {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfigPool',
    metadata: {
      name: KATA_POOL,
      labels: { [`${POOL_LABEL_PREFIX}${KATA_POOL}`]: '' },
      annotations: { [POOL_CREATED_BY_OPERATOR_ANNOTATION]: 'true' },
    },
    spec: {
      machineConfigSelector: { matchExpressions: [{ key: MC_ROLE_LABEL, operator: 'In', values: [KATA_POOL, 'worker'] }] },
      nodeSelector: { matchLabels: { [KATA_NODE_ROLE_LABEL]: '' } },
    },
  };
}

/**
 * The MachineConfig `50-enable-sandboxed-containers-extension` for a pool. With peer pods no local
 * hypervisor is needed; the extension still brings the kata shim and CRI-O handler drop-ins.
 */
export function desiredExtensionMachineConfig(pool: string, kataConfigName: string, owner?: OwnerReference): MachineConfig {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfig',
    metadata: {
      name: EXTENSION_MACHINE_CONFIG,
      labels: { [MC_ROLE_LABEL]: pool, app: kataConfigName },
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      config: { ignition: { version: IGNITION_VERSION } },
      extensions: [SANDBOXED_CONTAINERS_EXTENSION],
    },
  };
}

/** ContainerRuntimeConfig `kata-crio-config`: CRI-O's log level on the kata pool. */
export function desiredCrioConfig(pool: string, logLevel: LogLevel, owner?: OwnerReference): ContainerRuntimeConfig {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'ContainerRuntimeConfig',
    metadata: { name: CRIO_CONFIG, ...(owner ? { ownerReferences: [owner] } : {}) },
    spec: {
      machineConfigPoolSelector: { matchLabels: { [`${POOL_LABEL_PREFIX}${pool}`]: '' } },
      containerRuntimeConfig: { logLevel },
    },
  };
}

export type McoNodeState = 'Done' | 'Working' | 'Degraded' | 'Unknown';

/** What the Machine Config Operator says about a node, from its annotations. */
export interface NodeMcoView {
  name: string;
  state: McoNodeState;
  currentConfig?: string;
  desiredConfig?: string;
  reason?: string;
}

export function nodeMcoView(node: Node): NodeMcoView {
  const a = node.metadata.annotations ?? {};
  const raw = a[MCO_STATE];
  const state: McoNodeState =
    raw === 'Done' || raw === 'Working' || raw === 'Degraded' ? raw : raw === 'Unreconcilable' ? 'Degraded' : 'Unknown';
  return {
    name: objectName(node),
    state,
    currentConfig: a[MCO_CURRENT_CONFIG],
    desiredConfig: a[MCO_DESIRED_CONFIG],
    reason: a[MCO_REASON],
  };
}

/** The MachineConfigs a pool's target configuration was rendered from. */
export const poolSources = (pool: MachineConfigPool | undefined): string[] => (pool?.spec.configuration?.source ?? []).map((s) => s.name);

/** The MCO names what it generates from a ContainerRuntimeConfig after the pool it selects. */
const generatedCrioFor = (pool: string) => new RegExp(`^99-${pool}-generated-containerruntime(-\\d+)?$`);

/**
 * Whether a pool's target configuration carries everything kata needs: our MachineConfig, the CRI-O
 * config exactly when a non-default log level is wanted, and the confidential handlers' MachineConfig
 * exactly when a class needs them. Until the MCO has re-rendered the pool, nodes that already run its
 * previous target are not done.
 */
export function poolTargetHasKata(pool: MachineConfigPool | undefined, wantCrioConfig: boolean, wantConfidential = false): boolean {
  if (!pool?.spec.configuration?.name) return false;
  const sources = poolSources(pool);
  if (!sources.includes(EXTENSION_MACHINE_CONFIG)) return false;
  const generated = generatedCrioFor(objectName(pool));
  return wantCrioConfig === sources.some((s) => generated.test(s)) && wantConfidential === sources.includes(CONFIDENTIAL_MACHINE_CONFIG);
}

/** Whether a pool's target still carries anything of osc's (the extension, or the confidential handlers). */
export const poolTargetHasOsc = (pool: MachineConfigPool | undefined): boolean =>
  poolSources(pool).some((s) => s === EXTENSION_MACHINE_CONFIG || s === CONFIDENTIAL_MACHINE_CONFIG);

/** The MCO has seen the pool's latest spec and no node of it is still updating. */
export function poolSettled(pool: MachineConfigPool | undefined): boolean {
  if (!pool?.status) return false;
  if (pool.status.observedGeneration !== pool.metadata.generation) return false;
  const cond = (t: string) => pool.status?.conditions?.find((c) => c.type === t)?.status;
  return cond('Updated') === 'True' && cond('Updating') !== 'True';
}

/**
 * The pool whose conditions a plan reads: a compact cluster's masters, settled once kata left them
 * (poolSettled, in the platform's uninstallComplete). cachedPool keeps no other pool's conditions.
 */
export const SETTLING_POOL = 'master';

/**
 * What the operator keeps of a pool: what its plans read. Its metadata, its spec (the target and the
 * selectors), the generation its status observed, and only for the master pool whether it is Updated or
 * Updating. The machine counts, and the conditions with them (the MCO's Updated needs every machine
 * ready), move with every node's readiness and change no plan: at 5,000 nodes the MCO rewrote the kata
 * pool's about twice a second in a quiet minute, nodes missing a heartbeat and coming back, and each change
 * was a pass over every node.
 */
export function cachedPool(p: MachineConfigPool): MachineConfigPool {
  const s = p.status;
  const conditions = objectName(p) === SETTLING_POOL ? s?.conditions?.map((c) => ({ type: c.type, status: c.status })) : undefined;
  return {
    apiVersion: p.apiVersion,
    kind: p.kind,
    metadata: p.metadata,
    spec: p.spec,
    ...(s ? { status: { observedGeneration: s.observedGeneration, ...(conditions ? { conditions } : {}) } } : {}),
  };
}

/** Whether a cached pool (cachedPool) changed, beyond its resourceVersion: every other update wakes no pass. */
export function poolChanged(a: MachineConfigPool, b: MachineConfigPool): boolean {
  return (
    a.metadata.generation !== b.metadata.generation ||
    a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp ||
    !sameStrings(a.metadata.annotations, b.metadata.annotations) ||
    !sameStrings(a.metadata.labels, b.metadata.labels) ||
    !sameJson(a.spec, b.spec) ||
    !sameJson(a.status, b.status)
  );
}

/** Rendered configurations of the kata-oc pool always contain kata (our MachineConfig selects it). */
export const isKataPoolConfig = (config: string | undefined): boolean => !!config?.startsWith(`rendered-${KATA_POOL}-`);
