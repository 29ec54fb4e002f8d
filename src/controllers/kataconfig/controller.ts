import { ACTIVE_POD_PHASES, CLUSTER_VERSION_NAME } from '../../api/confidential.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../api/featuregates.ts';
import { KataConfigs } from '../../api/kataconfig.ts';
import { KataNodes } from '../../api/katanode.ts';
import { objectName, sameStrings } from '../../api/meta.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, OPERATOR_NAMESPACE } from '../../api/names.ts';
import { ClusterVersions } from '../../api/openshift.ts';
import { ConfigMaps, type Node, Nodes, type Pod, Pods, RuntimeClasses } from '../../kube/resources.ts';
import { keyOf } from '../../kube/types.ts';
import { platformCluster } from '../../platform/index.ts';
import type { Platform } from '../../platform/platform.ts';
import type { Manager } from '../../runtime/manager.ts';
import { cachedNode } from '../nodecache.ts';
import { ConfidentialClasses, releaseChanged } from './confidential.ts';
import { KataMetrics } from './metrics.ts';
import { defaultKataConfigOptions, type KataConfigOptions, KataConfigReconciler } from './reconciler.ts';
import { setupRuntimeClassCleanup } from './runtimeclass-cleanup.ts';
import { EXTRA_RUNTIME_CLASSES } from './runtimeclasses.ts';
import { TRAILING_WORKERS } from './trailing.ts';

export const KATACONFIG_CONTROLLER = 'kataconfig';
/** The controller that makes the KataConfig controller's KataNode writes and detached node patches. */
export const BESIDE_WRITES_CONTROLLER = 'kataconfig-writes';
/** The work-queue key for "no KataConfig exists" (not a valid object name, so it never names one). */
export const LEFTOVERS_KEY = '<none>';

/** Pods are cached reduced to what the uninstall check reads: a big cluster's pods then cost little memory. */
export const minimalPod = (p: Pod): Pod => ({
  metadata: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid, resourceVersion: p.metadata.resourceVersion },
  // The node: key slots in use per TEE node (api/tee.ts).
  spec: { runtimeClassName: p.spec?.runtimeClassName, ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}), containers: [] },
  // The kata_*_remote_pods gauges (src/controllers/monitor) count pods by phase.
  status: { phase: p.status?.phase },
});

/**
 * The pod cache every controller shares: every pod but osc's own (the kata monitor's and the adaptor's
 * DaemonSet pods, one per node, run no kata and matter to no controller), reduced. At 1,000 nodes the
 * monitor's rollout alone was 3,000 watch events.
 */
export const POD_CACHE = { labelSelector: `${MANAGED_BY_LABEL}!=${MANAGED_BY}`, transform: minimalPod };

/** A pod of one of the classes beyond kata and kata-remote (kata-cc, the GPU classes). */
const extraClassPod = (p: Pod) => EXTRA_RUNTIME_CLASSES.includes(p.spec?.runtimeClassName ?? '');
/** A pod whose phase no longer holds its RuntimeClass. */
const finished = (p: Pod) => !!p.status?.phase && !ACTIVE_POD_PHASES.includes(p.status.phase);

/** A node change matters when its labels, its annotations (e.g. the Machine Config Operator's) or its deletion change. */
const nodeChanged = (a: Node, b: Node): boolean =>
  !sameStrings(a.metadata.labels, b.metadata.labels) ||
  !sameStrings(a.metadata.annotations, b.metadata.annotations) ||
  a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp;

/**
 * Wires the KataConfig controller into a manager: the caches it reads, and which changes wake it. Every
 * watched change maps to the KataConfig's key, so progress is driven by events, never by a polling loop.
 */
