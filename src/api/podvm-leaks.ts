/**
 * Leaked pod VMs (docs/peerpods.md, "Leaked pod VMs"): the tags that tie a pod VM to its cluster and its
 * pod, and the texts osc reports about the VMs it collects.
 */
import { OPERATOR_SERVICE_ACCOUNT } from './names.ts';

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
/** The same condition, while the cloud refuses to list the cluster's pod VMs at all (nothing can be collected). */
export const PODVM_LIST_FAILED_REASON = 'PodVMListRefused';

/** Events, one per VM. */
export const LEAKED_VM_DELETED_EVENT = 'LeakedPodVMDeleted';
export const LEAKED_VM_DELETION_FAILED_EVENT = 'LeakedPodVMDeletionFailed';
/** On the KataConfig, once per configuration: osc has no credentials it may list pod VMs with (why, and the fix). */
export const LEAKED_VMS_NOT_COLLECTED_EVENT = 'LeakedPodVMsNotCollected';

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

/**
 * The condition's message when the cloud refuses the list (or the sign-in before it): its error, which
 * credentials osc used, and the fixes by the error's kind.
 */
export function listFailedConditionMessage(error: string, from: string): string {
  const token =
    /AssumeRoleWithWebIdentity|InvalidIdentityToken|ExpiredToken|AADSTS|invalid_grant|invalid_target|getAccessToken|TokenFileUnreadable/.test(
      error,
    );
  const permission = /UnauthorizedOperation|AuthorizationFailed|AccessDenied|forbidden|permission/i.test(error);
  const fix = token
    ? `the cloud does not accept the operator's ServiceAccount token: rerun ccoctl with the collector's CredentialsRequest (its identity must trust ServiceAccount ${OPERATOR_SERVICE_ACCOUNT} in osc's namespace for audience openshift) and apply the Secret it writes`
    : permission
      ? 'give the identity permission to list and delete pod VMs (docs/cloud-credentials.md lists them), or put credentials that may into peer-pods-secret'
      : "check that the cloud's API is reachable from the operator's pod (a proxy, a firewall, the region)";
  return (
    `osc cannot list the cluster's pod VMs with the credentials of ${from}, so leaked pod VMs are not collected: ${error}. ` +
    `Fix: ${fix}; osc tries again every few minutes and when peer-pods-cm or the credentials change.`
  );
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
