import { CCO_NAMESPACE, CLOUD_CREDENTIAL_NAME, CloudCredentials, CredentialsRequests } from '../../api/cloudcredential.ts';
import { PEER_PODS_CCO_SECRET } from '../../api/credentials-text.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../api/featuregates.ts';
import { type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { objectName, sameStrings } from '../../api/meta.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  OPERATOR_NAMESPACE,
  PEER_POD_CONFIG,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../api/names.ts';
import { APIServers } from '../../api/openshift.ts';
import { PeerPodConfigs } from '../../api/peerpodconfig.ts';
import { ConfigMaps, DaemonSets, Jobs, type Node, Nodes, type Pod, Pods, Secrets } from '../../kube/resources.ts';
import { credentialsRequestNames } from '../../peerpods/credentials.ts';
import type { Platform } from '../../platform/platform.ts';
import { CLUSTER_APISERVER } from '../../runtime/clustertls.ts';
import type { Manager } from '../../runtime/manager.ts';
import { POD_CACHE } from '../kataconfig/controller.ts';
import { cachedNode } from '../nodecache.ts';
import { CAA_POD_SELECTOR } from './adaptor.ts';
import { IMAGE_JOB_SELECTOR, imagesFromEnv, ownConditions } from './desired.ts';
import { type LeakCollectorOptions, setupLeakedVMCollector } from './leaks-controller.ts';
import { PeerPodsMetrics } from './metrics.ts';
import { defaultPeerPodsOptions, type PeerPodsOptions, PeerPodsReconciler, REMOTE_PODS_INDEX } from './reconciler.ts';
import { PodVMMetrics, watchAdaptorRestarts } from './vm-metrics.ts';

export const PEERPODS_CONTROLLER = 'peerpods';

/**
 * A node matters to peer pods when its peer-pod capacity or its deletion changes, and, while a KataConfig
 * enables peer pods, when its labels (kata-oc, roles) change: they decide which nodes advertise the capacity
 * and where the adaptor runs. Without peer pods no label can change the plan (the capacity goes from every
 * node, whatever its labels), and an install labels every node: on 1,000 nodes that woke 1,000 passes over
 * 1,000 nodes each, 8 % of the operator's CPU during the install, growing with the square of the nodes.
 */
export const nodeChanged =
  (peerPodsWanted: () => boolean) =>
  (a: Node, b: Node): boolean =>
    a.status?.capacity?.[PEER_POD_VM_RESOURCE] !== b.status?.capacity?.[PEER_POD_VM_RESOURCE] ||
    a.status?.allocatable?.[PEER_POD_VM_RESOURCE] !== b.status?.allocatable?.[PEER_POD_VM_RESOURCE] ||
    a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp ||
    (peerPodsWanted() && !sameStrings(a.metadata.labels, b.metadata.labels));

/**
 * A KataConfig version matters to peer pods when what its plan reads changed: the spec, the metadata it
 * keys on (deletion, finalizers, annotations), status.uninstallStarted and its own conditions. The KataConfig
 * controller's status writes (the InProgress condition and the kataNodes lists, a few hundred during a
 * 1,000-node install) change none of these, and each woke a pass over every node.
 */
export const kataConfigChanged = (a: KataConfig, b: KataConfig): boolean =>
  a.metadata.uid !== b.metadata.uid ||
  a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp ||
  (a.metadata.finalizers ?? []).join() !== (b.metadata.finalizers ?? []).join() ||
  !sameStrings(a.metadata.annotations, b.metadata.annotations) ||
  a.status?.uninstallStarted !== b.status?.uninstallStarted ||
  JSON.stringify(a.spec) !== JSON.stringify(b.spec) ||
  JSON.stringify(ownConditions(a.status?.conditions)) !== JSON.stringify(ownConditions(b.status?.conditions));

/**
 * Wires the peer pods controller into a manager. It reconciles the KataConfig's key, like the KataConfig
 * controller, but owns only the peer-pod parts: its caches watch exactly the objects it reads (the
 * ConfigMap, Secret, PeerPodConfig and DaemonSet by name, the image jobs by label), so an edit of
 * peer-pods-cm or peer-pods-secret is re-checked at once.
 */
export function setupPeerPodsController(
  mgr: Manager,
  platform: Pick<Platform, 'kataNodeSelector' | 'kataNodeTolerations' | 'supportsPeerPods'>,
  options: Partial<PeerPodsOptions> & { leakedVMs?: LeakCollectorOptions } = {},
): PeerPodsReconciler {
  const opts: PeerPodsOptions = {
    namespace: OPERATOR_NAMESPACE,
    ...defaultPeerPodsOptions,
    ...options,
    images: { ...imagesFromEnv(), ...options.images },
  };
  const namespace = opts.namespace;
  const byName = (name: string) => ({ namespace, fieldSelector: `metadata.name=${name}` });
  const kataConfigs = mgr.informer(KataConfigs);
  const configMaps = mgr.informer(ConfigMaps, byName(PEER_PODS_CM));
  const secrets = mgr.informer(Secrets, byName(PEER_PODS_SECRET));
  const peerPodConfigs = mgr.informer(PeerPodConfigs, byName(PEER_POD_CONFIG));
  const daemonSets = mgr.informer(DaemonSets, byName(CAA_DAEMONSET));
  const jobs = mgr.informer(Jobs, { namespace, labelSelector: IMAGE_JOB_SELECTOR });
  const nodes = mgr.informer(Nodes, { transform: cachedNode });
  // The same caches as the KataConfig controller's and the TLS follower's.
  const featureGates = mgr.informer(ConfigMaps, byName(FEATURE_GATES_CONFIGMAP));
  const apiServers = options.clusterTLSProfile
    ? mgr.informer(APIServers, { fieldSelector: `metadata.name=${CLUSTER_APISERVER}` })
    : undefined;
  // The adaptor's pods, for the restarts they go through.
  const adaptorPods = mgr.informer(Pods, { namespace, labelSelector: CAA_POD_SELECTOR });
  // The same (reduced) pod cache as the KataConfig controller's, indexed by runtime class.
  // Where a Cloud Credential Operator runs (OpenShift): osc's CredentialsRequest, the Secret it names and
  // the cluster's credentials mode (docs/cloud-credentials.md).
  const cco = opts.cloudCredentials
    ? {
        // One small cache per cloud's request name: osc's rights on requests are limited to those names.
        requests: credentialsRequestNames().map((name) =>
          mgr.informer(CredentialsRequests, { namespace: CCO_NAMESPACE, fieldSelector: `metadata.name=${name}` }),
        ),
        secrets: mgr.informer(Secrets, byName(PEER_PODS_CCO_SECRET)),
        config: mgr.informer(CloudCredentials, { fieldSelector: `metadata.name=${CLOUD_CREDENTIAL_NAME}` }),
      }
    : undefined;
  const pods = mgr.informer(Pods, POD_CACHE);
  pods.addIndex(REMOTE_PODS_INDEX, (p: Pod) => (p.spec?.runtimeClassName ? [p.spec.runtimeClassName] : []));
  const vmMetrics = new PodVMMetrics(mgr.metrics.registry);
  watchAdaptorRestarts(adaptorPods, vmMetrics);
  if (options.leakedVMs) setupLeakedVMCollector(mgr, vmMetrics, { namespace, ...options.leakedVMs });

  const reconciler = new PeerPodsReconciler({
    client: mgr.client,
    kataConfigs,
    configMaps,
    secrets,
    peerPodConfigs,
    daemonSets,
    jobs,
    nodes,
    platform,
    pods,
    featureGates,
    ...(apiServers ? { apiServers } : {}),
    ...(cco ? { cloudCredentials: cco } : {}),
    events: mgr.events,
    metrics: mgr.metrics,
    peerPodsMetrics: new PeerPodsMetrics(mgr.metrics.registry),
    options: opts,
  });

  // With no KataConfig, a change still wakes one reconcile (under a name no KataConfig has) that removes
  // leftovers, should there be any.
  const all = () => {
    const names = kataConfigs.list().map((k) => objectName(k));
    return names.length ? names : [''];
  };
  const controller = mgr.addController({
    name: PEERPODS_CONTROLLER,
    watches: [
      { informer: kataConfigs, keys: (k) => [objectName(k)], updated: kataConfigChanged },
      { informer: configMaps, keys: all },
      { informer: secrets, keys: all },
      { informer: peerPodConfigs, keys: all },
      { informer: daemonSets, keys: all },
      { informer: jobs, keys: all },
      { informer: nodes, keys: all, updated: nodeChanged(() => kataConfigs.list().some((k) => k.spec?.enablePeerPods)) },
      { informer: featureGates, keys: all },
      ...(apiServers ? [{ informer: apiServers, keys: all }] : []),
      ...(cco
        ? [
            ...cco.requests.map((informer) => ({ informer, keys: all })),
            { informer: cco.secrets, keys: all },
            { informer: cco.config, keys: all },
          ]
        : []),
      { informer: pods, keys: (p) => (p.spec?.runtimeClassName === KATA_REMOTE_RUNTIME_CLASS ? all() : []) },
    ],
    reconcile: (key, { log, signal }) => reconciler.reconcile(key, log, signal),
  });
  // A write taken back before any cache showed it (an etcd restore) brings no event: the pass is asked for.
  reconciler.onUnshownExpired(() => {
    for (const key of all()) controller.queue.add(key);
  });
  return reconciler;
}
