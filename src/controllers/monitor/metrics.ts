/**
 * The five kata_* gauges dashboards of the original operator use, computed from the caches at each scrape
 * (as the original does on each collect). Meanings:
 *
 * - kata_config_installation_success: 1 when the KataConfig osc acts on has finished installing kata on
 *   every node it selected: its InProgress condition is False, it is not being deleted, no node failed, at
 *   least one node is selected and all of them are ready (status.kataNodes), and its RuntimeClasses exist.
 * - kata_remote_runtimeclass_available: 1 when RuntimeClass kata-remote exists.
 * - kata_total_remote_pods: pods (all namespaces) with runtimeClassName kata-remote.
 * - kata_failed_remote_pods: those of them whose phase is neither Running nor Succeeded.
 * - kata_remote_workload_failure_ratio: failed / total, in percent (0 with no pod).
 */
import { Gauge, type Registry } from 'prom-client';
import { activeKataConfig, IN_PROGRESS, type KataConfig } from '../../api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS } from '../../api/names.ts';

export interface KataGaugeInput {
  kataConfigs: readonly KataConfig[];
  /** Names of the RuntimeClasses that exist. */
  runtimeClasses: readonly string[];
  /** Phases of the pods whose runtimeClassName is kata-remote. */
  remotePodPhases: readonly (string | undefined)[];
}

export interface KataGauges {
  kata_config_installation_success: number;
  kata_remote_runtimeclass_available: number;
  kata_total_remote_pods: number;
  kata_failed_remote_pods: number;
  kata_remote_workload_failure_ratio: number;
}

export function installationSucceeded(kc: KataConfig | undefined, runtimeClasses: readonly string[]): boolean {
  if (!kc || kc.metadata.deletionTimestamp) return false;
  const inProgress = kc.status?.conditions?.find((c) => c.type === IN_PROGRESS);
  const nodes = kc.status?.kataNodes;
  const created = kc.status?.runtimeClasses ?? [];
  return (
    inProgress?.status === 'False' &&
    !!nodes &&
    nodes.nodeCount > 0 &&
    nodes.readyNodeCount === nodes.nodeCount &&
    !nodes.failedToInstall?.length &&
    created.length > 0 &&
    created.every((rc) => runtimeClasses.includes(rc))
  );
}

export function kataGauges(input: KataGaugeInput): KataGauges {
  const total = input.remotePodPhases.length;
  const failed = input.remotePodPhases.filter((p) => p !== 'Running' && p !== 'Succeeded').length;
  return {
    kata_config_installation_success: installationSucceeded(activeKataConfig(input.kataConfigs), input.runtimeClasses) ? 1 : 0,
    kata_remote_runtimeclass_available: input.runtimeClasses.includes(KATA_REMOTE_RUNTIME_CLASS) ? 1 : 0,
    kata_total_remote_pods: total,
    kata_failed_remote_pods: failed,
    kata_remote_workload_failure_ratio: total ? (failed / total) * 100 : 0,
  };
}

const HELP: Record<keyof KataGauges, string> = {
  kata_config_installation_success: 'Whether the KataConfig installation is complete and successful on every selected node (1) or not (0).',
  kata_remote_runtimeclass_available: 'Whether the kata-remote RuntimeClass is available (1) or not (0).',
  kata_total_remote_pods: 'Pods using the kata-remote RuntimeClass, across all namespaces.',
  kata_failed_remote_pods: 'Pods using the kata-remote RuntimeClass whose phase is neither Running nor Succeeded.',
  kata_remote_workload_failure_ratio: 'Percentage of the kata-remote pods that are neither Running nor Succeeded.',
};

/** Registers the gauges; each scrape reads `source()` (the caches) once. */
export function registerKataGauges(registry: Registry, source: () => KataGaugeInput): void {
  let current: { at: number; gauges: KataGauges } | undefined;
  const names = Object.keys(HELP) as (keyof KataGauges)[];
  for (const [i, name] of names.entries()) {
    new Gauge({
      name,
      help: HELP[name],
      registers: [registry],
      collect() {
        // A scrape collects in registration order: the first gauge computes all five, so that they agree
        // with one another (a lone read of another gauge recomputes when the snapshot is old).
        if (i === 0 || !current || performance.now() - current.at > 1000) current = { at: performance.now(), gauges: kataGauges(source()) };
        this.set(current.gauges[name]);
      },
    });
  }
}
