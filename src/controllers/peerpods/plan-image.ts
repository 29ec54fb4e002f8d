/**
 * The pod VM image's part of a peer pods plan: when the creation job runs, when its image is recorded as
 * osc's, when the deletion job runs and what a finished or failed job leaves behind. Pure: from the cached
 * jobs and peer-pods-cm (PeerPodsObserved) and `now` to writes and an observation for the conditions.
 */
import type { KataConfig } from '../../api/kataconfig.ts';
import { IMAGE_CONDITIONS, IMAGE_JOB_COMPLETED } from '../../api/kataconfig.ts';
import { PEER_PODS_CM } from '../../api/names.ts';
import { ConfigMaps, type Job, Jobs } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { imageDeletionEnvOf, imageIdOf, imageKeyOf, imageOf } from '../../peerpods/clouds/index.ts';
import type { Write } from '../../runtime/applier.ts';
import { findCondition } from '../../runtime/conditions.ts';
import {
  CONFIG_HASH_ANNOTATION,
  configHash,
  DELETES_IMAGE_ANNOTATION,
  deletionInputs,
  deletionRetryDue,
  desiredImageJob,
  hasAnyCondition,
  IMAGE_ID_ANNOTATION,
  type ImageJobKind,
  type ImageObservation,
  imageJobName,
  jobFailureDetail,
  jobPhase,
  KEEP_IMAGE_ANNOTATION,
} from './desired.ts';
import type { PeerPodsObserved } from './observed.ts';
import type { PlanNote } from './plan-types.ts';

/**
 * How long after an image job completed its image key (PODVM_AMI_ID on AWS) may still be on its way to the ConfigMap cache (the
 * job writes it before it completes, but the two caches are fed by separate watches). Past it, a completed
 * job without an image is reported.
 */

/** What the image's part of a pass decides. */
export interface ImageStep {
  observation?: ImageObservation;
  writes: Write[];
  notes: PlanNote[];
  failed?: { kind: ImageJobKind; uid: string };
  /** The removal waits for the image (a job running, failed or just finished). */
  wait: boolean;
  /** A completed job whose image the cache does not show: read peer-pods-cm live and plan again (PeerPodsPlan). */
  readConfigMapLive?: boolean;
  requeueAfterMs?: number;
}

const step = (over: Partial<ImageStep> = {}): ImageStep => ({ writes: [], notes: [], wait: false, ...over });

export const deleteJob = (o: PeerPodsObserved, kind: ImageJobKind, job: Job): Write => ({
  op: 'delete',
  resource: Jobs,
  name: imageJobName(kind),
  namespace: o.options.namespace,
  ...(job.metadata.uid ? { uid: job.metadata.uid } : {}),
  propagationPolicy: 'Background',
});

/** Records the image as osc's (an annotation on peer-pods-cm): only that image is deleted on uninstall. */
export function recordImage(o: PeerPodsObserved, amiId: string): Write[] {
  const cm = o.configMap;
  if (!cm || cm.metadata.annotations?.[IMAGE_ID_ANNOTATION] === amiId) return [];
  return [
    {
      op: 'patch',
      resource: ConfigMaps,
      name: PEER_PODS_CM,
      namespace: o.options.namespace,
      patch: { metadata: { annotations: { [IMAGE_ID_ANNOTATION]: amiId } } },
    },
  ];
}

const failure = (kind: ImageJobKind, job: Job) => ({ kind, uid: job.metadata.uid ?? '' });

/**
 * The pod VM image while peer pods are on: while the image key (PODVM_AMI_ID on AWS) is empty, Job osc-podvm-image-creation builds
 * it and fills it in. A finished job is read once: success records the image as osc's and removes the job;
 * a failure keeps the job (its logs) and is not retried until the configuration changes or the job is
 * deleted.
 */
