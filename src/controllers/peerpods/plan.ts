/**
 * The peer pods controller's plan (docs/peerpods.md): from what its caches show (PeerPodsObserved) and `now`
 * to every write of the pass (PeerPodsPlan). Pure; the reconciler observes, plans, then hands the writes to
 * its applier. Installing checks peer-pods-cm and peer-pods-secret, creates the PeerPodConfig, advertises
 * kata.peerpods.io/vm on the kata nodes, runs the cloud-api-adaptor DaemonSet and the pod VM image jobs, and
 * reports in this controller's own conditions; the removal (plan-removal.ts) undoes all of it.
 */
import { ADAPTOR_OUTDATED, activeKataConfig, type KataConfig, kataConfigOwner } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { PEER_POD_CONFIG } from '../../api/names.ts';
import { PeerPodConfigs, parseLimit } from '../../api/peerpodconfig.ts';
import { DaemonSets } from '../../kube/resources.ts';
import { cloudProvider, defaultCloud, imageIdOf, imageOf } from '../../peerpods/clouds/index.ts';
import { validatePeerPodsConfig } from '../../peerpods/config.ts';
import { adaptorTagsValue } from '../../peerpods/leaks.ts';
import type { Write } from '../../runtime/applier.ts';
import { setCondition } from '../../runtime/conditions.ts';
import { hasFinalizer } from '../../runtime/finalizers.ts';
import { adaptorConfigHash, adaptorEnvOf, adaptorOutdatedCondition, adaptorTLSEnv } from './adaptor.ts';
import {
  configCondition,
  configHash,
  DELETES_IMAGE_ANNOTATION,
  desiredDaemonSet,
  desiredImageJob,
  desiredPeerPodConfig,
  imageConditions,
  isKataNode,
  jobPhase,
  LIMIT_FROM_CM_ANNOTATION,
  ownConditions,
  PEERPODS_FINALIZER,
} from './desired.ts';
import type { PeerPodsObserved } from './observed.ts';
import { type CredentialsPlan, planCredentials } from './plan-credentials.ts';
import { completeDeletion, deleteJob, planImageCreation } from './plan-image.ts';
import { nodeCapacityWrites } from './plan-nodes.ts';
import { planLeftovers, planRemoval } from './plan-removal.ts';
import { emptyPlan, type PeerPodsPlan } from './plan-types.ts';

export function planPeerPods(o: PeerPodsObserved, now: Date): PeerPodsPlan {
  const kc = o.kataConfigs.find((k) => k.metadata.name === o.key);
  if (!kc) return o.kataConfigs.length === 0 ? planLeftovers(o) : emptyPlan();
  const oldest = activeKataConfig(o.kataConfigs);
  if (oldest && oldest.metadata.name !== o.key) return emptyPlan();
  const credentials = planCredentials(o, () => podServiceAccounts(o));
  // A removal uses the credentials it finds (its deletion job needs them) and makes no request.
  if (kc.metadata.deletionTimestamp) return planRemoval(credentials.observed, kc, 'delete', now);
  // A platform without peer pods gets none of their parts (the KataConfig controller says why).
  if (!kc.spec?.enablePeerPods || !o.supportsPeerPods) return planRemoval(credentials.observed, kc, 'disable', now);
  return planInstall(credentials, kc, now);
}

/** The ServiceAccounts the adaptor and the image jobs run as. */
function podServiceAccounts(o: PeerPodsObserved): (string | undefined)[] {
  const owner = { apiVersion: '', kind: '', name: '', uid: '' };
  const ds = desiredDaemonSet({
    namespace: o.options.namespace,
    image: '',
    configHash: '',
    placement: { nodeSelector: {}, tolerations: [] },
    owner,
  });
  const job = desiredImageJob({ kind: 'creation', namespace: o.options.namespace, image: '', backoffLimit: 0, configHash: '', owner });
  const sa = (spec: { serviceAccountName?: unknown } | undefined) =>
    typeof spec?.serviceAccountName === 'string' ? spec.serviceAccountName : undefined;
  return [sa(ds.spec?.template.spec), sa(job.spec?.template.spec)];
}

