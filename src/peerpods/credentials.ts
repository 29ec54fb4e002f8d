/**
 * Where peer pods get their AWS credentials (docs/cloud-credentials.md), pure: the CredentialsRequest osc
 * ships, the order of the sources, and how the chosen one reaches the cloud-api-adaptor and the image jobs.
 *
 * The order: an administrator's peer-pods-secret, as given; else the Secret the request names, in either
 * of the two forms the Cloud Credential Operator's tools write: a role and a web identity token file
 * (ccoctl, on a Manual/STS cluster), or keys (minted by the CCO). Nothing here reads a key's value; the
 * pods read them from the Secret themselves.
 */
import {
  AWS_ROOT_SECRET,
  CCO_NAMESPACE,
  type CredentialsMode,
  type CredentialsRequest,
  type CredentialsRequestCondition,
  CredentialsRequests,
  parseAwsCredentialsFile,
  STS_TOKEN_AUDIENCE,
  STS_TOKEN_PATH,
  type StatementEntry,
} from '../api/cloudcredential.ts';
import { credentialsText, PEER_PODS_CCO_SECRET, PEER_PODS_CREDENTIALS_REQUEST } from '../api/credentials-text.ts';
import { apiVersionOf } from '../api/meta.ts';
import type { Secret } from '../kube/resources.ts';

export { AWS_ROOT_SECRET, PEER_PODS_CCO_SECRET, PEER_PODS_CREDENTIALS_REQUEST };

/**
 * The AWS actions peer pods need, and nothing else (the product's request asks for ec2:*): each is called by
 * the adaptor or an image job (docs/cloud-credentials.md says who and why). Left out on purpose:
 * s3:ListBucket (the image job deletes the one object it uploaded by its key, it never lists the bucket)
 * and s3:GetObject (EC2's snapshot import reads the disk as the vmimport role, whose own policy grants it).
 */
export const PEER_PODS_AWS_ACTIONS = {
  /**
   * The cloud-api-adaptor: at start-up the image's root device and the instance types' sizes; then one pod
   * VM per peer pod, tagged at launch; its address when USE_PUBLIC_IP; terminated with the pod.
   */
  adaptor: [
    'ec2:RunInstances',
    'ec2:CreateTags',
    'ec2:DescribeInstances',
    'ec2:TerminateInstances',
    'ec2:DescribeInstanceTypes',
    'ec2:DescribeImages',
  ],
  /** The pod VM image creation job: the disk uploaded to S3, imported as a snapshot, registered as an AMI. */
  imageCreation: ['ec2:ImportSnapshot', 'ec2:DescribeImportSnapshotTasks', 'ec2:RegisterImage', 'ec2:DescribeImages', 'ec2:CreateTags'],
  /** The pod VM image deletion job. */
  imageDeletion: ['ec2:DescribeImages', 'ec2:DeregisterImage', 'ec2:DeleteSnapshot'],
  /** The image creation job's intermediate bucket (podvm-*), and the disk it uploads there. */
  bucket: ['s3:CreateBucket', 's3:DeleteBucket'],
  bucketObjects: ['s3:PutObject', 's3:DeleteObject'],
  /** The vmimport service role that EC2's snapshot import runs as. */
  vmimportRole: ['iam:GetRole', 'iam:CreateRole', 'iam:PutRolePolicy'],
} as const;

/** Every action of the request, once. */
export const peerPodsAwsActions = (): string[] => [...new Set(Object.values(PEER_PODS_AWS_ACTIONS).flat())].sort();

export const PODVM_BUCKET_PREFIX = 'podvm-';

/** The request's statements: EC2 on any resource, S3 only on podvm-* buckets, IAM only on the vmimport role. */
export function peerPodsStatementEntries(): StatementEntry[] {
  const a = PEER_PODS_AWS_ACTIONS;
  const ec2 = [...new Set([...a.adaptor, ...a.imageCreation, ...a.imageDeletion])].sort();
  return [
    { effect: 'Allow', action: ec2, resource: '*' },
    { effect: 'Allow', action: [...a.bucket], resource: `arn:aws:s3:::${PODVM_BUCKET_PREFIX}*` },
    { effect: 'Allow', action: [...a.bucketObjects], resource: `arn:aws:s3:::${PODVM_BUCKET_PREFIX}*/*` },
    { effect: 'Allow', action: [...a.vmimportRole], resource: 'arn:aws:iam::*:role/vmimport' },
  ];
}

/**
 * The CredentialsRequest, where the CCO reads them (its own namespace), naming the Secret it is to write
 * in osc's namespace. serviceAccountNames are the pods' ServiceAccounts, for ccoctl's role trust (STS).
 */
export function desiredCredentialsRequest(namespace: string, serviceAccountNames: readonly string[]): CredentialsRequest {
  return {
    apiVersion: apiVersionOf(CredentialsRequests),
    kind: CredentialsRequests.kind,
    metadata: {
      name: PEER_PODS_CREDENTIALS_REQUEST,
      namespace: CCO_NAMESPACE,
      labels: {
        'app.kubernetes.io/name': 'osc',
        'app.kubernetes.io/component': 'peerpods-credentials',
        'app.kubernetes.io/managed-by': 'osc-operator',
      },
    },
    spec: {
      secretRef: { name: PEER_PODS_CCO_SECRET, namespace },
      serviceAccountNames: [...new Set(serviceAccountNames)].sort(),
      cloudTokenPath: STS_TOKEN_PATH,
      providerSpec: {
        apiVersion: 'cloudcredential.openshift.io/v1',
        kind: 'AWSProviderSpec',
        statementEntries: peerPodsStatementEntries(),
      },
    },
  } as CredentialsRequest;
}

