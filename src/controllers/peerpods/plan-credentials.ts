/**
 * The peer pods plan's credentials share (docs/cloud-credentials.md), pure: which source the pods use
 * (src/peerpods/credentials.ts), the CredentialsRequest osc keeps for it (for the cloud peer-pods-cm names;
 * another cloud's left from an earlier CLOUD_PROVIDER is deleted), and the observation the rest of the plan
 * reads, with `secret` the Secret chosen, so that the configuration digest (and so the adaptor's rollout)
 * follows a rotated key.
 */
import { type AnyProviderSpec, CCO_NAMESPACE, type CredentialsRequest, CredentialsRequests } from '../../api/cloudcredential.ts';
import { objectName } from '../../api/meta.ts';
import { PEER_PODS_SECRET } from '../../api/names.ts';
import type { CloudProvider } from '../../peerpods/clouds/provider.ts';
import { desiredCollectorRequest } from '../../peerpods/collector-credentials.ts';
import type { Problem } from '../../peerpods/config.ts';
import { validateSecret } from '../../peerpods/config-secret.ts';
import {
  adaptorKeysOf,
  type CredentialsChoice,
  chooseCredentials,
  credentialsWiring,
  desiredCredentialsRequest,
} from '../../peerpods/credentials.ts';
import type { Write } from '../../runtime/applier.ts';
import { MANAGED_BY, MANAGED_BY_LABEL } from './desired.ts';
import type { PeerPodsObserved } from './observed.ts';

/** The ServiceAccount a pod template runs as (the cloud identity's trust under a workload identity names it). */
const serviceAccountOf = (spec: { serviceAccountName?: string } | undefined) => spec?.serviceAccountName || 'default';

export interface CredentialsPlan {
  choice: CredentialsChoice;
  /** The observation with `secret` the chosen Secret and the pods' wiring. */
  observed: PeerPodsObserved;
  /** The Secret checks, or the missing piece, for validatePeerPodsConfig. */
  check: (problems: Problem[], cloud: CloudProvider) => string[];
  writes: Write[];
}

/**
 * Chooses the credentials for a pass. `podServiceAccounts` answers the ServiceAccounts of the adaptor and
 * the image jobs (the request's serviceAccountNames), asked only when the request is wanted.
 */
export function planCredentials(o: PeerPodsObserved, podServiceAccounts: () => readonly (string | undefined)[]): CredentialsPlan {
  const cc = o.cloudCredentials;
  const cloud = o.configMap?.data?.CLOUD_PROVIDER;
  const choice = chooseCredentials({
    ...(o.secret ? { adminSecret: o.secret } : {}),
    ...(cc?.secret ? { ccoSecret: cc.secret } : {}),
    ...(cc?.request ? { request: cc.request } : {}),
    ccoServed: !!cc,
    mode: cc?.mode ?? '',
    ...(cloud !== undefined ? { cloudProvider: cloud } : {}),
  });
  const writes: Write[] = [];
  if (choice.wantRequest) {
    const accounts = podServiceAccounts().map((sa) => serviceAccountOf({ ...(sa ? { serviceAccountName: sa } : {}) }));
    writes.push({ op: 'apply', resource: CredentialsRequests, object: desiredCredentialsRequest(o.options.namespace, accounts, cloud) });
    // In Manual mode the adaptor's workload identity does not trust the operator: the leaked pod VM collector
    // asks for its own (list and delete pod VMs). Elsewhere it uses the adaptor's long-lived credentials.
    if (cc?.mode === 'Manual')
      writes.push({ op: 'apply', resource: CredentialsRequests, object: desiredCollectorRequest(o.options.namespace, cloud) });
    else if (cc?.collectorRequest) writes.push(...deleteOne(cc.collectorRequest));
    for (const other of cc?.others ?? []) writes.push(...deleteOne(other));
  } else writes.push(...deleteRequest(o));

  const source = choice.source;
  if (!source || source.kind === 'secret') {
    const check = choice.problem
      ? (problems: Problem[]) => {
          problems.push({ key: PEER_PODS_SECRET, message: choice.problem ?? '' });
          return [];
        }
      : (problems: Problem[], c: CloudProvider) => validateSecret(o.secret, problems, c);
    return { choice, observed: o, check, writes };
  }
  const chosen = cc?.secret;
  const observed: PeerPodsObserved = Object.create(o, {
    secret: { value: chosen, enumerable: true },
    credentialsWiring: { value: credentialsWiring(source, PEER_PODS_SECRET), enumerable: true },
  });
  const keys = adaptorKeysOf(source);
  return { choice, observed, check: () => keys, writes };
}

/** Deletes osc's CredentialsRequest (the CCO then deletes what it minted for it). */
export function deleteRequest(o: PeerPodsObserved): Write[] {
  const r = o.cloudCredentials?.request;
  const collector = o.cloudCredentials?.collectorRequest;
  return [...(r ? deleteOne(r) : []), ...(collector ? deleteOne(collector) : []), ...(o.cloudCredentials?.others ?? []).flatMap(deleteOne)];
}

function deleteOne(r: CredentialsRequest<AnyProviderSpec>): Write[] {
  if (r.metadata.deletionTimestamp || r.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return [];
  return [
    {
      op: 'delete',
      resource: CredentialsRequests,
      name: objectName(r),
      namespace: CCO_NAMESPACE,
      ...(r.metadata.uid ? { uid: r.metadata.uid } : {}),
    },
  ];
}