export function planImageCreation(o: PeerPodsObserved, kc: KataConfig, amiId: string, hash: string, owner: OwnerReference): ImageStep {
  const job = o.creationJob;
  if (job?.metadata.deletionTimestamp) return step();
  if (job) {
    const phase = jobPhase(job);
    if (phase === 'active') return step({ observation: { state: 'running', kind: 'creation' } });
    if (phase === 'complete') {
      const built = imageIdOf(o.configMap?.data);
      if (built) {
        const remove = deleteJob(o, 'creation', job);
        return step({
          observation: { state: 'completed', kind: 'creation', amiId: built },
          writes: [...recordImage(o, built), remove],
          notes: [{ level: 'info', msg: 'pod VM image created', fields: { amiId: built }, after: remove }],
        });
      }
      if (!o.configMapLive) return step({ readConfigMapLive: true });
    }
    // Failed (or completed without an image): reported; retried only for a changed configuration.
    if (job.metadata.annotations?.[CONFIG_HASH_ANNOTATION] !== hash) {
      const remove = deleteJob(o, 'creation', job);
      return step({
        writes: [remove],
        notes: [{ level: 'info', msg: 'peer pods configuration changed since the pod VM image job failed: trying again', after: remove }],
      });
    }
    // The administrator supplied an image instead.
    if (amiId) return step({ observation: { state: 'provided', amiId }, writes: [deleteJob(o, 'creation', job)] });
    const detail =
      phase === 'complete' ? `it completed without setting ${imageKeyOf(o.configMap?.data)} in ${PEER_PODS_CM}` : jobFailureDetail(job);
    return step({
      observation: { state: 'failed', kind: 'creation', detail, namespace: o.options.namespace },
      failed: failure('creation', job),
    });
  }
  if (amiId) {
    const conds = kc.status?.conditions;
    if (findCondition(conds, IMAGE_JOB_COMPLETED)?.status === 'True') return step();
    return step(hasAnyCondition(conds, IMAGE_CONDITIONS) ? { observation: { state: 'provided', amiId } } : {});
  }
  // No job and no image: build one, unless the cache is a write of ours behind.
  if (o.configMapAwaited) return step();
  const creation = desiredImageJob({
    kind: 'creation',
    creationEnv: imageOf(o.configMap?.data).creationEnv,
    namespace: o.options.namespace,
    image: o.options.images.podvmBuilder,
    backoffLimit: o.options.imageJobBackoffLimit,
    configHash: hash,
    owner,
    ...(o.credentialsWiring ? { credentials: o.credentialsWiring } : {}),
  });
  const start: Write = { op: 'apply', resource: Jobs, object: creation };
  return step({
    observation: { state: 'running', kind: 'creation' },
    writes: [start],
    notes: [{ level: 'info', msg: `${imageKeyOf(o.configMap?.data)} is empty: started the pod VM image creation job`, after: start }],
  });
}

/** A finished deletion job: PODVM_AMI_ID ends empty (the job clears it; if it did not, we do), then the job goes. */
export function completeDeletion(o: PeerPodsObserved, job: Job): Pick<ImageStep, 'writes' | 'notes'> {
  const deleted = job.metadata.annotations?.[DELETES_IMAGE_ANNOTATION] ?? '';
  const cm = o.configMap;
  const clear = deleted !== '' && imageIdOf(cm?.data) === deleted;
  const writes: Write[] = [];
  if (cm && (clear || cm.metadata.annotations?.[IMAGE_ID_ANNOTATION] === deleted)) {
    writes.push({
      op: 'patch',
      resource: ConfigMaps,
      name: PEER_PODS_CM,
      namespace: o.options.namespace,
      // Pinned to the version the plan read: the job may have written the ConfigMap since (a 409 retries).
      patch: {
        metadata: { annotations: { [IMAGE_ID_ANNOTATION]: null }, resourceVersion: cm.metadata.resourceVersion },
        ...(clear ? { data: { [imageKeyOf(cm?.data)]: '' } } : {}),
      },
    });
  }
  const remove = deleteJob(o, 'deletion', job);
  writes.push(remove);
  return { writes, notes: [{ level: 'info', msg: 'pod VM image deleted', fields: { amiId: deleted }, after: remove }] };
}

/**
 * While peer pods are removed: deletes the pod VM image osc built (PODVM_AMI_ID equals the image recorded on
 * peer-pods-cm) with Job osc-podvm-image-deletion, then empties PODVM_AMI_ID. A failed deletion holds the
 * removal (the image would leak otherwise), is reported in the conditions and an event, and is retried once
 * peer-pods-cm or peer-pods-secret changes or the job is deleted; the KEEP_IMAGE_ANNOTATION lets the removal
 * go on without deleting the image.
 */
