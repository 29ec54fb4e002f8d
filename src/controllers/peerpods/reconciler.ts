import type { Logger } from 'pino';
import { eventNotes } from '../../api/events.ts';
import {
  activeKataConfig,
  CONFIG_VALID,
  IMAGE_CONDITIONS,
  IMAGE_JOB_COMPLETED,
  IMAGE_JOB_FAILED,
  IMAGE_JOB_RUNNING,
  type KataConfig,
  KataConfigs,
  kataConfigOwner,
  PEERPODS_CONDITIONS,
} from '../../api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  KATACONFIG_FINALIZER,
  PEER_POD_CONFIG,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../api/names.ts';
import { type PeerPodConfig, PeerPodConfigs, parseLimit } from '../../api/peerpodconfig.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage, isAlreadyExists, isConflict, isInvalid, isNotFound } from '../../kube/errors.ts';
import {
  type ConfigMap,
  ConfigMaps,
  type DaemonSet,
  DaemonSets,
  type Job,
  Jobs,
  type Node,
  Nodes,
  type Pod,
  type Secret,
} from '../../kube/resources.ts';
import type { Condition, KubeObject, OwnerReference } from '../../kube/types.ts';
import { validatePeerPodsConfig } from '../../peerpods/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { type ConditionInput, findCondition, setCondition } from '../../runtime/conditions.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { RuntimeMetrics } from '../../runtime/metrics.ts';
import { applyStatusIfChanged, writeStatusIfChanged } from '../../runtime/status.ts';
import {
  CONFIG_HASH_ANNOTATION,
  configCondition,
  configHash,
  DEFAULT_IMAGES,
  DELETES_IMAGE_ANNOTATION,
  deletionInputs,
  deletionRetryDue,
  desiredDaemonSet,
  desiredImageJob,
  desiredPeerPodConfig,
  hasAnyCondition,
  IMAGE_ID_ANNOTATION,
  type ImageJobKind,
  type ImageObservation,
  imageConditions,
  imageJobName,
  isKataNode,
  jobFailureDetail,
  jobPhase,
  type KataNodePlacement,
  KEEP_IMAGE_ANNOTATION,
  LIMIT_FROM_CM_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ownConditions,
  PEERPODS_FINALIZER,
  type PeerPodsImages,
  peerPodsStatusShare,
  SPEC_HASH_ANNOTATION,
} from './desired.ts';
import type { PeerPodsMetrics } from './metrics.ts';

export interface PeerPodsOptions {
  /** Where peer-pods-cm, peer-pods-secret, the PeerPodConfig, the DaemonSet and the jobs live. */
  namespace: string;
  images: PeerPodsImages;
  /** Retries of a pod VM image job before it is Failed (and reported, not retried). */
  imageJobBackoffLimit: number;
  /** How often a removal waiting for kata-remote pods to go looks again (pod deletions also wake it). */
  blockedRecheckMs: number;
}

export const defaultPeerPodsOptions: Omit<PeerPodsOptions, 'namespace'> = {
  images: DEFAULT_IMAGES,
  imageJobBackoffLimit: 1,
  blockedRecheckMs: 15_000,
};

export const REMOTE_PODS_INDEX = 'peerpods.runtimeClassName';

export interface PeerPodsContext {
  client: KubeClient;
  kataConfigs: Informer<KataConfig>;
  configMaps: Informer<ConfigMap>;
  secrets: Informer<Secret>;
  peerPodConfigs: Informer<PeerPodConfig>;
  daemonSets: Informer<DaemonSet>;
  jobs: Informer<Job>;
  nodes: Informer<Node>;
  /** Where the kata nodes are: the platform's selector and tolerations. */
  platform: Pick<Platform, 'kataNodeSelector' | 'kataNodeTolerations' | 'supportsPeerPods'>;
  /** Pods, indexed by runtime class under REMOTE_PODS_INDEX. */
  pods: Informer<Pod>;
  events: EventRecorder;
  metrics?: RuntimeMetrics;
  peerPodsMetrics?: PeerPodsMetrics;
  options: PeerPodsOptions;
}

