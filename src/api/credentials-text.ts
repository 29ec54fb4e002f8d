import { CCO_NAMESPACE, type CredentialsRequestCondition } from './cloudcredential.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from './names.ts';

/**
 * What osc says when peer pods have no cloud credentials yet (docs/cloud-credentials.md): which piece is
 * missing and how to supply it. Each text ends up in PeerPodsConfigValid's message; none shows a value.
 */

/** The CredentialsRequest osc ships for peer pods, and the Secret it asks for (the names the product uses). */
export const PEER_PODS_CREDENTIALS_REQUEST = 'openshift-sandboxed-containers-aws';
export const PEER_PODS_CCO_SECRET = 'cco-secret';

const createSecret =
  `create ${PEER_PODS_SECRET} (oc create secret generic ${PEER_PODS_SECRET} -n ${OPERATOR_NAMESPACE} ` +
  '--from-literal AWS_ACCESS_KEY_ID=<id> --from-literal AWS_SECRET_ACCESS_KEY=<key>)';

const request = `CredentialsRequest ${PEER_PODS_CREDENTIALS_REQUEST} in namespace ${CCO_NAMESPACE}`;

export const credentialsText = {
  /** Manual mode: the CCO mints nothing; ccoctl (STS) or the administrator's Secret. */
  manualNoSecret: () =>
    `the cluster's Cloud Credential Operator is in Manual mode and no credentials for peer pods exist: run ccoctl aws create-iam-roles ` +
    `with ${request} (oc get credentialsrequest ${PEER_PODS_CREDENTIALS_REQUEST} -n ${CCO_NAMESPACE} -o yaml) and apply the Secret ` +
    `${PEER_PODS_CCO_SECRET} it writes to namespace ${OPERATOR_NAMESPACE}, or ${createSecret}`,
  /** The request exists but the CCO has not written its Secret yet, with the CCO's own reason when it gave one. */
  notProvisioned: (failures: readonly CredentialsRequestCondition[]) =>
    failures.length === 0
      ? `waiting for the Cloud Credential Operator to provision ${request} (Secret ${PEER_PODS_CCO_SECRET} in ${OPERATOR_NAMESPACE}); or ${createSecret}`
      : `the Cloud Credential Operator cannot provision ${request}: ${failures
          .map((c) => `${c.type}: ${c.message ?? c.reason ?? ''}`.trim())
          .join('; ')}; fix the cluster's root credentials (Secret kube-system/aws-creds) or ${createSecret}`,
  /** The request is being made (the first pass). */
  requesting: () => `requesting credentials from the Cloud Credential Operator (${request}); or ${createSecret}`,
  /** A Secret of the request's name exists but holds neither keys nor a role. */
  unusableSecret: () =>
    `Secret ${PEER_PODS_CCO_SECRET} in ${OPERATOR_NAMESPACE} holds neither aws_access_key_id and aws_secret_access_key nor a credentials ` +
    `file with role_arn and web_identity_token_file: delete it so that the Cloud Credential Operator writes it again, rerun ccoctl, or ${createSecret}`,
  /** The passed-through root credentials are what the CCO wrote. */
  source: {
    secret: `${PEER_PODS_SECRET} (the administrator's)`,
    sts: `${PEER_PODS_CCO_SECRET} (a role with short-lived tokens, from ccoctl)`,
    minted: `${PEER_PODS_CCO_SECRET} (minted by the Cloud Credential Operator)`,
  },
} as const;
