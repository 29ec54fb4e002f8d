/**
 * Peer pods' AWS credentials from the Cloud Credential Operator (docs/cloud-credentials.md): the IAM
 * actions osc asks for and why, the request's statements, and the two forms of the Secret it gets: keys
 * (minted, or passed through) and a role with a web identity token file (ccoctl, on a Manual/STS cluster).
 */
import { AWS_ROOT_SECRET, parseAwsCredentialsFile, STS_TOKEN_PATH, type StatementEntry } from '../../../api/cloudcredential.ts';
import { collectorRequestName, PEER_PODS_CREDENTIALS_REQUEST } from '../../../api/credentials-text.ts';
import { fromSecret, projectedToken } from '../issued.ts';
import type { CloudIssuedCredentials } from '../provider.ts';

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

/**
 * The leaked pod VM collector's own role (Manual mode): list the cluster's instances by its tag, terminate a
 * leaked one. EC2 scopes neither call by tag in a way a role could state without the adaptor's tag key.
 */
export const COLLECTOR_AWS_ACTIONS = ['ec2:DescribeInstances', 'ec2:TerminateInstances'] as const;

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

export const awsIssued: CloudIssuedCredentials = {
  requestName: PEER_PODS_CREDENTIALS_REQUEST,
  providerSpec: () => ({
    apiVersion: 'cloudcredential.openshift.io/v1',
    kind: 'AWSProviderSpec',
    statementEntries: peerPodsStatementEntries(),
  }),
  rootSecret: AWS_ROOT_SECRET,
  collector: {
    requestName: collectorRequestName('aws'),
    providerSpec: () => ({
      apiVersion: 'cloudcredential.openshift.io/v1',
      kind: 'AWSProviderSpec',
      statementEntries: [{ effect: 'Allow', action: [...COLLECTOR_AWS_ACTIONS], resource: '*' }],
    }),
    actions: COLLECTOR_AWS_ACTIONS,
  },
  ccoctl: 'ccoctl aws create-iam-roles',
  formsInWords: 'aws_access_key_id and aws_secret_access_key nor a credentials file with role_arn and web_identity_token_file',
  form(read) {
    const file = parseAwsCredentialsFile(read('credentials') ?? '');
    if (file.role_arn && file.web_identity_token_file) return { kind: 'sts', roleArn: file.role_arn };
    if (read('aws_access_key_id') && read('aws_secret_access_key')) return { kind: 'minted' };
    return undefined;
  },
  // Keys go by name, straight from the Secret; a role is AWS_ROLE_ARN with a projected token for OpenShift's audience.
  wiring(form, secret) {
    if (form.kind === 'minted') {
      return {
        envFrom: [],
        env: [
          fromSecret('AWS_ACCESS_KEY_ID', secret, 'aws_access_key_id'),
          fromSecret('AWS_SECRET_ACCESS_KEY', secret, 'aws_secret_access_key'),
        ],
        volumes: [],
        volumeMounts: [],
      };
    }
    return {
      envFrom: [],
      env: [
        { name: 'AWS_ROLE_ARN', value: form.roleArn ?? '' },
        { name: 'AWS_WEB_IDENTITY_TOKEN_FILE', value: STS_TOKEN_PATH },
      ],
      ...projectedToken(STS_TOKEN_PATH),
    };
  },
  adaptorKeys: (form) =>
    form.kind === 'sts' ? ['AWS_ROLE_ARN', 'AWS_WEB_IDENTITY_TOKEN_FILE'] : ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'],
  adaptorValues: (form, read): Record<string, string> =>
    form.kind === 'minted'
      ? { AWS_ACCESS_KEY_ID: read('aws_access_key_id') ?? '', AWS_SECRET_ACCESS_KEY: read('aws_secret_access_key') ?? '' }
      : { AWS_ROLE_ARN: form.roleArn ?? '' },
};