const ownerOf = (kc: KataConfig): OwnerReference => kataConfigOwner(kc, false);

const ours = (o: { metadata: { labels?: Record<string, string> } } | undefined) => o?.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;

/** The event worth recording when one of our conditions changes, if any. */
function conditionEvent(prev: Condition | undefined, next: Condition | undefined) {
  if (!next || (prev && prev.status === next.status && prev.reason === next.reason && prev.message === next.message)) return undefined;
  switch (next.type) {
    case CONFIG_VALID:
      if (next.status === 'False') return { type: 'Warning' as const, reason: 'InvalidPeerPodsConfiguration', note: next.message };
      if (prev?.status === 'True') return undefined; // only the warnings changed
      return { type: 'Normal' as const, reason: 'PeerPodsConfigurationValid', note: next.message };
    case IMAGE_JOB_RUNNING:
      if (next.reason === 'ImageKept' && prev?.reason !== 'ImageKept')
        return { type: 'Normal' as const, reason: 'PodVMImageKept', note: next.message };
      return next.status === 'True' ? { type: 'Normal' as const, reason: 'PodVMImageJobRunning', note: next.message } : undefined;
    case IMAGE_JOB_COMPLETED:
      if (next.status !== 'True') return undefined;
      return {
        type: 'Normal' as const,
        reason: next.reason === 'ImageDeleted' ? 'PodVMImageDeleted' : 'PodVMImageCreated',
        note: next.message,
      };
    case IMAGE_JOB_FAILED:
      return next.status === 'True' ? { type: 'Warning' as const, reason: 'PodVMImageJobFailed', note: next.message } : undefined;
    default:
      return undefined;
  }
}

/**
 * Reconciles the peer-pod parts of the (single) KataConfig when it enables peer pods (docs/peerpods.md): checks
 * peer-pods-cm and peer-pods-secret, creates the PeerPodConfig, advertises kata.peerpods.io/vm on the kata
 * nodes, runs the cloud-api-adaptor DaemonSet and the pod VM image jobs, and reports in its own conditions.
 * When peer pods are turned off or the KataConfig is deleted it removes all of it, deleting the image it
 * built first, and only then lets go of its finalizer. The InProgress rollout belongs to the KataConfig
 * controller; this one never touches it.
 */
export class PeerPodsReconciler {
  private readonly ctx: PeerPodsContext;
  private readonly failuresCounted = new Set<string>();

  constructor(ctx: PeerPodsContext) {
    this.ctx = ctx;
  }

  private get ns(): string {
    return this.ctx.options.namespace;
  }

  private cached<T extends KubeObject>(informer: Informer<T>, name: string): T | undefined {
    return informer.get(`${this.ns}/${name}`);
  }

  async reconcile(name: string, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    try {
      return await this.reconcileOnce(name, log, signal);
    } catch (e) {
      // Every object we write with a resourceVersion is one we watch: a 409 means a newer version is on its
      // way to our cache, and its event brings us back. No error, no backoff.
      if (!isConflict(e) || isAlreadyExists(e)) throw e;
      log.debug({ err: errorMessage(e) }, 'an object changed meanwhile; reconciling again with the newer version');
      return undefined;
    }
  }

  private async reconcileOnce(name: string, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const kc = this.ctx.kataConfigs.get(name);
    if (!kc) {
      if (this.ctx.kataConfigs.list().length === 0) await this.removeLeftovers(log, signal);
      return undefined;
    }
    const oldest = activeKataConfig(this.ctx.kataConfigs.list());
    if (oldest && oldest.metadata.name !== name) return undefined;
    if (kc.metadata.deletionTimestamp) return this.remove(kc, 'delete', log, signal);
    // A platform without peer pods gets none of their parts (the KataConfig controller says why).
    if (!kc.spec?.enablePeerPods || !this.ctx.platform.supportsPeerPods) return this.remove(kc, 'disable', log, signal);
    return this.install(kc, log, signal);
  }

  // -------------------------------------------------------------------------------------------------------
  // Install

