import { CAA_DAEMONSET, PEER_PODS_CM, PEER_PODS_SECRET } from './names.ts';

/**
 * The peer pods controller's condition texts on the KataConfig (docs/peerpods.md): PeerPodsConfigValid, the
 * three PodVMImageJob* conditions and PeerPodsAdaptorOutdated, their reasons and messages. Written once here;
 * the controller fills them in (the cloud's image key, the job, the namespace), the docs and the tests read them.
 */

/** On a KataConfig: keep the pod VM image osc built when peer pods go (no deletion job runs). */
export const KEEP_IMAGE_ANNOTATION = 'kataconfiguration.openshift.io/keep-podvm-image';

/** The reasons of PeerPodsConfigValid and of the PodVMImageJob* conditions. */
export const peerPodsReasons = {
  invalid: 'InvalidConfiguration',
  valid: 'Valid',
  creationRunning: 'ImageCreationRunning',
  deletionRunning: 'ImageDeletionRunning',
  created: 'ImageCreated',
  deleted: 'ImageDeleted',
  creationFailed: 'ImageCreationFailed',
  deletionFailed: 'ImageDeletionFailed',
  kept: 'ImageKept',
  provided: 'ImageProvided',
} as const;

/**
 * The messages. `job` is the Job's name, `key` the cloud's image key in peer-pods-cm (PODVM_AMI_ID,
 * AZURE_IMAGE_ID, PODVM_IMAGE_NAME), `noun` what the cloud calls an image.
 */
export const peerPodsMessages = {
  /** PeerPodsConfigValid True, with the validation's warnings as notes. */
  configValid: (notes: readonly string[]) =>
    `The peer pods configuration (${PEER_PODS_CM}, ${PEER_PODS_SECRET}) is valid${notes.length ? `; note: ${notes.join('; ')}` : ''}.`,
  imageBuilding: (job: string, key: string) =>
    `Job ${job} is building the pod VM image; ${key} in ${PEER_PODS_CM} is filled in when it is done`,
  imageDeleting: (job: string, image: string | undefined) => `Job ${job} is deleting the pod VM image ${image ?? ''}`.trimEnd(),
  imageCreated: (job: string, image: string, key: string) =>
    `Job ${job} created the pod VM image ${image}; ${key} in ${PEER_PODS_CM} is set`,
  imageDeleted: (job: string, image: string, key: string) =>
    `Job ${job} deleted the pod VM image ${image}; ${key} in ${PEER_PODS_CM} is empty`,
  /** A failed image job: what failed, where to look, and `next` (creationRetry or deletionRetry). */
  imageJobFailed: (job: string, detail: string, namespace: string, next: string) =>
    `Job ${job} failed (${detail}); see oc logs -n ${namespace} jobs/${job} and oc get events -n ${namespace} --field-selector involvedObject.name=${job}; ${next}`,
  creationRetry: (job: string, namespace: string, key: string, noun: string) =>
    `fix the cause, then edit ${PEER_PODS_CM} or delete the job (oc delete job ${job} -n ${namespace}) to try again, or set ${key} to an existing ${noun}`,
  deletionRetry: (job: string, namespace: string, kataConfig: string | undefined) =>
    `the removal waits until the image is deleted: fix the cause and it is retried when ${PEER_PODS_CM} or ${PEER_PODS_SECRET} changes (or delete the job: oc delete job ${job} -n ${namespace}), or keep the image: oc annotate kataconfig ${kataConfig ?? '--all'} ${KEEP_IMAGE_ANNOTATION}=true`,
  imageKept: (image: string, key: string) =>
    `the pod VM image ${image} is kept (${KEEP_IMAGE_ANNOTATION}=true); ${key} in ${PEER_PODS_CM} still names it: delete it from the cloud by hand when it is no longer needed`,
  imageProvided: (image: string, key: string) => `${key} in ${PEER_PODS_CM} is set to ${image}: no pod VM image job is needed`,
  /** A failed Job's detail when its Failed condition says nothing. */
  jobFailed: 'the job failed',
} as const;

/**
 * PeerPodsAdaptorOutdated (docs/peerpods.md, "Adaptor updates"): True while some cloud-api-adaptor pods run
 * an older pod template than the DaemonSet's, and absent otherwise. Its reason by caaUpdateStrategy.
 */
export const ADAPTOR_OUTDATED_REASON = {
  /** caaUpdateStrategy OnDelete: they stay until the administrator deletes them. */
  OnDelete: 'AdaptorPodsPendingDeletion',
} as const;

/**
 * The condition's message, under caaUpdateStrategy OnDelete (the only one that reports it: a rolling update
 * needs nobody): how many, and what to do.
 */
export function adaptorOutdatedMessage(outdated: number, total: number, namespace: string): string {
  const pods = `${outdated} of ${total} cloud-api-adaptor pod${total === 1 ? '' : 's'} (DaemonSet ${namespace}/${CAA_DAEMONSET})`;
  const verb = outdated === 1 ? 'runs' : 'run';
  return (
    `${pods} ${verb} an older configuration; caaUpdateStrategy is OnDelete, so ${outdated === 1 ? 'it keeps' : 'each keeps'} it until deleted: ` +
    `delete ${outdated === 1 ? 'it' : 'them'} to apply it, one node at a time when its peer pods can lose their connection to their VMs for a moment ` +
    `(oc get pods -n ${namespace} -l app=${CAA_DAEMONSET} -L controller-revision-hash lists them; oc delete pod -n ${namespace} <pod>)`
  );
}