/** Where the credentials come from, once there are some. */
export type CredentialSource = { kind: 'secret' } | { kind: 'sts'; roleArn: string } | { kind: 'minted' };

export interface CredentialsInput {
  /** peer-pods-secret. */
  adminSecret?: Secret;
  /** The Secret the CredentialsRequest names (cco-secret). */
  ccoSecret?: Secret;
  request?: CredentialsRequest;
  /** Whether this cluster has a Cloud Credential Operator (its API is served). */
  ccoServed: boolean;
  /** The cluster's CloudCredential spec.credentialsMode ('' when unset or unknown). */
  mode: CredentialsMode;
  /** peer-pods-cm's CLOUD_PROVIDER. */
  cloudProvider?: string;
}

export interface CredentialsChoice {
  /** Undefined while no source is usable. */
  source?: CredentialSource;
  /** What is missing and how to fix it (for PeerPodsConfigValid), when no source is usable. */
  problem?: string;
  /** Whether osc's CredentialsRequest should exist. */
  wantRequest: boolean;
}

const decoded = (s: Secret, key: string): string | undefined => {
  const str = s.stringData?.[key];
  if (str !== undefined) return str;
  const d = s.data?.[key];
  return d === undefined ? undefined : Buffer.from(d, 'base64').toString('utf8');
};

/** The form of a Secret the CCO or ccoctl wrote: keys, a role, or neither. */
export function ccoSecretForm(s: Secret): { kind: 'keys' } | { kind: 'role'; roleArn: string } | undefined {
  const file = parseAwsCredentialsFile(decoded(s, 'credentials') ?? '');
  if (file.role_arn && file.web_identity_token_file) return { kind: 'role', roleArn: file.role_arn };
  if (decoded(s, 'aws_access_key_id') && decoded(s, 'aws_secret_access_key')) return { kind: 'keys' };
  return undefined;
}

const FAILURE_TYPES = new Set(['InsufficientCloudCreds', 'MissingTargetNamespace', 'CredentialsProvisionFailure']);

/** The CCO's failure conditions on a request that are True. */
export const requestFailures = (r: CredentialsRequest | undefined): CredentialsRequestCondition[] =>
  (r?.status?.conditions ?? []).filter((c) => FAILURE_TYPES.has(c.type) && c.status === 'True');

/**
 * The credential order. Without a Cloud Credential Operator (or for another cloud) only peer-pods-secret
 * counts, and its absence is reported by the Secret's own checks (source and problem both undefined).
 */
export function chooseCredentials(i: CredentialsInput): CredentialsChoice {
  if (i.adminSecret) return { source: { kind: 'secret' }, wantRequest: false };
  if (!i.ccoServed || (i.cloudProvider !== undefined && i.cloudProvider !== 'aws')) return { wantRequest: false };
  if (i.ccoSecret && !i.ccoSecret.metadata.deletionTimestamp) {
    const form = ccoSecretForm(i.ccoSecret);
    if (form?.kind === 'role') return { source: { kind: 'sts', roleArn: form.roleArn }, wantRequest: true };
    if (form?.kind === 'keys') return { source: { kind: 'minted' }, wantRequest: true };
    return { problem: credentialsText.unusableSecret(), wantRequest: true };
  }
  if (i.mode === 'Manual') return { problem: credentialsText.manualNoSecret(), wantRequest: true };
  if (!i.request) return { problem: credentialsText.requesting(), wantRequest: true };
  return { problem: credentialsText.notProvisioned(requestFailures(i.request)), wantRequest: true };
}

/** How a pod's container gets the chosen credentials: its env, and the volumes that carry a token. */
export interface CredentialsWiring {
  envFrom: { secretRef: { name: string } }[];
  env: Record<string, unknown>[];
  volumes: Record<string, unknown>[];
  volumeMounts: Record<string, unknown>[];
}

export const STS_TOKEN_VOLUME = 'bound-sa-token';

/**
 * peer-pods-secret goes in whole (envFrom), as before; the CCO's keys are mapped to the names the adaptor
 * and the image builder read (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), straight from the Secret; a role
 * is AWS_ROLE_ARN with a projected ServiceAccount token for OpenShift's audience.
 */
export function credentialsWiring(source: CredentialSource, adminSecretName: string): CredentialsWiring {
  const none: CredentialsWiring = { envFrom: [], env: [], volumes: [], volumeMounts: [] };
  switch (source.kind) {
    case 'secret':
      return { ...none, envFrom: [{ secretRef: { name: adminSecretName } }] };
    case 'minted':
      return {
        ...none,
        env: [
          { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: PEER_PODS_CCO_SECRET, key: 'aws_access_key_id' } } },
          { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: PEER_PODS_CCO_SECRET, key: 'aws_secret_access_key' } } },
        ],
      };
    case 'sts': {
      const dir = STS_TOKEN_PATH.slice(0, STS_TOKEN_PATH.lastIndexOf('/'));
      const file = STS_TOKEN_PATH.slice(dir.length + 1);
      return {
        envFrom: [],
        env: [
          { name: 'AWS_ROLE_ARN', value: source.roleArn },
          { name: 'AWS_WEB_IDENTITY_TOKEN_FILE', value: STS_TOKEN_PATH },
        ],
        volumes: [
          {
            name: STS_TOKEN_VOLUME,
            projected: { sources: [{ serviceAccountToken: { audience: STS_TOKEN_AUDIENCE, expirationSeconds: 3600, path: file } }] },
          },
        ],
        volumeMounts: [{ name: STS_TOKEN_VOLUME, mountPath: dir, readOnly: true }],
      };
    }
  }
}