  private async install(kc: KataConfig, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const { client } = this.ctx;
    if (!hasFinalizer(kc, PEERPODS_FINALIZER)) kc = await addFinalizer(client, KataConfigs, kc, PEERPODS_FINALIZER);
    const cm = this.cached(this.ctx.configMaps, PEER_PODS_CM);
    const secret = this.cached(this.ctx.secrets, PEER_PODS_SECRET);
    const validation = validatePeerPodsConfig(cm, secret);
    let conditions = setCondition(ownConditions(kc.status?.conditions), configCondition(validation));
    const nodes = this.ctx.nodes.list();
    const placement = {
      nodeSelector: this.ctx.platform.kataNodeSelector(nodes),
      tolerations: this.ctx.platform.kataNodeTolerations(nodes),
    };
    const owner = ownerOf(kc);

    // A deletion job from an earlier removal (peer pods turned off and on again): let it finish first; a
    // failed one (kept for its logs) is history now.
    let deleting = false;
    const oldDeletion = this.cached(this.ctx.jobs, imageJobName('deletion'));
    if (oldDeletion && !oldDeletion.metadata.deletionTimestamp) {
      const phase = jobPhase(oldDeletion);
      if (phase === 'active') {
        deleting = true;
        const amiId = oldDeletion.metadata.annotations?.[DELETES_IMAGE_ANNOTATION];
        for (const c of imageConditions({ state: 'running', kind: 'deletion', ...(amiId ? { amiId } : {}) }))
          conditions = setCondition(conditions, c);
      } else if (phase === 'complete') await this.completeDeletion(oldDeletion, log, signal);
      else await this.deleteJob('deletion', signal);
    }

    if (validation.config && cm) {
      const hash = configHash(cm, secret);
      await this.ensurePeerPodConfig(validation.config.limitPerNode, placement, owner, signal);
      // The adaptor starts only with a valid configuration; a later invalid edit does not restart it.
      await this.ensureDaemonSet(hash, placement, owner, signal);
      if (!deleting) {
        const observation = await this.reconcileImageCreation(kc, validation.config.amiId, hash, owner, log, signal);
        if (observation) for (const c of imageConditions(observation)) conditions = setCondition(conditions, c);
      }
    } else {
      log.info({ problems: validation.problems.map((p) => p.key) }, 'peer pods configuration invalid; waiting for it to be fixed');
    }
    // The PeerPodConfig's limit; should an administrator remove it, PEERPODS_LIMIT_PER_NODE still holds.
    const ppc = this.cached(this.ctx.peerPodConfigs, PEER_POD_CONFIG);
    const limit = ppc ? (parseLimit(ppc.spec.limit) ?? validation.config?.limitPerNode) : undefined;
    const advertised = await this.syncNodeCapacity(limit, placement.nodeSelector, signal);
    await this.updatePeerPodConfigStatus(advertised, placement.nodeSelector);

    // Metrics first: whoever sees the status change must find them agreeing.
    const m = this.ctx.peerPodsMetrics;
    if (m) {
      m.enabled.set(1);
      m.configValid.set(validation.config ? 1 : 0);
      m.configProblems.set(validation.problems.length);
      m.vmLimit.set(limit ?? 0);
      m.nodes.set(advertised.length);
      this.observeJobs();
    }
    this.observePods();
    await this.writeConditions(kc, conditions);
    return undefined;
  }

  private async ensurePeerPodConfig(
    limit: number,
    placement: KataNodePlacement,
    owner: OwnerReference,
    signal: AbortSignal,
  ): Promise<void> {
    const existing = this.cached(this.ctx.peerPodConfigs, PEER_POD_CONFIG);
    if (!existing) {
      await this.create(PeerPodConfigs, desiredPeerPodConfig(this.ns, limit, placement, owner), signal);
      return;
    }
    // spec.limit belongs to the administrator (the documented oc patch) until PEERPODS_LIMIT_PER_NODE changes.
    if (existing.metadata.annotations?.[LIMIT_FROM_CM_ANNOTATION] === String(limit)) return;
    await this.ctx.client.patch(
      PeerPodConfigs,
      PEER_POD_CONFIG,
      { metadata: { annotations: { [LIMIT_FROM_CM_ANNOTATION]: String(limit) } }, spec: { limit: String(limit) } },
      { namespace: this.ns, signal },
    );
  }

