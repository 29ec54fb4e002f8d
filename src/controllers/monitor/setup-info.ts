/**
 * The two gauges the original operator's dashboards use to tell installations apart, computed from the
 * caches at each scrape (as the original does on each collect):
 *
 * - osc_setup_info{setup_type, cloud_provider}: 1, while a KataConfig exists. `setup_type` is `baremetal`,
 *   `confidential_baremetal`, `peerpods` or `confidential_peerpods` (peer pods from the KataConfig's
 *   `enablePeerPods`, confidential from the `confidential` feature gate in ConfigMap `osc-feature-gates`);
 *   `cloud_provider` is the OpenShift Infrastructure's platform type in lower case when it is one of
 *   `aws`, `azure`, `gcp`, `libvirt`, `ibmcloud`, `none` when the Infrastructure names no type, else
 *   `unknown` (also where there is no Infrastructure to read, on plain Kubernetes).
 * - osc_kata_pods{runtimeclass}: pods (all namespaces) per kata RuntimeClass that exists, while a KataConfig
 *   exists.
 */
import { Gauge, type Registry } from 'prom-client';
import { FEATURE_GATES_CONFIGMAP, parseFeatureGates } from '../../api/featuregates.ts';
import { activeKataConfig, type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from '../../api/names.ts';
import { Infrastructures } from '../../api/openshift.ts';
import { ConfigMaps, type Pod, Pods, RuntimeClasses } from '../../kube/resources.ts';
import type { Manager } from '../../runtime/manager.ts';
import { POD_CACHE } from '../kataconfig/controller.ts';

/** The ConfigMap of feature gates in the operator's namespace (its keys and values: src/api/featuregates.ts). */
export const FEATURE_GATES_CM = FEATURE_GATES_CONFIGMAP;

/** The RuntimeClasses an osc installation can have, in the original's order. */
export const KATA_RUNTIME_CLASSES = [
  KATA_RUNTIME_CLASS,
  'kata-nvidia-gpu',
  KATA_REMOTE_RUNTIME_CLASS,
  'kata-cc',
  'kata-cc-nvidia-gpu',
] as const;

/** The clouds `cloud_provider` names; anything else is `unknown`. */
const KNOWN_PROVIDERS = new Set(['aws', 'azure', 'gcp', 'libvirt', 'ibmcloud']);

export type SetupType = 'baremetal' | 'confidential_baremetal' | 'peerpods' | 'confidential_peerpods';

export interface SetupInfoInput {
  kataConfigs: readonly KataConfig[];
  /** The data of ConfigMap osc-feature-gates, when it exists. */
  featureGates?: Readonly<Record<string, string>>;
  /**
   * The Infrastructure's `status.platformStatus.type`: a string ('' when the Infrastructure has none), or
   * undefined when there is no Infrastructure (not OpenShift, or not readable).
   */
  platformType?: string;
  /** Names of the RuntimeClasses that exist. */
  runtimeClasses: readonly string[];
  /** Pods per runtimeClassName. */
  podsByRuntimeClass: (runtimeClass: string) => number;
}

export interface SetupInfo {
  setup: { setup_type: SetupType; cloud_provider: string } | undefined;
  /** Pods per kata RuntimeClass that exists (empty without a KataConfig). */
  kataPods: { runtimeclass: string; pods: number }[];
}

export function setupType(kc: KataConfig, featureGates: Readonly<Record<string, string>> | undefined): SetupType {
  const peerPods = !!kc.spec?.enablePeerPods;
  // Read as osc reads the gate everywhere: a value it refuses (reported on the KataConfig) counts as its default.
  const confidential = parseFeatureGates(featureGates).gates.confidential;
  if (peerPods) return confidential ? 'confidential_peerpods' : 'peerpods';
  return confidential ? 'confidential_baremetal' : 'baremetal';
}

export function cloudProvider(platformType: string | undefined): string {
  if (platformType === undefined) return 'unknown';
  if (platformType === '') return 'none';
  const p = platformType.toLowerCase();
  return KNOWN_PROVIDERS.has(p) ? p : 'unknown';
}

export function setupInfo(input: SetupInfoInput): SetupInfo {
  const kc = activeKataConfig(input.kataConfigs);
  if (!kc) return { setup: undefined, kataPods: [] };
  return {
    setup: { setup_type: setupType(kc, input.featureGates), cloud_provider: cloudProvider(input.platformType) },
    kataPods: KATA_RUNTIME_CLASSES.filter((rc) => input.runtimeClasses.includes(rc)).map((rc) => ({
      runtimeclass: rc,
      pods: input.podsByRuntimeClass(rc),
    })),
  };
}

/** Registers both gauges; each scrape reads `source()` (the caches) and replaces every series. */
export function registerSetupInfo(registry: Registry, source: () => SetupInfoInput): void {
  new Gauge({
    name: 'osc_setup_info',
    help: 'Info-style metric: 1 with the setup type and the cloud provider while a KataConfig exists.',
    labelNames: ['setup_type', 'cloud_provider'],
    registers: [registry],
    collect() {
      // A series of an earlier scrape (another setup type, say) must not linger beside the current one.
      this.reset();
      const { setup } = setupInfo(source());
      if (setup) this.set(setup, 1);
    },
  });
  new Gauge({
    name: 'osc_kata_pods',
    help: 'Pods using each kata RuntimeClass that exists, while a KataConfig exists.',
    labelNames: ['runtimeclass'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { runtimeclass, pods } of setupInfo(source()).kataPods) this.set({ runtimeclass }, pods);
    },
  });
}

const RUNTIME_CLASS_INDEX = 'setup-info-runtime-class';

/**
 * Feeds the gauges from the manager's caches: the KataConfigs, RuntimeClasses and pods every controller
 * shares, the feature gates ConfigMap by name, and (on OpenShift only, where it exists) the Infrastructure
 * `cluster`.
 */
export function watchSetupInfo(mgr: Manager, opts: { namespace: string; clusterConfig: boolean }): void {
  const kataConfigs = mgr.informer(KataConfigs);
  const runtimeClasses = mgr.informer(RuntimeClasses);
  const pods = mgr.informer(Pods, POD_CACHE);
  pods.addIndex(RUNTIME_CLASS_INDEX, (p: Pod) => (p.spec?.runtimeClassName ? [p.spec.runtimeClassName] : []));
  const featureGates = mgr.informer(ConfigMaps, { namespace: opts.namespace, fieldSelector: `metadata.name=${FEATURE_GATES_CM}` });
  const infrastructures = opts.clusterConfig ? mgr.informer(Infrastructures, { fieldSelector: 'metadata.name=cluster' }) : undefined;
  registerSetupInfo(mgr.metrics.registry, () => {
    const infra = infrastructures?.get('cluster');
    return {
      kataConfigs: kataConfigs.list(),
      featureGates: featureGates.get(`${opts.namespace}/${FEATURE_GATES_CM}`)?.data,
      platformType: infra ? (infra.status?.platformStatus?.type ?? '') : undefined,
      runtimeClasses: runtimeClasses.list().map((rc) => objectName(rc)),
      podsByRuntimeClass: (rc) => pods.byIndex(RUNTIME_CLASS_INDEX, rc).length,
    };
  });
}
