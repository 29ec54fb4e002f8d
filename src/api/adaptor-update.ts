/**
 * The texts about the cloud-api-adaptor's updates (docs/peerpods.md, "Adaptor updates"): the KataConfig
 * condition PeerPodsAdaptorOutdated, True while, under caaUpdateStrategy OnDelete, some adaptor pods run an
 * older pod template than the DaemonSet's (and absent otherwise).
 */
import { CAA_DAEMONSET } from './names.ts';

export const ADAPTOR_OUTDATED_REASON = {
  /** caaUpdateStrategy OnDelete: they stay until the administrator deletes them. */
  OnDelete: 'AdaptorPodsPendingDeletion',
} as const;

/** The condition's message: how many, and what happens next or what to do. */
export function adaptorOutdatedMessage(outdated: number, total: number, namespace: string): string {
  const pods = `${outdated} of ${total} cloud-api-adaptor pod${total === 1 ? '' : 's'} (DaemonSet ${namespace}/${CAA_DAEMONSET})`;
  const verb = outdated === 1 ? 'runs' : 'run';
  return (
    `${pods} ${verb} an older configuration; caaUpdateStrategy is OnDelete, so ${outdated === 1 ? 'it keeps' : 'each keeps'} it until deleted: ` +
    `delete ${outdated === 1 ? 'it' : 'them'} to apply it, one node at a time when its peer pods can lose their connection to their VMs for a moment ` +
    `(oc get pods -n ${namespace} -l app=${CAA_DAEMONSET} -L controller-revision-hash lists them; oc delete pod -n ${namespace} <pod>)`
  );
}