  private async ensureDaemonSet(hash: string, placement: KataNodePlacement, owner: OwnerReference, signal: AbortSignal): Promise<void> {
    const desired = desiredDaemonSet({ namespace: this.ns, image: this.ctx.options.images.caa, configHash: hash, placement, owner });
    const existing = this.cached(this.ctx.daemonSets, CAA_DAEMONSET);
    if (!existing) {
      await this.create(DaemonSets, desired, signal);
      return;
    }
    if (existing.metadata.annotations?.[SPEC_HASH_ANNOTATION] === desired.metadata.annotations?.[SPEC_HASH_ANNOTATION]) return;
    // A full update (not a merge): stale keys (an old node selector, say) must go. A stale cache gets a 409.
    await this.ctx.client.update(
      DaemonSets,
      {
        ...existing,
        metadata: {
          ...existing.metadata,
          labels: { ...existing.metadata.labels, ...desired.metadata.labels },
          annotations: { ...existing.metadata.annotations, ...desired.metadata.annotations },
        },
        spec: desired.spec,
      },
      { signal },
    );
  }

  /**
   * The pod VM image: while PODVM_AMI_ID is empty, Job osc-podvm-image-creation builds it and fills it in.
   * A finished job is read once: success records the image as osc's (an annotation on peer-pods-cm, so that
   * only this image is deleted on uninstall) and removes the job; a failure keeps the job (its logs) and
   * is not retried until the configuration changes or the job is deleted.
   */
  private async reconcileImageCreation(
    kc: KataConfig,
    amiId: string,
    hash: string,
    owner: OwnerReference,
    log: Logger,
    signal: AbortSignal,
  ): Promise<ImageObservation | undefined> {
    const job = this.cached(this.ctx.jobs, imageJobName('creation'));
    if (job?.metadata.deletionTimestamp) return undefined;
    if (job) {
      const phase = jobPhase(job);
      if (phase === 'active') return { state: 'running', kind: 'creation' };
      if (phase === 'complete') {
        // The job writes PODVM_AMI_ID before it completes, but our ConfigMap cache may not have seen it yet.
        const live = await this.ctx.client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
        const built = live?.data?.PODVM_AMI_ID ?? '';
        if (built) {
          await this.recordImage(built, live, signal);
          await this.deleteJob('creation', signal);
          log.info({ amiId: built }, 'pod VM image created');
          return { state: 'completed', kind: 'creation', amiId: built };
        }
      }
      // Failed (or completed without an image): reported; retried only for a changed configuration.
      if (job.metadata.annotations?.[CONFIG_HASH_ANNOTATION] !== hash) {
        log.info('peer pods configuration changed since the pod VM image job failed: trying again');
        await this.deleteJob('creation', signal);
        return undefined;
      }
      if (amiId) {
        // The administrator supplied an image instead.
        await this.deleteJob('creation', signal);
        return { state: 'provided', amiId };
      }
      this.countFailure('creation', job);
      const detail = phase === 'complete' ? `it completed without setting PODVM_AMI_ID in ${PEER_PODS_CM}` : jobFailureDetail(job);
      return { state: 'failed', kind: 'creation', detail, namespace: this.ns };
    }
    if (amiId) {
      const conds = kc.status?.conditions;
      if (findCondition(conds, IMAGE_JOB_COMPLETED)?.status === 'True') return undefined;
      return hasAnyCondition(conds, IMAGE_CONDITIONS) ? { state: 'provided', amiId } : undefined;
    }
    // No job and no image: build one (after a live look, in case the cache lags behind a recent fill).
    const live = await this.ctx.client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
    if (live?.data?.PODVM_AMI_ID) return undefined;
    await this.create(
      Jobs,
      desiredImageJob({
        kind: 'creation',
        namespace: this.ns,
        image: this.ctx.options.images.podvmBuilder,
        backoffLimit: this.ctx.options.imageJobBackoffLimit,
        configHash: hash,
        owner,
      }),
      signal,
    );
    log.info('PODVM_AMI_ID is empty: started the pod VM image creation job');
    return { state: 'running', kind: 'creation' };
  }

