import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { objectName } from '../api/meta.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PODVM_IMAGE_CREATION_JOB, PODVM_IMAGE_DELETION_JOB } from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { ConfigMaps, Jobs, type Pod, Pods } from '../kube/resources.ts';
import { keyOf } from '../kube/types.ts';
import { rfc3339 } from '../runtime/conditions.ts';
import { Controller } from '../runtime/controller.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import { ACCOUNT_ID, type AwsAccount, type AwsCredentials, AwsError } from './aws-account.ts';
import { podCredentials } from './pod-credentials.ts';

/** One call of a job: the action and the resource it acts on. */
type AwsCall = [action: string, resource: string];
/** The calls a deletion job makes. */
const DELETION_CALLS: AwsCall[] = [
  ['ec2:DescribeImages', '*'],
  ['ec2:DeregisterImage', '*'],
  ['ec2:DeleteSnapshot', '*'],
];

/**
 * Dev-cluster only: failure injection for the pod VM image jobs. Put `osc.dev/fail-podvm-image-creation:
 * "<error>"` (or `...-deletion`) on peer-pods-cm or on the Job itself, and that job's pods fail (so the
 * job fails after its retries) as a real one would when the cloud refuses, with <error> as the
 * container's termination message.
 */
export const FAIL_IMAGE_CREATION_ANNOTATION = 'osc.dev/fail-podvm-image-creation';
export const FAIL_IMAGE_DELETION_ANNOTATION = 'osc.dev/fail-podvm-image-deletion';

export interface SimulatedCloudOptions {
  client: KubeClient;
  log?: Logger;
  namespace?: string;
  /**
   * The AWS account whose credentials every call is checked against (aws-account.ts). Without one the
   * cloud takes any credentials (a cloud the dev cluster models no account of).
   */
  account?: AwsAccount;
  /** How long building or deleting a pod VM image takes once its pod runs; default 300ms. */
  imageJobMs?: number;
}

type ImageJobKind = 'creation' | 'deletion';
const kindOf = (name: string | undefined): ImageJobKind | undefined =>
  name === PODVM_IMAGE_CREATION_JOB ? 'creation' : name === PODVM_IMAGE_DELETION_JOB ? 'deletion' : undefined;

/** The Jobs whose pods the cloud finishes itself: kwok leaves them running for it. */
export const CLOUD_JOBS = [PODVM_IMAGE_CREATION_JOB, PODVM_IMAGE_DELETION_JOB] as const;

const jobNameOf = (pod: Pod): string | undefined => pod.metadata.labels?.['job-name'];
const isRunning = (pod: Pod): boolean => pod.status?.phase === 'Running' && !pod.metadata.deletionTimestamp;

/**
 * The cloud behind peer pods, as far as the operator can see it: what the pod VM image jobs' containers
 * do. The Job controller (kube-controller-manager) makes each job's pod, the scheduler places it and kwok
 * starts it; while it runs, this simulator does its container's work and then ends the pod the way the
 * container's exit would (Succeeded, or Failed with the cloud's error in its termination message):
 *
 * - `osc-podvm-image-creation` "builds" an AMI (a fake `ami-` + 17 hex digits id, kept in `images`) and
 *   writes it to PODVM_AMI_ID in peer-pods-cm;
 * - `osc-podvm-image-deletion` deletes the AMI named by its AMI_ID variable and empties PODVM_AMI_ID
 *   when it still names that image.
 *
 * The Job controller then counts the pod: Complete, or another try until the backoff limit.
 */
export class SimulatedCloud {
  /** The pod VM images (AMIs) that exist, with when they were built. */
  readonly images = new Map<string, string>();
  readonly stats = { builds: 0, deletions: 0, failures: 0 };
  readonly pods: Informer<Pod>;
  private readonly client: KubeClient;
  private readonly namespace: string;
  private readonly imageJobMs: number;
  private readonly controller: Controller;
  readonly account?: AwsAccount;
  private vmimportRole = false;
  /** The credentials each pod started with, by UID. */
  private readonly podEnv = new Map<string, Promise<AwsCredentials | undefined>>();

  constructor(opts: SimulatedCloudOptions) {
    this.client = opts.client;
    if (opts.account) this.account = opts.account;
    this.namespace = opts.namespace ?? OPERATOR_NAMESPACE;
    this.imageJobMs = opts.imageJobMs ?? 300;
    const log = opts.log ?? silentLogger();
    this.pods = new Informer(this.client, Pods, { namespace: this.namespace, labelSelector: `job-name in (${CLOUD_JOBS.join(',')})`, log });
    this.controller = new Controller(
      {
        name: 'cloud-simulator',
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [{ informer: this.pods, keys: (p: Pod) => (isRunning(p) ? [keyOf(p)] : []) }],
        reconcile: (key, ctx) => this.reconcilePod(key, ctx.signal),
      },
      log,
    );
  }

