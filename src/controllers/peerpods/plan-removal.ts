import { eventNotes } from '../../api/events.ts';
/**
 * The peer pods removal (the KataConfig deleted, or enablePeerPods turned off), as a plan: waits for the
 * pods that use kata-remote, stops the adaptor, lets a creation job finish and deletes the image osc built,
 * then the PeerPodConfig and the node capacities, and only then lets go of the finalizer. Pure, like plan.ts.
 */
import { IMAGE_CONDITIONS, type KataConfig, kataConfigOwner, PEERPODS_CONDITIONS } from '../../api/kataconfig.ts';
import { CAA_DAEMONSET, KATACONFIG_FINALIZER, PEER_POD_CONFIG } from '../../api/names.ts';
import { PeerPodConfigs } from '../../api/peerpodconfig.ts';
import { DaemonSets } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { imageIdOf, imageOf } from '../../peerpods/clouds/index.ts';
import type { Write } from '../../runtime/applier.ts';
import { setCondition } from '../../runtime/conditions.ts';
import { hasFinalizer } from '../../runtime/finalizers.ts';
import { hasAnyCondition, imageConditions, jobPhase, MANAGED_BY, MANAGED_BY_LABEL, ownConditions, PEERPODS_FINALIZER } from './desired.ts';
import type { PeerPodsObserved } from './observed.ts';
import { deleteRequest } from './plan-credentials.ts';
import { completeDeletion, deleteJob, planImageDeletion, recordImage } from './plan-image.ts';
import { nodeCapacityWrites } from './plan-nodes.ts';
import { emptyPlan, type PeerPodsPlan } from './plan-types.ts';

/**
 * Whether the KataConfig controller has begun its uninstall (past the check for pods using the runtime),
 * or is done with it: only then do the peer-pod parts go. The KataConfig controller says so in the field
 * it owns for this, status.uninstallStarted, or by letting go of its finalizer (docs/architecture.md).
 */
export function kataUninstallStarted(kc: KataConfig): boolean {
  return !hasFinalizer(kc, KATACONFIG_FINALIZER) || kc.status?.uninstallStarted === true;
}

const ours = (o: KubeObject | undefined) => o?.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;

const deleteOwn = (o: PeerPodsObserved, resource: Write['resource'], name: string, obj: KubeObject | undefined): Write[] =>
  obj ? [{ op: 'delete', resource, name, namespace: o.options.namespace, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) }] : [];