  private async recordImage(amiId: string, cm: ConfigMap | undefined, signal: AbortSignal): Promise<void> {
    if (!cm || cm.metadata.annotations?.[IMAGE_ID_ANNOTATION] === amiId) return;
    await this.ctx.client.patch(
      ConfigMaps,
      PEER_PODS_CM,
      { metadata: { annotations: { [IMAGE_ID_ANNOTATION]: amiId } } },
      { namespace: this.ns, signal },
    );
  }

  // -------------------------------------------------------------------------------------------------------
  // Removal (KataConfig deleted, or enablePeerPods turned off)

  private async remove(kc: KataConfig, mode: 'delete' | 'disable', log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const { client } = this.ctx;
    if (!hasFinalizer(kc, PEERPODS_FINALIZER)) {
      if (mode === 'disable' && hasAnyCondition(kc.status?.conditions, PEERPODS_CONDITIONS)) {
        await this.writeConditions(kc, []);
      }
      this.ctx.peerPodsMetrics?.reset();
      this.observePods();
      return undefined;
    }
    if (mode === 'delete' && !kataUninstallStarted(kc)) {
      // The KataConfig controller decides first whether pods block the uninstall (and says so in InProgress).
      return undefined;
    }
    const remote = this.remotePods();
    if (remote.length > 0) {
      log.info({ pods: remote.slice(0, 20), count: remote.length }, 'peer pods removal waits for pods using kata-remote');
      if (mode === 'disable') {
        await this.ctx.events.record(kc, 'Warning', 'PeerPodsRemovalBlocked', 'Disable', eventNotes.peerPodsRemovalBlocked());
      }
      return { requeueAfterMs: this.ctx.options.blockedRecheckMs };
    }

    // 1. No new pod VMs: the adaptor goes first. A creation job in flight is let finish: stopped half way
    //    it may already have made the image (and written PODVM_AMI_ID) without osc knowing that image as
    //    its own, and nobody would delete it. Once it is done, its image is recorded and deleted below.
    if (this.cached(this.ctx.daemonSets, CAA_DAEMONSET)) await client.delete(DaemonSets, CAA_DAEMONSET, { namespace: this.ns, signal });
    const creation = this.cached(this.ctx.jobs, imageJobName('creation'));
    if (creation && !creation.metadata.deletionTimestamp) {
      if (jobPhase(creation) === 'active') {
        log.info('peer pods removal waits for the pod VM image creation job to finish');
        return undefined; // the job's completion brings us back
      }
      if (jobPhase(creation) === 'complete') {
        const live = await client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
        if (live?.data?.PODVM_AMI_ID) await this.recordImage(live.data.PODVM_AMI_ID, live, signal);
      }
      await this.deleteJob('creation', signal);
      return undefined; // the ConfigMap and job caches catch up, then we go on
    }

    // 2. The image osc built is deleted (never one the administrator supplied).
    const { observation, wait } = await this.reconcileImageDeletion(kc, log, signal);
    let conditions = ownConditions(kc.status?.conditions);
    if (observation) for (const c of imageConditions(observation)) conditions = setCondition(conditions, c);
    if (wait) {
      await this.writeConditions(kc, conditions);
      this.observeJobs();
      return undefined;
    }

    // 3. The rest: PeerPodConfig, node capacities; then the conditions and the finalizer.
    await client.delete(DaemonSets, CAA_DAEMONSET, { namespace: this.ns, signal });
    await client.delete(PeerPodConfigs, PEER_POD_CONFIG, { namespace: this.ns, signal });
    await this.syncNodeCapacity(undefined, {}, signal);
    // Turned off, peer pods leaves no condition behind, except the word that the image was kept.
    if (mode === 'disable')
      conditions = observation?.state === 'kept' ? conditions.filter((c) => (IMAGE_CONDITIONS as readonly string[]).includes(c.type)) : [];
    const written = await this.writeConditions(kc, conditions);
    await removeFinalizer(client, KataConfigs, written ?? kc, PEERPODS_FINALIZER);
    this.ctx.peerPodsMetrics?.reset();
    this.observePods();
    await this.ctx.events.record(
      kc,
      'Normal',
      'PeerPodsRemoved',
      mode === 'delete' ? 'Uninstall' : 'Disable',
      eventNotes.peerPodsRemoved(),
    );
    log.info({ mode }, 'peer pods components removed');
    return undefined;
  }