export function setupKataConfigController(
  mgr: Manager,
  platform: Platform<unknown>,
  options: Partial<KataConfigOptions> & { namespace?: string } = {},
): KataConfigReconciler {
  const { namespace = OPERATOR_NAMESPACE, ...kataOptions } = options;
  const kataConfigs = mgr.informer(KataConfigs);
  const nodes = mgr.informer(Nodes, { transform: cachedNode });
  const kataNodes = mgr.informer(KataNodes);
  const platformCaches = platform.watch(mgr);
  const runtimeClasses = mgr.informer(RuntimeClasses);
  const pods = mgr.informer(Pods, POD_CACHE);
  const kataMetrics = new KataMetrics(mgr.metrics.registry);
  const reconcilerOptions = { ...defaultKataConfigOptions, ...kataOptions };
  const featureGates = mgr.informer(ConfigMaps, { namespace, fieldSelector: `metadata.name=${FEATURE_GATES_CONFIGMAP}` });
  const log = mgr.log.child({ controller: KATACONFIG_CONTROLLER });
  // Only a platform with the cluster configuration API (OpenShift) has a release to check, and serves the type.
  const clusterVersions = platformCluster(platform.name).clusterConfig
    ? mgr.informer(ClusterVersions, { fieldSelector: `metadata.name=${CLUSTER_VERSION_NAME}` })
    : undefined;
  const confidential = new ConfidentialClasses({ featureGates, clusterVersions, namespace, platform, events: mgr.events, log });

  const reconciler = new KataConfigReconciler({
    client: mgr.client,
    kataConfigs,
    nodes,
    kataNodes,
    platform,
    observe: platformCaches.observe,
    runtimeClasses,
    pods,
    events: mgr.events,
    metrics: mgr.metrics,
    kataMetrics,
    options: reconcilerOptions,
    log,
    confidential,
    // The API server's time, not this replica's wall clock: the plans measure graces and deadlines from
    // times the API server, kata-deploy and the other replica wrote (src/kube/server-clock.ts).
    now: () => mgr.client.serverClock.now(),
  });
  setupRuntimeClassCleanup(mgr, { runtimeClasses, pods, events: mgr.events });

  // With no KataConfig left, node and platform changes still matter: what the last one left behind goes.
  const all = () => {
    const names = kataConfigs.list().map((k) => objectName(k));
    return names.length ? names : [LEFTOVERS_KEY];
  };
  const existing = () => kataConfigs.list().map((k) => objectName(k));
  const deleting = () =>
    kataConfigs
      .list()
      .filter((k) => k.metadata.deletionTimestamp)
      .map((k) => objectName(k));
  const controller = mgr.addController({
    name: KATACONFIG_CONTROLLER,
    minGapMs: reconcilerOptions.passGapMs,
    watches: [
      // Every KataConfig: when the one in effect goes, an ignored one takes over.
      {
        informer: kataConfigs,
        keys: (k) => [...new Set([objectName(k), ...all().filter((n) => n !== LEFTOVERS_KEY)])],
        updated: (before, after) => !reconciler.ownStatusWrite(before, after),
      },
      { informer: nodes, keys: all, updated: nodeChanged },
      // A KataNode made or deleted by someone else is put right; our own status writes wake nothing.
      { informer: kataNodes, keys: all, updated: () => false },
      ...platformCaches.caches.map(({ informer, updated }) => ({ informer, keys: all, ...(updated ? { updated } : {}) })),
      { informer: runtimeClasses, keys: all },
      // An edit of the feature gates, or an upgrade, changes the classes offered.
      { informer: featureGates, keys: all },
      ...(clusterVersions ? [{ informer: clusterVersions, keys: all, updated: releaseChanged }] : []),
      // Pods matter to a blocked uninstall: their deletion lets it proceed at once.
      { informer: pods, keys: (p) => (p.spec?.runtimeClassName ? deleting() : []) },
      // And to a class beyond kata no longer wanted, kept for its pods: the last one gone (deleted, or
      // finished) lets it go at once rather than at the next recheck.
      {
        informer: pods,
        keys: (p) => (extraClassPod(p) && (!pods.get(keyOf(p)) || finished(p)) ? existing() : []),
        updated: (before, after) => !finished(before) && finished(after),
      },
    ],
    reconcile: (key, { log, signal }) => reconciler.reconcile(key, log, signal),
  });
  // A write taken back before any cache showed it (an etcd restore) brings no event: the pass is asked for.
  reconciler.onUnshownExpired(() => {
    for (const key of all()) controller.queue.add(key);
  });
  // The KataNodes' writes and the detached node patches: a work queue of their own, fed by the passes above.
  const trailing = mgr.addController({
    name: BESIDE_WRITES_CONTROLLER,
    workers: TRAILING_WORKERS,
    watches: [],
    reconcile: (key, { signal }) => reconciler.trailing.reconcile(key, signal),
  });
  reconciler.trailing.attach(trailing.queue);
  return reconciler;
}