function planInstall(credentials: CredentialsPlan, kc: KataConfig, now: Date): PeerPodsPlan {
  const o = credentials.observed;
  const plan = emptyPlan();
  const ns = o.options.namespace;
  plan.addFinalizer = !hasFinalizer(kc, PEERPODS_FINALIZER);
  const { configMap: cm, secret } = o;
  plan.writes.push(...credentials.writes);
  const validation = validatePeerPodsConfig(cm, secret, undefined, credentials.check);
  let conditions = setCondition(ownConditions(kc.status?.conditions), configCondition(validation), now);
  const owner = kataConfigOwner(kc, false);

  // A deletion job from an earlier removal (peer pods turned off and on again): let it finish first; a
  // failed one (kept for its logs) is history now.
  let deleting = false;
  const oldDeletion = o.deletionJob;
  if (oldDeletion && !oldDeletion.metadata.deletionTimestamp) {
    const phase = jobPhase(oldDeletion);
    if (phase === 'active') {
      deleting = true;
      const amiId = oldDeletion.metadata.annotations?.[DELETES_IMAGE_ANNOTATION];
      for (const c of imageConditions({ state: 'running', kind: 'deletion', ...(amiId ? { amiId } : {}) }, imageOf(cm?.data)))
        conditions = setCondition(conditions, c, now);
    } else if (phase === 'complete') {
      const done = completeDeletion(o, oldDeletion);
      plan.writes.push(...done.writes);
      plan.notes.push(...done.notes);
    } else plan.writes.push(deleteJob(o, 'deletion', oldDeletion));
  }

  if (validation.config && cm) {
    const hash = configHash(cm, secret);
    plan.writes.push(...peerPodConfigWrites(o, validation.config.limitPerNode, owner));
    // The adaptor starts only with a valid configuration; a later invalid edit does not restart it. It is
    // rewritten when what osc wants changes, not on every hand edit: a `kubectl rollout restart` or an
    // administrator's debugging image stays until then (deleting the DaemonSet brings osc's back). Its pods
    // carry a digest of what the adaptor reads only: an edit of anything else restarts none of them.
    // Where the cloud's tags are filterable, the adaptor tags every VM with the cluster (leaked VMs).
    const tagged = (cloudProvider(cm.data?.CLOUD_PROVIDER) ?? defaultCloud()).tags.clusterTag;
    const ds = desiredDaemonSet({
      namespace: ns,
      image: o.options.images.caa,
      configHash: adaptorConfigHash(cm, secret),
      placement: o.placement,
      owner,
      strategy: o.caaUpdateStrategy,
      tlsEnv: adaptorTLSEnv(o.tlsProfile, adaptorEnvOf(o.daemonSet)),
      ...(o.credentialsWiring ? { credentials: o.credentialsWiring } : {}),
      ...(tagged && o.clusterUID ? { tags: adaptorTagsValue(cm.data?.TAGS, o.clusterUID) } : {}),
    });
    plan.writes.push({ op: 'apply', resource: DaemonSets, object: ds, rewriteOn: 'plan' });
    if (!deleting) {
      const image = planImageCreation(o, kc, imageIdOf(validation.config.data), hash, owner);
      plan.writes.push(...image.writes);
      plan.notes.push(...image.notes);
      if (image.failed) plan.failedJobs.push(image.failed);
      if (image.requeueAfterMs !== undefined) plan.requeueAfterMs = image.requeueAfterMs;
      if (image.readConfigMapLive) plan.readConfigMapLive = true;
      if (image.observation)
        for (const c of imageConditions(image.observation, imageOf(cm.data))) conditions = setCondition(conditions, c, now);
    }
  } else {
    plan.notes.push({
      level: 'info',
      msg: 'peer pods configuration invalid; waiting for it to be fixed',
      fields: { problems: validation.problems.map((p) => p.key) },
    });
  }
  // How many adaptor pods run an older configuration (and, with OnDelete, what to do about it).
  const outdated = adaptorOutdatedCondition(o.daemonSet, ns);
  if (outdated === null) conditions = conditions.filter((c) => c.type !== ADAPTOR_OUTDATED);
  else if (outdated) conditions = setCondition(conditions, outdated, now);
  // The PeerPodConfig's limit; should an administrator remove it, PEERPODS_LIMIT_PER_NODE still holds.
  const ppc = o.peerPodConfig;
  const limit = ppc ? (parseLimit(ppc.spec.limit) ?? validation.config?.limitPerNode) : undefined;
  const capacity = nodeCapacityWrites(o, limit);
  plan.writes.push(...capacity.writes);
  if (ppc && !ppc.metadata.deletionTimestamp) {
    const kataNodes = o.nodes.filter((n) => isKataNode(n, o.placement.nodeSelector)).map((n) => objectName(n));
    const advertised = capacity.advertised;
    const setupCompleted = kataNodes.length > 0 && kataNodes.every((n) => advertised.includes(n)) && !!o.daemonSet;
    plan.peerPodConfigStatus = { setupCompleted, ...(advertised.length ? { nodes: advertised } : {}) };
  }
  plan.gauges = {
    configValid: !!validation.config,
    configProblems: validation.problems.length,
    vmLimit: limit ?? 0,
    nodes: capacity.advertised.length,
  };
  plan.observeJobs = true;
  plan.conditions = conditions;
  return plan;
}

/**
 * The PeerPodConfig: made whole when missing; afterwards only its limit follows PEERPODS_LIMIT_PER_NODE, when
 * that changes: spec.limit belongs to the administrator (the documented oc patch) in between, so it is
 * merge-patched, never applied (an apply would take it back).
 */
function peerPodConfigWrites(o: PeerPodsObserved, limit: number, owner: ReturnType<typeof kataConfigOwner>): Write[] {
  const ns = o.options.namespace;
  const existing = o.peerPodConfig;
  if (!existing) return [{ op: 'apply', resource: PeerPodConfigs, object: desiredPeerPodConfig(ns, limit, o.placement, owner) }];
  if (existing.metadata.annotations?.[LIMIT_FROM_CM_ANNOTATION] === String(limit)) return [];
  return [
    {
      op: 'patch',
      resource: PeerPodConfigs,
      name: PEER_POD_CONFIG,
      namespace: ns,
      patch: { metadata: { annotations: { [LIMIT_FROM_CM_ANNOTATION]: String(limit) } }, spec: { limit: String(limit) } },
    },
  ];
}