  /**
   * Deletes the pod VM image osc built (PODVM_AMI_ID equals the image recorded on peer-pods-cm) with Job
   * osc-podvm-image-deletion, then empties PODVM_AMI_ID. A failed deletion holds the removal (the image
   * would leak otherwise), is reported in the conditions and an event, and is retried once peer-pods-cm or
   * peer-pods-secret changes or the job is deleted; the KEEP_IMAGE_ANNOTATION lets the removal go on
   * without deleting the image.
   */
  private async reconcileImageDeletion(
    kc: KataConfig,
    log: Logger,
    signal: AbortSignal,
  ): Promise<{ observation?: ImageObservation; wait: boolean }> {
    const { client } = this.ctx;
    const cm = this.cached(this.ctx.configMaps, PEER_PODS_CM);
    const amiId = cm?.data?.PODVM_AMI_ID ?? '';
    const oursToDelete = amiId !== '' && cm?.metadata.annotations?.[IMAGE_ID_ANNOTATION] === amiId;
    const job = this.cached(this.ctx.jobs, imageJobName('deletion'));
    if (job?.metadata.deletionTimestamp) return { wait: true };
    const deleting = job?.metadata.annotations?.[DELETES_IMAGE_ANNOTATION] ?? '';

    if (job && jobPhase(job) === 'complete') {
      await this.completeDeletion(job, log, signal);
      return { observation: { state: 'completed', kind: 'deletion', amiId: deleting }, wait: false };
    }
    const keep = kc.metadata.annotations?.[KEEP_IMAGE_ANNOTATION] === 'true';
    if (job && jobPhase(job) === 'failed') {
      this.countFailure('deletion', job);
      if (keep) {
        log.info({ amiId: deleting }, 'pod VM image deletion failed; the image is kept as the KataConfig asks');
        return { observation: { state: 'kept', amiId: deleting }, wait: false };
      }
      if (deletionRetryDue(job, cm, this.cached(this.ctx.secrets, PEER_PODS_SECRET))) {
        log.info({ amiId: deleting }, 'peer pods configuration changed since the image deletion failed: retrying it');
        await this.deleteJob('deletion', signal);
        return { wait: true };
      }
      log.warn({ amiId: deleting }, 'pod VM image deletion failed; the removal waits until it succeeds or the image is kept');
      const detail = jobFailureDetail(job);
      return { observation: { state: 'failed', kind: 'deletion', detail, namespace: this.ns, kataConfig: kc.metadata.name }, wait: true };
    }
    if (job) return { observation: { state: 'running', kind: 'deletion', amiId: deleting }, wait: true };
    if (!oursToDelete) return { wait: false };
    if (keep) {
      log.info({ amiId }, 'keeping the pod VM image as the KataConfig asks');
      return { observation: { state: 'kept', amiId }, wait: false };
    }
    // Look again before deleting anything: the cache may lag behind our own clearing of PODVM_AMI_ID.
    const live = await client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
    const liveAmi = live?.data?.PODVM_AMI_ID ?? '';
    if (!liveAmi || live?.metadata.annotations?.[IMAGE_ID_ANNOTATION] !== liveAmi) return { wait: true };
    await this.create(
      Jobs,
      desiredImageJob({
        kind: 'deletion',
        namespace: this.ns,
        image: this.ctx.options.images.podvmBuilder,
        backoffLimit: this.ctx.options.imageJobBackoffLimit,
        configHash: configHash(live, this.cached(this.ctx.secrets, PEER_PODS_SECRET)),
        owner: ownerOf(kc),
        amiId: liveAmi,
        inputs: deletionInputs(live, this.cached(this.ctx.secrets, PEER_PODS_SECRET)),
      }),
      signal,
    );
    log.info({ amiId: liveAmi }, 'started the pod VM image deletion job');
    return { observation: { state: 'running', kind: 'deletion', amiId: liveAmi }, wait: true };
  }

