/**
 * Leaked pod VMs (docs/peerpods.md, "Leaked pod VMs"): the tags that tie a pod VM to its cluster and its
 * pod, and the texts osc reports about the VMs it collects.
 */

/**
 * The tag naming the cluster a pod VM belongs to: the UID of the cluster's `kube-system` namespace (stable
 * for the cluster's life, unlike any name). The cloud-api-adaptor adds what its `TAGS` setting holds to
 * every VM it makes; osc puts this tag there for the adaptors it runs (the key the adaptor's upstream
 * orphan collector uses for the same purpose).
 */
export const CLUSTER_UID_TAG = 'caa-cluster-uid';

/**
 * The adaptor names every pod VM `podvm-<pod name>-<first 8 characters of the sandbox ID>`, the pod name
 * lower-cased with every character outside [a-z0-9-] made `-`, and cut so that the whole name fits 63
 * characters. That name (the `Name` tag on AWS, the VM's own name on Azure and Google Cloud) is the only
 * mark of the pod on a VM: it names neither the namespace nor the pod's UID.
 */
export const PODVM_NAME_PREFIX = 'podvm';
export const PODVM_NAME_MAX = 63;

/** The KataConfig condition: True while a leaked pod VM could not be deleted. */
export const PODVM_DELETION_FAILED = 'PodVMDeletionFailed';
export const PODVM_DELETION_FAILED_REASON = 'LeakedPodVMNotDeleted';
export const PODVM_NONE_FAILED_REASON = 'NoFailedDeletion';

/** Events, one per VM. */
export const LEAKED_VM_DELETED_EVENT = 'LeakedPodVMDeleted';
export const LEAKED_VM_DELETION_FAILED_EVENT = 'LeakedPodVMDeletionFailed';

/** Who a VM was made for, as its name says (the adaptor's name holds the pod's name, not its namespace). */
export function vmOwnerText(name: string | undefined): string {
  const m = name ? /^podvm-(.+)-[a-z0-9-]{8}$/.exec(name) : null;
  return m ? `a pod named ${m[1]}` : 'an unknown pod';
}

export function leakedVMDeletedMessage(id: string, name: string | undefined, ageSeconds: number): string {
  return `deleted pod VM ${id}, made for ${vmOwnerText(name)} ${ageSeconds}s ago, which no peer pod uses any more`;
}

export function leakedVMDeletionFailedMessage(id: string, name: string | undefined, error: string): string {
  return `could not delete leaked pod VM ${id} (made for ${vmOwnerText(name)}): ${error}`;
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