export function planRemoval(o: PeerPodsObserved, kc: KataConfig, mode: 'delete' | 'disable', now: Date): PeerPodsPlan {
  const plan = emptyPlan();
  if (!hasFinalizer(kc, PEERPODS_FINALIZER)) {
    if (mode === 'disable' && hasAnyCondition(kc.status?.conditions, PEERPODS_CONDITIONS)) plan.conditions = [];
    plan.gauges = 'reset';
    finishStrayDeletion(o, plan);
    // The removal is done, yet an adaptor, a PeerPodConfig or a node's pod VM capacity of ours shows: one the
    // removal's caches had not shown yet (an etcd restore brings back what was deleted, and caches list it
    // again one by one). With peer pods off nothing of ours may run: it goes, as leftovers do.
    const left = leftovers(o);
    plan.writes.push(...left.objects, ...left.capacities);
    if (left.objects.length || left.capacities.length) plan.notes.push({ level: 'info', msg: 'removed peer pods leftovers' });
    return plan;
  }
  // The KataConfig controller decides first whether pods block the uninstall (and says so in InProgress).
  if (mode === 'delete' && !kataUninstallStarted(kc)) return plan;
  if (o.remotePods.length > 0) {
    plan.notes.push({
      level: 'info',
      msg: 'peer pods removal waits for pods using kata-remote',
      fields: { pods: o.remotePods.slice(0, 20), count: o.remotePods.length },
    });
    if (mode === 'disable') {
      plan.events.push({
        type: 'Warning',
        reason: 'PeerPodsRemovalBlocked',
        action: 'Disable',
        note: eventNotes.peerPodsRemovalBlocked(),
      });
    }
    plan.requeueAfterMs = o.options.blockedRecheckMs;
    return plan;
  }

  // 1. No new pod VMs: the adaptor goes first. A creation job in flight is let finish: stopped half way it
  //    may already have made the image (and written PODVM_AMI_ID) without osc knowing that image as its
  //    own, and nobody would delete it. Once it is done, its image is recorded and deleted below.
  plan.writes.push(...deleteOwn(o, DaemonSets, CAA_DAEMONSET, o.daemonSet));
  const creation = o.creationJob;
  if (!creation && o.jobsAwaited.creation) {
    // A creation job just started, not in the cache yet: it may build an image nobody would delete.
    plan.notes.push({ level: 'info', msg: 'peer pods removal waits for the pod VM image creation job to show' });
    return plan; // its cache event brings us back
  }
  if (creation && !creation.metadata.deletionTimestamp) {
    const phase = jobPhase(creation);
    if (phase === 'active') {
      plan.notes.push({ level: 'info', msg: 'peer pods removal waits for the pod VM image creation job to finish' });
      return plan; // the job's completion brings us back
    }
    if (phase === 'complete') {
      const built = imageIdOf(o.configMap?.data);
      if (!built && !o.configMapLive) {
        plan.readConfigMapLive = true;
        return plan;
      }
      if (built) plan.writes.push(...recordImage(o, built));
    }
    plan.writes.push(deleteJob(o, 'creation', creation));
    return plan; // the ConfigMap and job caches catch up, then we go on
  }

  // 2. The image osc built is deleted (never one the administrator supplied).
  const image = planImageDeletion(o, kc, kataConfigOwner(kc, false));
  plan.writes.push(...image.writes);
  plan.notes.push(...image.notes);
  if (image.failed) plan.failedJobs.push(image.failed);
  let conditions = ownConditions(kc.status?.conditions);
  if (image.observation)
    for (const c of imageConditions(image.observation, imageOf(o.configMap?.data))) conditions = setCondition(conditions, c, now);
  plan.conditions = conditions;
  if (image.wait) {
    plan.observeJobs = true;
    return plan;
  }

  // 3. The rest: PeerPodConfig, node capacities, the CredentialsRequest (the image is gone: nothing needs
  //    the credentials any more); then the conditions and the finalizer.
  plan.writes.push(...deleteOwn(o, PeerPodConfigs, PEER_POD_CONFIG, o.peerPodConfig));
  plan.writes.push(...deleteRequest(o));
  plan.writes.push(...nodeCapacityWrites(o, undefined).writes);
  // Turned off, peer pods leaves no condition behind, except the word that the image was kept.
  if (mode === 'disable')
    plan.conditions =
      image.observation?.state === 'kept' ? conditions.filter((c) => (IMAGE_CONDITIONS as readonly string[]).includes(c.type)) : [];
  plan.removeFinalizer = true;
  plan.gauges = 'reset';
  plan.events.push({
    type: 'Normal',
    reason: 'PeerPodsRemoved',
    action: mode === 'delete' ? 'Uninstall' : 'Disable',
    note: eventNotes.peerPodsRemoved(),
  });
  plan.notes.push({ level: 'info', msg: 'peer pods components removed', fields: { mode } });
  return plan;
}

/**
 * A deletion job that finished after its removal did (the job cache lagged behind it, or a finalizer was
 * removed by hand): its bookkeeping is done now, so neither the job nor the image record stays behind. A
 * running one is left to finish (its completion brings us back); a failed one stays for its logs.
 */
function finishStrayDeletion(o: PeerPodsObserved, plan: PeerPodsPlan): void {
  const job = o.deletionJob;
  if (!job || job.metadata.deletionTimestamp || jobPhase(job) !== 'complete') return;
  const done = completeDeletion(o, job);
  plan.writes.push(...done.writes);
  plan.notes.push(...done.notes);
}

/** What of ours must not remain once peer pods are removed: the adaptor and the PeerPodConfig, and the nodes' pod VM capacity. */
function leftovers(o: PeerPodsObserved): { objects: Write[]; capacities: Write[] } {
  const ds = ours(o.daemonSet) ? o.daemonSet : undefined;
  const ppc = ours(o.peerPodConfig) ? o.peerPodConfig : undefined;
  return {
    objects: [...deleteOwn(o, DaemonSets, CAA_DAEMONSET, ds), ...deleteOwn(o, PeerPodConfigs, PEER_POD_CONFIG, ppc)],
    capacities: nodeCapacityWrites(o, undefined).writes,
  };
}

/** With no KataConfig at all, nothing of ours should remain (e.g. a finalizer removed by hand). */
export function planLeftovers(o: PeerPodsObserved): PeerPodsPlan {
  const plan = emptyPlan();
  const left = leftovers(o);
  plan.writes.push(...left.objects);
  const creation = o.creationJob;
  if (creation && !creation.metadata.deletionTimestamp && jobPhase(creation) !== 'failed')
    plan.writes.push(deleteJob(o, 'creation', creation));
  finishStrayDeletion(o, plan);
  plan.writes.push(...left.capacities);
  plan.writes.push(...deleteRequest(o));
  if (left.objects.length) plan.notes.push({ level: 'info', msg: 'removed peer pods leftovers' });
  plan.gauges = 'reset';
  return plan;
}