  /** A finished deletion job: PODVM_AMI_ID ends empty (the job clears it; if it did not, we do), then the job goes. */
  private async completeDeletion(job: Job, log: Logger, signal: AbortSignal): Promise<void> {
    const { client } = this.ctx;
    const deleted = job.metadata.annotations?.[DELETES_IMAGE_ANNOTATION] ?? '';
    const live = await client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
    const clear = deleted !== '' && live?.data?.PODVM_AMI_ID === deleted;
    if (live && (clear || live.metadata.annotations?.[IMAGE_ID_ANNOTATION] === deleted)) {
      await client.patch(
        ConfigMaps,
        PEER_PODS_CM,
        {
          metadata: { annotations: { [IMAGE_ID_ANNOTATION]: null }, resourceVersion: live.metadata.resourceVersion },
          ...(clear ? { data: { PODVM_AMI_ID: '' } } : {}),
        },
        { namespace: this.ns, signal },
      );
    }
    await this.deleteJob('deletion', signal);
    log.info({ amiId: deleted }, 'pod VM image deleted');
  }

  /** With no KataConfig at all, nothing of ours should remain (e.g. a finalizer removed by hand). */
  private async removeLeftovers(log: Logger, signal: AbortSignal): Promise<void> {
    const { client } = this.ctx;
    let removed = false;
    if (ours(this.cached(this.ctx.daemonSets, CAA_DAEMONSET))) {
      await client.delete(DaemonSets, CAA_DAEMONSET, { namespace: this.ns, signal });
      removed = true;
    }
    if (ours(this.cached(this.ctx.peerPodConfigs, PEER_POD_CONFIG))) {
      await client.delete(PeerPodConfigs, PEER_POD_CONFIG, { namespace: this.ns, signal });
      removed = true;
    }
    const creation = this.cached(this.ctx.jobs, imageJobName('creation'));
    if (creation && !creation.metadata.deletionTimestamp && jobPhase(creation) !== 'failed') await this.deleteJob('creation', signal);
    if ((await this.syncNodeCapacity(undefined, {}, signal)).length === 0 && removed) log.info('removed peer pods leftovers');
    this.ctx.peerPodsMetrics?.reset();
    this.observePods();
  }

  // -------------------------------------------------------------------------------------------------------
  // Shared steps

