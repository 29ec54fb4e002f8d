import { randomBytes } from 'node:crypto';
import type { Pod } from '../../kube/resources.ts';
import { podCredentials } from '../pod-credentials.ts';
import { ACCOUNT_ID, type AwsAccount, type AwsCredentials, AwsError } from './aws-account.ts';
import { ImageJobCloud, type ImageJobCloudOptions, type ImageJobKind } from './image-jobs.ts';

/** One call of a job: the action and the resource it acts on. */
type AwsCall = [action: string, resource: string];
/** The calls a deletion job makes. */
const DELETION_CALLS: AwsCall[] = [
  ['ec2:DescribeImages', '*'],
  ['ec2:DeregisterImage', '*'],
  ['ec2:DeleteSnapshot', '*'],
];

export interface SimulatedAwsOptions extends ImageJobCloudOptions {
  /**
   * The AWS account whose credentials every call is checked against (./aws-account.ts). Without one the
   * cloud takes any credentials (a cloud the dev cluster models no account of).
   */
  account?: AwsAccount;
}

/**
 * AWS behind peer pods, as far as the operator can see it: the pod VM image jobs. The creation job
 * "builds" an AMI (`ami-` + 17 hex digits) into PODVM_AMI_ID; the deletion job deletes the AMI its AMI_ID
 * names. Each call the job's container makes (the vmimport role, the disk through a bucket, the snapshot
 * import, the AMI) is checked against the account with the credentials the pod started with, and the
 * first refusal is the job's error, in AWS's words.
 */
export class SimulatedAws extends ImageJobCloud {
  readonly account?: AwsAccount;
  private vmimportRole = false;
  /** The credentials each pod started with, by UID. */
  private readonly podEnv = new Map<string, Promise<AwsCredentials | undefined>>();

  constructor(opts: SimulatedAwsOptions) {
    super(opts, {
      imageKey: 'PODVM_AMI_ID',
      deletionEnv: 'AMI_ID',
      newImage: () => `ami-${randomBytes(9).toString('hex').slice(0, 17)}`,
      refuse: (kind, { pod, signal }) => this.refusal(pod, kind, signal),
    });
    if (opts.account) this.account = opts.account;
    // Credentials are read when a pod starts: a Secret changed later reaches only the pods started after.
    const started = (pod: Pod) => {
      if (pod.status?.phase === 'Running') void this.credentialsOf(pod).catch(() => undefined);
    };
    this.pods.addEventHandler({ add: started, update: (_old, pod) => started(pod) });
  }

  /** The calls a creation job makes: the vmimport role (made once), the disk through a bucket, the import, the AMI. */
  private creationCalls(): AwsCall[] {
    const bucket = `arn:aws:s3:::podvm-${randomBytes(4).toString('hex')}`;
    const role = `arn:aws:iam::${ACCOUNT_ID}:role/vmimport`;
    return [
      ['iam:GetRole', role],
      ...(this.vmimportRole
        ? []
        : ([
            ['iam:CreateRole', role],
            ['iam:PutRolePolicy', role],
          ] as AwsCall[])),
      ['s3:CreateBucket', bucket],
      ['s3:PutObject', `${bucket}/podvm.raw`],
      ['ec2:ImportSnapshot', '*'],
      ['ec2:DescribeImportSnapshotTasks', '*'],
      ['ec2:RegisterImage', '*'],
      ['ec2:CreateTags', '*'],
      ['ec2:DescribeImages', '*'],
      ['s3:DeleteObject', `${bucket}/podvm.raw`],
      ['s3:DeleteBucket', bucket],
    ];
  }

  /** The AWS error that stops a job's calls with the pod's credentials, or undefined when all pass (or no account is modelled). */
  private async refusal(pod: Pod, kind: ImageJobKind, signal: AbortSignal): Promise<string | undefined> {
    if (!this.account) return undefined;
    const calls = kind === 'creation' ? this.creationCalls() : DELETION_CALLS;
    const creds = await this.credentialsOf(pod, signal);
    try {
      for (const [action, resource] of calls) this.account.authorize(creds, action, resource);
    } catch (e) {
      if (e instanceof AwsError) return e.message;
      throw e;
    }
    if (kind === 'creation') this.vmimportRole = true;
    return undefined;
  }

  /**
   * The credentials a pod's first container presents, as an AWS SDK would find them in its environment:
   * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (from values, Secrets whole or by key), else AWS_ROLE_ARN
   * with AWS_WEB_IDENTITY_TOKEN_FILE in a projected ServiceAccount token volume.
   */
  async credentialsOf(pod: Pod, signal?: AbortSignal): Promise<AwsCredentials | undefined> {
    // Read once per pod, when it starts: a Secret changed later reaches only the pods started after.
    const uid = pod.metadata.uid ?? '';
    let creds = this.podEnv.get(uid);
    if (!creds) {
      creds = podCredentials(this.client, pod, signal);
      this.podEnv.set(uid, creds);
      creds.catch(() => this.podEnv.delete(uid));
      if (this.podEnv.size > 1000) this.podEnv.delete(this.podEnv.keys().next().value ?? '');
    }
    return creds;
  }
}