export function planImageDeletion(o: PeerPodsObserved, kc: KataConfig, owner: OwnerReference): ImageStep {
  const cm = o.configMap;
  const amiId = imageIdOf(cm?.data);
  const oursToDelete = amiId !== '' && cm?.metadata.annotations?.[IMAGE_ID_ANNOTATION] === amiId;
  const job = o.deletionJob;
  if (job?.metadata.deletionTimestamp) return step({ wait: true });
  const deleting = job?.metadata.annotations?.[DELETES_IMAGE_ANNOTATION] ?? '';

  if (job && jobPhase(job) === 'complete') {
    return step({ ...completeDeletion(o, job), observation: { state: 'completed', kind: 'deletion', amiId: deleting } });
  }
  const keep = kc.metadata.annotations?.[KEEP_IMAGE_ANNOTATION] === 'true';
  if (job && jobPhase(job) === 'failed') {
    const failed = failure('deletion', job);
    if (keep) {
      return step({
        observation: { state: 'kept', amiId: deleting },
        failed,
        notes: [
          { level: 'info', msg: 'pod VM image deletion failed; the image is kept as the KataConfig asks', fields: { amiId: deleting } },
        ],
      });
    }
    if (deletionRetryDue(job, cm, o.secret)) {
      const remove = deleteJob(o, 'deletion', job);
      const msg = 'peer pods configuration changed since the image deletion failed: retrying it';
      return step({ wait: true, failed, writes: [remove], notes: [{ level: 'info', msg, fields: { amiId: deleting }, after: remove }] });
    }
    return step({
      wait: true,
      failed,
      observation: {
        state: 'failed',
        kind: 'deletion',
        detail: jobFailureDetail(job),
        namespace: o.options.namespace,
        kataConfig: kc.metadata.name,
      },
      notes: [
        {
          level: 'warn',
          msg: 'pod VM image deletion failed; the removal waits until it succeeds or the image is kept',
          fields: { amiId: deleting },
        },
      ],
    });
  }
  if (job) return step({ wait: true, observation: { state: 'running', kind: 'deletion', amiId: deleting } });
  // Started by this process but not in the job cache yet: the job may already have emptied PODVM_AMI_ID, so
  // the ConfigMap alone would say there is nothing to delete, and the removal would go on without the job.
  if (o.jobsAwaited.deletion) return step({ wait: true });
  // Our own last write to peer-pods-cm (the image recorded, or a deletion booked) not in the cache yet:
  // nothing is decided from it. Read before the record, a cache one write behind would say "nothing of
  // ours" and let the removal go on while the image it just recorded stays in the cloud.
  if (o.configMapAwaited) return step({ wait: true });
  const recorded = cm?.metadata.annotations?.[IMAGE_ID_ANNOTATION] ?? '';
  if (cm && recorded !== '' && amiId === '') return bookDeletion(o, cm, recorded);
  if (!oursToDelete) return step();
  if (keep) {
    return step({
      observation: { state: 'kept', amiId },
      notes: [{ level: 'info', msg: 'keeping the pod VM image as the KataConfig asks', fields: { amiId } }],
    });
  }
  const deletion = desiredImageJob({
    kind: 'deletion',
    namespace: o.options.namespace,
    image: o.options.images.podvmBuilder,
    backoffLimit: o.options.imageJobBackoffLimit,
    configHash: configHash(cm, o.secret),
    owner,
    amiId,
    imageEnv: imageDeletionEnvOf(cm?.data),
    inputs: deletionInputs(cm, o.secret),
    ...(o.credentialsWiring ? { credentials: o.credentialsWiring } : {}),
  });
  const start: Write = { op: 'apply', resource: Jobs, object: deletion };
  return step({
    wait: true,
    observation: { state: 'running', kind: 'deletion', amiId },
    writes: [start],
    notes: [{ level: 'info', msg: 'started the pod VM image deletion job', fields: { amiId }, after: start }],
  });
}

/**
 * An image recorded as osc's whose key is empty, and no job in the cache: a deletion job emptied the key and
 * is gone, or not in the cache yet (started before a restart, its watch down). It is not "nothing to do":
 * the deletion is booked (the record cleared, pinned to the version read, so a job writing meanwhile makes
 * it a 409 and a new pass) and the removal waits for the cache to show it. A job still running is caught by
 * the live read made before the finalizer goes (reconciler.ts), and a finished one found later is cleaned
 * up by the removal's stray-deletion step.
 */
function bookDeletion(o: PeerPodsObserved, cm: NonNullable<PeerPodsObserved['configMap']>, recorded: string): ImageStep {
  const book: Write = {
    op: 'patch',
    resource: ConfigMaps,
    name: PEER_PODS_CM,
    namespace: o.options.namespace,
    patch: { metadata: { annotations: { [IMAGE_ID_ANNOTATION]: null }, resourceVersion: cm.metadata.resourceVersion } },
  };
  return step({
    wait: true,
    writes: [book],
    notes: [
      {
        level: 'info',
        msg: 'pod VM image already deleted (its key is empty): its record is cleared',
        fields: { amiId: recorded },
        after: book,
      },
    ],
  });
}