  /**
   * Advertises kata.peerpods.io/vm = limit in the status (capacity and allocatable) of each kata node, and
   * removes it elsewhere (or everywhere when limit is undefined). Answers the nodes that advertise it.
   */
  private async syncNodeCapacity(limit: number | undefined, kataNodes: Record<string, string>, signal: AbortSignal): Promise<string[]> {
    const path = (field: 'capacity' | 'allocatable') => `/status/${field}/${PEER_POD_VM_RESOURCE.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    const advertised: string[] = [];
    for (const node of this.ctx.nodes.list()) {
      const name = node.metadata.name ?? '';
      const want = limit !== undefined && isKataNode(node, kataNodes) ? String(limit) : undefined;
      const cap = node.status?.capacity?.[PEER_POD_VM_RESOURCE];
      const alloc = node.status?.allocatable?.[PEER_POD_VM_RESOURCE];
      if (want !== undefined) advertised.push(name);
      if (cap === want && alloc === want) continue;
      const ops: unknown[] = [];
      if (want === undefined) {
        if (cap !== undefined) ops.push({ op: 'remove', path: path('capacity') });
        if (alloc !== undefined) ops.push({ op: 'remove', path: path('allocatable') });
      } else {
        ops.push({ op: 'add', path: path('capacity'), value: want });
        if (node.status?.allocatable) ops.push({ op: 'add', path: path('allocatable'), value: want });
      }
      try {
        await this.ctx.client.patch(Nodes, name, ops, { type: 'json', subresource: 'status', signal });
      } catch (e) {
        // The node went away, or a stale cache asked to remove what is already gone: the next event settles it.
        if (!isNotFound(e) && !isInvalid(e)) throw e;
      }
    }
    return advertised.sort();
  }

  private async updatePeerPodConfigStatus(advertised: string[], nodeSelector: Record<string, string>): Promise<void> {
    const ppc = this.cached(this.ctx.peerPodConfigs, PEER_POD_CONFIG);
    if (!ppc || ppc.metadata.deletionTimestamp) return;
    const kataNodes = this.ctx.nodes
      .list()
      .filter((n) => isKataNode(n, nodeSelector))
      .map((n) => n.metadata.name ?? '');
    const setupCompleted =
      kataNodes.length > 0 && kataNodes.every((n) => advertised.includes(n)) && !!this.cached(this.ctx.daemonSets, CAA_DAEMONSET);
    try {
      await writeStatusIfChanged(
        this.ctx.client,
        PeerPodConfigs,
        ppc,
        { setupCompleted, ...(advertised.length ? { nodes: advertised } : {}) },
        this.ctx.metrics,
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /**
   * Applies this controller's conditions on the KataConfig (and only those: any other in the list is left
   * out), with an event for each change worth one. One it no longer applies, the server removes.
   */
  private async writeConditions(kc: KataConfig, conditions: Condition[]): Promise<KataConfig | undefined> {
    const before = kc.status?.conditions;
    const status = peerPodsStatusShare.owned({ conditions });
    const written = await applyStatusIfChanged(this.ctx.client, KataConfigs, kc, status, peerPodsStatusShare, this.ctx.metrics);
    if (!written) return undefined;
    for (const type of PEERPODS_CONDITIONS) {
      const ev = conditionEvent(findCondition(before, type), findCondition(conditions, type));
      if (ev) await this.ctx.events.record(written, ev.type, ev.reason, 'Reconcile', ev.note);
    }
    return written;
  }

  private remotePods(): string[] {
    return this.ctx.pods.byIndex(REMOTE_PODS_INDEX, KATA_REMOTE_RUNTIME_CLASS).map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  }

  private observePods(): void {
    this.ctx.peerPodsMetrics?.pods.set(this.ctx.pods.byIndex(REMOTE_PODS_INDEX, KATA_REMOTE_RUNTIME_CLASS).length);
  }

  private observeJobs(): void {
    const m = this.ctx.peerPodsMetrics;
    if (!m) return;
    for (const kind of ['creation', 'deletion'] as ImageJobKind[]) {
      const job = this.cached(this.ctx.jobs, imageJobName(kind));
      m.setImageJob(kind, job ? jobPhase(job) : undefined);
    }
  }

  private countFailure(kind: ImageJobKind, job: Job): void {
    const uid = job.metadata.uid ?? '';
    if (this.failuresCounted.has(uid)) return;
    this.failuresCounted.add(uid);
    this.ctx.peerPodsMetrics?.imageJobFailures.inc({ job: kind });
  }

  private async deleteJob(kind: ImageJobKind, signal: AbortSignal): Promise<void> {
    await this.ctx.client.delete(Jobs, imageJobName(kind), { namespace: this.ns, propagationPolicy: 'Background', signal });
  }

  private async create<T extends { metadata: { name?: string; namespace?: string } }>(
    rt: Parameters<KubeClient['create']>[0],
    obj: T,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await this.ctx.client.create(rt, obj as never, { signal });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e; // the cache may lag behind our own earlier create
    }
  }
}

/**
 * Whether the KataConfig controller has begun its uninstall (past the check for pods using the runtime),
 * or is done with it: only then do the peer-pod parts go. The KataConfig controller says so in the field
 * it owns for this, status.uninstallStarted, or by letting go of its finalizer (docs/architecture.md).
 */
export function kataUninstallStarted(kc: KataConfig): boolean {
  return !hasFinalizer(kc, KATACONFIG_FINALIZER) || kc.status?.uninstallStarted === true;
}

export type { ConditionInput };