  /** Starts the cache and the controller; answers once synced. */
  async start(signal: AbortSignal): Promise<void> {
    void this.pods.run(signal);
    await this.pods.waitForSync(signal);
    void this.controller.run(signal);
  }

  private async reconcilePod(key: string, signal: AbortSignal): Promise<{ requeueAfterMs: number } | undefined> {
    const pod = this.pods.get(key);
    if (pod && isRunning(pod)) await this.credentialsOf(pod, signal);
    const kind = kindOf(pod && jobNameOf(pod));
    if (!pod || !kind || !isRunning(pod)) return undefined;
    const started = Date.parse(String(pod.status?.startTime ?? '')) || Date.now();
    const remaining = started + this.imageJobMs - Date.now();
    if (remaining > 0) return { requeueAfterMs: remaining };

    const cm = await this.client.find(ConfigMaps, PEER_PODS_CM, this.namespace, signal);
    const job = await this.client.find(Jobs, jobNameOf(pod) ?? '', this.namespace, signal);
    const failAnnotation = kind === 'creation' ? FAIL_IMAGE_CREATION_ANNOTATION : FAIL_IMAGE_DELETION_ANNOTATION;
    let failure = job?.metadata.annotations?.[failAnnotation] ?? cm?.metadata.annotations?.[failAnnotation];
    if (failure === undefined && kind === 'creation' && !cm) failure = `configmap "${PEER_PODS_CM}" not found`;
    if (failure === undefined) failure = await this.refusal(pod, kind === 'creation' ? this.creationCalls() : DELETION_CALLS, signal);
    if (failure !== undefined) {
      this.stats.failures++;
      await this.exit(pod, failure || 'the cloud refused the request', signal);
      return undefined;
    }
    if (kind === 'creation') {
      this.vmimportRole = true;
      const amiId = `ami-${randomBytes(9).toString('hex').slice(0, 17)}`;
      this.images.set(amiId, new Date().toISOString());
      this.stats.builds++;
      await this.client.patch(ConfigMaps, PEER_PODS_CM, { data: { PODVM_AMI_ID: amiId } }, { namespace: this.namespace, signal });
    } else {
      const env = (pod.spec?.containers?.[0] as { env?: { name: string; value?: string }[] } | undefined)?.env;
      const amiId = env?.find((e) => e.name === 'AMI_ID')?.value ?? cm?.data?.PODVM_AMI_ID ?? '';
      this.images.delete(amiId);
      this.stats.deletions++;
      if (amiId && cm?.data?.PODVM_AMI_ID === amiId) {
        await this.client.patch(ConfigMaps, PEER_PODS_CM, { data: { PODVM_AMI_ID: '' } }, { namespace: this.namespace, signal });
      }
    }
    await this.exit(pod, undefined, signal);
    return undefined;
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
  private async refusal(pod: Pod, calls: AwsCall[], signal: AbortSignal): Promise<string | undefined> {
    if (!this.account) return undefined;
    const creds = await this.credentialsOf(pod, signal);
    try {
      for (const [action, resource] of calls) this.account.authorize(creds, action, resource);
      return undefined;
    } catch (e) {
      if (e instanceof AwsError) return e.message;
      throw e;
    }
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

  /** Ends the pod as its container's exit would: code 0, or 1 with the error as termination message. */
  private async exit(pod: Pod, error: string | undefined, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date());
    const containers = pod.spec?.containers ?? [];
    const status = {
      phase: error === undefined ? 'Succeeded' : 'Failed',
      conditions: ['Ready', 'ContainersReady'].map((type) => ({ type, status: 'False', reason: 'PodCompleted', lastTransitionTime: now })),
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: c.image,
        ready: false,
        started: false,
        restartCount: 0,
        state: {
          terminated: {
            exitCode: error === undefined ? 0 : 1,
            reason: error === undefined ? 'Completed' : 'Error',
            ...(error === undefined ? {} : { message: error }),
            startedAt: pod.status?.startTime ?? now,
            finishedAt: now,
          },
        },
      })),
    };
    try {
      await this.client.patch(
        Pods,
        objectName(pod),
        { status },
        {
          namespace: this.namespace,
          subresource: 'status',
          type: 'strategic',
          fieldManager: 'kubelet',
          signal,
        },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
