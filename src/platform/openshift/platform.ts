import { type KataConfig, type KataConfigSpec, kataConfigOwner } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import {
  CONFIDENTIAL_MACHINE_CONFIG,
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  KATA_NODE_ROLE_LABEL,
  MASTER_ROLE_LABEL,
} from '../../api/names.ts';
import { ContainerRuntimeConfigs, MachineConfigPools, MachineConfigs } from '../../api/openshift.ts';
import type { Node } from '../../kube/resources.ts';
import { lastCall } from '../../runtime/memo.ts';
import { type Platform, type PlatformInput, type PlatformOptions, platformCache, type Selection, type Toleration } from '../platform.ts';
import { live, narrowSelection } from '../selection.ts';
import { confidentialHandlers } from './confidential.ts';
import { cachedPool, poolChanged, poolSettled, poolTargetHasKata, poolTargetHasOsc, SETTLING_POOL } from './machineconfig.ts';
import { cleanupPlan, installPlan, leftoversPlan, type OpenShiftObserved, poolNamed, uninstallPlan } from './plan.ts';
import { isCompactCluster, isMaster, labelledNodes, mcoNodeRecords, poolNames, workerCandidates } from './records.ts';

/**
 * OpenShift: kata reaches the nodes through the Machine Config Operator (docs/architecture.md, "The
 * Platform seam"). Our MachineConfig adds the sandboxed-containers extension to the kata-oc pool (or to
 * the master pool on a compact cluster), a second one the confidential handlers' configuration while a
 * class needs it (confidential.ts), nodes join the pool by the kata-oc role label, and the MCO updates them
 * one at a time; its node annotations are each node's record.
 */

/** Pod overhead of the RuntimeClasses osc creates on OpenShift (kata runs a VM per pod; kata-remote only a shim). */
export const OPENSHIFT_OVERHEAD: Record<string, { memory: string; cpu: string }> = {
  kata: { memory: '350Mi', cpu: '250m' },
  'kata-remote': { memory: '120Mi', cpu: '250m' },
};

const logLevelOf = (kc: KataConfig | undefined) => kc?.spec?.logLevel ?? 'info';

/** The inputs of the MCO reading, for the selected nodes of a pass. */
function recordInput(input: PlatformInput<OpenShiftObserved>, selected: ReadonlySet<string>) {
  const compact = isCompactCluster(input.nodes);
  const pools = poolNames(compact);
  return {
    nodes: input.nodes,
    selected,
    compact,
    kataPool: poolNamed(input.observed, pools.kata),
    basePool: poolNamed(input.observed, pools.base),
    // CRI-O's config is part of the target only for the nodes that should have kata; so are the
    // confidential handlers, while a class needs them.
    wantCrioConfig: selected.size > 0 && logLevelOf(input.kataConfig) !== 'info',
    wantConfidential: selected.size > 0 && confidentialHandlers(input.extraHandlers).length > 0,
  };
}

export function openShiftPlatform(opts: PlatformOptions = {}): Platform<OpenShiftObserved> {
  const overhead = { ...OPENSHIFT_OVERHEAD, ...opts.overhead };
  const kataNodeSelector = (nodes: readonly Node[]): Record<string, string> =>
    isCompactCluster(nodes) ? { [MASTER_ROLE_LABEL]: '' } : { [KATA_NODE_ROLE_LABEL]: '' };
  return {
    name: 'openshift',
    supportsPeerPods: true,

    watch(source) {
      const pools = source.informer(MachineConfigPools, { transform: cachedPool });
      const machineConfigs = source.informer(MachineConfigs, { fieldSelector: `metadata.name=${EXTENSION_MACHINE_CONFIG}` });
      const crioConfigs = source.informer(ContainerRuntimeConfigs, { fieldSelector: `metadata.name=${CRIO_CONFIG}` });
      const confidential = source.informer(MachineConfigs, { fieldSelector: `metadata.name=${CONFIDENTIAL_MACHINE_CONFIG}` });
      return {
        caches: [platformCache(pools, poolChanged), platformCache(machineConfigs), platformCache(crioConfigs), platformCache(confidential)],
        observe: () => ({
          pools: pools.list(),
          machineConfig: machineConfigs.get(EXTENSION_MACHINE_CONFIG),
          crioConfig: crioConfigs.get(CRIO_CONFIG),
          confidentialMachineConfig: confidential.get(CONFIDENTIAL_MACHINE_CONFIG),
        }),
      };
    },

    // On a compact cluster kata goes to the master pool as a whole: every master, and the selector does not
    // apply. Asked several times a pass, of the same snapshot of the nodes: answered once.
    select: lastCall((nodes: readonly Node[], spec: KataConfigSpec | undefined): Selection => {
      if (isCompactCluster(nodes)) return { ...narrowSelection(live(nodes).filter(isMaster), {}), noEligibleNodes: false };
      return narrowSelection(workerCandidates(nodes), spec);
    }),

    records: (input) => mcoNodeRecords(recordInput(input, input.selected)),

    rolloutComplete(input) {
      const r = recordInput(input, input.selected);
      return input.selected.size === 0 || poolTargetHasKata(r.kataPool, r.wantCrioConfig, r.wantConfidential);
    },

    // The nodes the kata pool targets now: the labelled ones, or every master on a compact cluster.
    installing(input) {
      const compact = isCompactCluster(input.nodes);
      const targeted = compact ? new Set(this.select(input.nodes, input.kataConfig?.spec).nodes) : labelledNodes(input.nodes);
      return mcoNodeRecords(recordInput(input, targeted))
        .filter((r) => r.phase === 'Installing')
        .map((r) => r.node);
    },

    installPlan(input) {
      const kc = input.kataConfig;
      return installPlan({
        observed: input.observed,
        nodes: input.nodes,
        selected: input.selected,
        compact: isCompactCluster(input.nodes),
        kataConfigName: objectName(kc),
        owner: kataConfigOwner(kc ?? { metadata: {} }, true),
        logLevel: logLevelOf(kc),
        confidentialHandlers: confidentialHandlers(input.extraHandlers),
      });
    },

    uninstallPlan: (input) => uninstallPlan(input.observed, input.nodes, isCompactCluster(input.nodes)),

    // On a compact cluster the masters' own pool must have dropped kata (and the confidential handlers) and settled.
    uninstallComplete(input) {
      if (!isCompactCluster(input.nodes)) return true;
      const base = poolNamed(input.observed, SETTLING_POOL);
      return !poolTargetHasOsc(base) && poolSettled(base);
    },

    cleanupPlan: () => cleanupPlan(),

    leftoversPlan: (input) => leftoversPlan(input.observed, input.nodes, isCompactCluster(input.nodes)),

    runtimeClass: (name, nodes) => ({
      handler: name,
      nodeSelector: kataNodeSelector(nodes),
      ...(overhead[name] ? { overhead: overhead[name] } : {}),
    }),

    kataNodeSelector,

    // Masters carry a NoSchedule taint: on a compact cluster what runs on the kata nodes tolerates it.
    kataNodeTolerations: (nodes): Toleration[] =>
      isCompactCluster(nodes) ? [{ key: MASTER_ROLE_LABEL, operator: 'Exists', effect: 'NoSchedule' }] : [],
  };
}
