import { CCO_NAMESPACE, type CredentialsRequestCondition } from './cloudcredential.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from './names.ts';

/**
 * What osc says when peer pods have no cloud credentials yet (docs/cloud-credentials.md): which piece is
 * missing and how to supply it. Each text ends up in PeerPodsConfigValid's message; none shows a value.
 */

/** The CredentialsRequest osc ships for peer pods on AWS, and the Secret it asks for (the names the product uses). */
export const PEER_PODS_CREDENTIALS_REQUEST = 'openshift-sandboxed-containers-aws';
export const PEER_PODS_CCO_SECRET = 'cco-secret';

/** The request's name on a cloud: openshift-sandboxed-containers-<cloud>, as the product names its Azure one. */
export const credentialsRequestName = (cloud: string): string => `openshift-sandboxed-containers-${cloud}`;

/**
 * The leaked pod VM collector's own CredentialsRequest on a cloud (Manual mode), and the Secret ccoctl writes
 * for it: an identity trusting the operator's ServiceAccount, allowed to list and delete pod VMs only.
 */
export const collectorRequestName = (cloud: string): string => `openshift-sandboxed-containers-${cloud}-podvm-collector`;
export const COLLECTOR_CCO_SECRET = 'podvm-collector-cco-secret';

/** What the texts say of one cloud: its request, its ccoctl step, its root credentials and its peer-pods-secret command. */
export interface CredentialsTextCloud {
  requestName: string;
  /** `ccoctl aws create-iam-roles` */
  ccoctl: string;
  /** `kube-system/aws-creds` */
  rootSecret: string;
  /** `oc create secret generic peer-pods-secret ...` */
  createCommand: string;
  /** `aws_access_key_id and aws_secret_access_key nor a credentials file with ...` */
  formsInWords: string;
}

const createSecret = (c: CredentialsTextCloud) => `create ${PEER_PODS_SECRET} (${c.createCommand})`;
const request = (c: CredentialsTextCloud) => `CredentialsRequest ${c.requestName} in namespace ${CCO_NAMESPACE}`;

export const credentialsText = {
  /** Manual mode: the CCO mints nothing; ccoctl (short-lived credentials) or the administrator's Secret. */
  manualNoSecret: (c: CredentialsTextCloud) =>
    `the cluster's Cloud Credential Operator is in Manual mode and no credentials for peer pods exist: run ${c.ccoctl} ` +
    `with ${request(c)} (oc get credentialsrequest ${c.requestName} -n ${CCO_NAMESPACE} -o yaml) and apply the Secret ` +
    `${PEER_PODS_CCO_SECRET} it writes to namespace ${OPERATOR_NAMESPACE}, or ${createSecret(c)}`,
  /**
   * The request exists but the CCO has not written its Secret yet, with the CCO's own reason when it gave one
   * (and `fix`, what the cloud says of the cluster's mode, in place of the root credentials' advice).
   */
  notProvisioned: (c: CredentialsTextCloud, failures: readonly CredentialsRequestCondition[], fix?: string) =>
    failures.length === 0
      ? `waiting for the Cloud Credential Operator to provision ${request(c)} (Secret ${PEER_PODS_CCO_SECRET} in ${OPERATOR_NAMESPACE}); or ${createSecret(c)}`
      : `the Cloud Credential Operator cannot provision ${request(c)}: ${failures
          .map((f) => `${f.type}: ${f.message ?? f.reason ?? ''}`.trim())
          .join('; ')}; ${fix ?? `fix the cluster's root credentials (Secret ${c.rootSecret})`} or ${createSecret(c)}`,
  /** The request is being made (the first pass). */
  requesting: (c: CredentialsTextCloud) =>
    `requesting credentials from the Cloud Credential Operator (${request(c)}); or ${createSecret(c)}`,
  /** A Secret of the request's name exists but holds no form the cloud knows. */
  unusableSecret: (c: CredentialsTextCloud) =>
    `Secret ${PEER_PODS_CCO_SECRET} in ${OPERATOR_NAMESPACE} holds neither ${c.formsInWords}: delete it so that the Cloud Credential ` +
    `Operator writes it again, rerun ccoctl, or ${createSecret(c)}`,
  /** A form the cloud knows, broken: `why` says what and ends with the fix. */
  brokenSecret: (c: CredentialsTextCloud, why: string) =>
    `Secret ${PEER_PODS_CCO_SECRET} in ${OPERATOR_NAMESPACE}: ${why}; or ${createSecret(c)}`,
} as const;
