/**
 * Leaked pod VMs (docs/peerpods.md, "Leaked pod VMs"): the tags that tie a pod VM to its cluster and its
 * pod, and the texts osc reports about the VMs it collects.
 */

/**
 * The cloud-api-adaptor's tag naming the cluster a pod VM belongs to: the UID of the cluster's
 * `kube-system` namespace (stable for the cluster's life, unlike any name).
 */
export const CLUSTER_UID_TAG = 'caa-cluster-uid';
/** The tags naming the pod a VM was made for. */
export const POD_NAMESPACE_TAG = 'caa-pod-namespace';
export const POD_NAME_TAG = 'caa-pod-name';
export const POD_UID_TAG = 'caa-pod-uid';

/** The KataConfig condition: True while a leaked pod VM could not be deleted. */
export const PODVM_DELETION_FAILED = 'PodVMDeletionFailed';
export const PODVM_DELETION_FAILED_REASON = 'LeakedPodVMNotDeleted';
export const PODVM_NONE_FAILED_REASON = 'NoFailedDeletion';

/** Events, one per VM. */
export const LEAKED_VM_DELETED_EVENT = 'LeakedPodVMDeleted';
export const LEAKED_VM_DELETION_FAILED_EVENT = 'LeakedPodVMDeletionFailed';

/** Who a VM was made for, as its tags say. */
export function vmOwnerText(tags: Readonly<Record<string, string>>): string {
  const ns = tags[POD_NAMESPACE_TAG];
  const name = tags[POD_NAME_TAG];
  return ns && name ? `pod ${ns}/${name}` : 'an unknown pod';
}

export function leakedVMDeletedMessage(id: string, tags: Readonly<Record<string, string>>, ageSeconds: number): string {
  return `deleted pod VM ${id}, made for ${vmOwnerText(tags)} ${ageSeconds}s ago, which no peer pod uses any more`;
}

export function leakedVMDeletionFailedMessage(id: string, tags: Readonly<Record<string, string>>, error: string): string {
  return `could not delete leaked pod VM ${id} (made for ${vmOwnerText(tags)}): ${error}`;
}

/** The condition's message: every VM osc could not delete, and the ways out. */
export function deletionFailedConditionMessage(failures: readonly { id: string; error: string }[]): string {
  const list = failures.map((f) => `${f.id} (${f.error})`).join('; ');
  return (
    `${failures.length} leaked pod VM(s) could not be deleted: ${list}. ` +
    'Fix the cause (the credentials in peer-pods-secret need permission to delete instances); osc tries again ' +
    'when peer-pods-cm or peer-pods-secret changes. Or delete the VMs in the cloud by hand.'
  );
}
