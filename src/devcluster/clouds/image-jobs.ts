import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PODVM_IMAGE_CREATION_JOB, PODVM_IMAGE_DELETION_JOB } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { ConfigMaps, Jobs, type Pod, Pods } from '../../kube/resources.ts';
import { keyOf } from '../../kube/types.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import { Controller } from '../../runtime/controller.ts';
import { Informer } from '../../runtime/informer.ts';
import { silentLogger } from '../../runtime/log.ts';
import { type ContainerCredentialFiles, containerEnv, credentialFiles } from '../pod-credentials.ts';

/**
 * What distinguishes one simulated cloud's pod VM image jobs from another's: the image key the creation
 * job fills, the variable the deletion job reads, how the cloud names a new image, and what its API refuses
 * (a subscription or project the credentials cannot reach, a resource group that does not exist...).
 */
export interface ImageJobProfile {
  /** PODVM_AMI_ID, AZURE_IMAGE_ID, PODVM_IMAGE_NAME. */
  imageKey: string;
  /** The deletion job's variable naming the image. */
  deletionEnv: string;
  /** A new image's reference, as the cloud names it from the job's parameters (`env`). */
  newImage(cm: Record<string, string>, env: Record<string, string>): string;
  /**
   * The cloud's error for this job (a build with this configuration, or a deletion), with the credentials
   * its container holds and its parameters, as its API words it; undefined when the cloud does the work.
   */
  refuse(kind: ImageJobKind, job: ImageJob): string | undefined | Promise<string | undefined>;
}

/** What a job's pod brings to the cloud. */
export interface ImageJob {
  pod: Pod;
  /** peer-pods-cm's data. */
  cm: Record<string, string>;
  /** The container's variables (the job's parameters). */
  env: Record<string, string>;
  /** The credentials as the container holds them: peer-pods-secret whole, or the keys osc wired from the CCO's Secret. */
  secret: Record<string, string>;
  /** The credential files the container mounts (a projected token, a workload identity configuration). */
  files: ContainerCredentialFiles;
  signal: AbortSignal;
}

/**
 * Dev-cluster only: failure injection for the pod VM image jobs. Put `osc.dev/fail-podvm-image-creation:
 * "<error>"` (or `...-deletion`) on peer-pods-cm or on the Job itself, and that job's pods fail (so the
 * job fails after its retries) as a real one would when the cloud refuses, with <error> as the
 * container's termination message.
 */
export const FAIL_IMAGE_CREATION_ANNOTATION = 'osc.dev/fail-podvm-image-creation';
export const FAIL_IMAGE_DELETION_ANNOTATION = 'osc.dev/fail-podvm-image-deletion';

/** The Jobs whose pods the cloud finishes itself: kwok leaves them running for it. */
export const CLOUD_JOBS = [PODVM_IMAGE_CREATION_JOB, PODVM_IMAGE_DELETION_JOB] as const;

export interface ImageJobCloudOptions {
  client: KubeClient;
  log?: Logger;
  namespace?: string;
  /** How long building or deleting a pod VM image takes once its pod runs; default 300ms. */
  imageJobMs?: number;
}

export type ImageJobKind = 'creation' | 'deletion';
const kindOf = (name: string | undefined): ImageJobKind | undefined =>
  name === CLOUD_JOBS[0] ? 'creation' : name === CLOUD_JOBS[1] ? 'deletion' : undefined;
const jobNameOf = (pod: Pod): string | undefined => pod.metadata.labels?.['job-name'];
const isRunning = (pod: Pod): boolean => pod.status?.phase === 'Running' && !pod.metadata.deletionTimestamp;

/** The job container's variables (the job's parameters). */
const envOf = (pod: Pod): Record<string, string> =>
  Object.fromEntries(
    ((pod.spec?.containers?.[0] as { env?: { name: string; value?: string }[] } | undefined)?.env ?? []).map((e) => [
      e.name,
      e.value ?? '',
    ]),
  );

/**
 * A cloud's side of the pod VM image jobs, for every simulated cloud (aws.ts, azure.ts, gcp.ts): while a
 * job's pod runs, the cloud does its container's work and ends the pod as the container's exit would
 * (Succeeded, or Failed with the cloud's error as its termination message). The creation job is checked
 * against peer-pods-cm and the credentials its container holds (the profile's `refuse`), "builds" an image
 * and fills the image key; the deletion job deletes the image its variable names and empties the key when
 * it still names it. `osc.dev/fail-podvm-image-creation` / `-deletion` on peer-pods-cm or the Job fail the
 * job with that error. The Job controller then counts the pod: Complete, or another try until the backoff
 * limit.
 */
export class ImageJobCloud {
  /** The pod VM images that exist, with when they were built. */
  readonly images = new Map<string, string>();
  readonly stats = { builds: 0, deletions: 0, failures: 0 };
  readonly pods: Informer<Pod>;
  protected readonly client: KubeClient;
  private readonly namespace: string;
  private readonly imageJobMs: number;
  private readonly controller: Controller;
  private readonly profile: ImageJobProfile;
  /**
   * What each pod's container did (by pod uid): a container runs once. Until the cache shows the pod ended,
   * an event of it (kwok writing its status again) would otherwise have the cloud do the work a second time;
   * writing the outcome (the ConfigMap, the pod's end) is what a retry repeats.
   */
  private readonly ran = new Map<string, { failure?: string; imageKeyValue?: string; ended?: boolean }>();

  constructor(opts: ImageJobCloudOptions, profile: ImageJobProfile) {
    this.profile = profile;
    this.client = opts.client;
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

  async start(signal: AbortSignal): Promise<void> {
    this.pods.addEventHandler({ delete: (p) => this.ran.delete(p.metadata.uid ?? '') });
    void this.pods.run(signal);
    await this.pods.waitForSync(signal);
    void this.controller.run(signal);
  }

  private async reconcilePod(key: string, signal: AbortSignal): Promise<{ requeueAfterMs: number } | undefined> {
    const pod = this.pods.get(key);
    const kind = kindOf(pod && jobNameOf(pod));
    if (!pod || !kind || !isRunning(pod)) return undefined;
    const started = Date.parse(String(pod.status?.startTime ?? '')) || Date.now();
    const remaining = started + this.imageJobMs - Date.now();
    if (remaining > 0) return { requeueAfterMs: remaining };
    const uid = pod.metadata.uid ?? key;
    let outcome = this.ran.get(uid);
    if (outcome?.ended) return undefined;
    if (!outcome) {
      outcome = await this.work(kind, pod, signal);
      this.ran.set(uid, outcome);
    }
    if (outcome.imageKeyValue !== undefined) {
      const data = { [this.profile.imageKey]: outcome.imageKeyValue };
      await this.client.patch(ConfigMaps, PEER_PODS_CM, { data }, { namespace: this.namespace, signal });
    }
    await this.exit(pod, outcome.failure, signal);
    outcome.ended = true;
    return undefined;
  }

  /** The container's work, done once: the refusal, or the image built or deleted (and the key to write). */
  private async work(kind: ImageJobKind, pod: Pod, signal: AbortSignal): Promise<{ failure?: string; imageKeyValue?: string }> {
    const cm = await this.client.find(ConfigMaps, PEER_PODS_CM, this.namespace, signal);
    const job = await this.client.find(Jobs, jobNameOf(pod) ?? '', this.namespace, signal);
    const failAnnotation = kind === 'creation' ? FAIL_IMAGE_CREATION_ANNOTATION : FAIL_IMAGE_DELETION_ANNOTATION;
    let failure = job?.metadata.annotations?.[failAnnotation] ?? cm?.metadata.annotations?.[failAnnotation];
    if (failure === undefined && kind === 'creation' && !cm) failure = `configmap "${PEER_PODS_CM}" not found`;
    if (failure === undefined) {
      // The credentials as the container holds them: peer-pods-secret whole, or the keys, token and files osc
      // wired from the Cloud Credential Operator's Secret.
      const secret = await containerEnv(this.client, pod, signal);
      const files = await credentialFiles(this.client, pod, secret, signal);
      failure = await this.profile.refuse(kind, { pod, cm: cm?.data ?? {}, env: envOf(pod), secret, files, signal });
    }
    if (failure !== undefined) {
      this.stats.failures++;
      return { failure: failure || 'the cloud refused the request' };
    }
    const { imageKey } = this.profile;
    if (kind === 'creation') {
      const image = this.profile.newImage(cm?.data ?? {}, envOf(pod));
      this.images.set(image, new Date().toISOString());
      this.stats.builds++;
      return { imageKeyValue: image };
    }
    const image = envOf(pod)[this.profile.deletionEnv] ?? cm?.data?.[imageKey] ?? '';
    this.images.delete(image);
    this.stats.deletions++;
    return image && cm?.data?.[imageKey] === image ? { imageKeyValue: '' } : {};
  }

  /** Ends the pod as its container's exit would: code 0, or 1 with the error as termination message. */
  private async exit(pod: Pod, error: string | undefined, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date());
    const terminated = {
      exitCode: error === undefined ? 0 : 1,
      reason: error === undefined ? 'Completed' : 'Error',
      ...(error === undefined ? {} : { message: error }),
      startedAt: pod.status?.startTime ?? now,
      finishedAt: now,
    };
    const status = {
      phase: error === undefined ? 'Succeeded' : 'Failed',
      conditions: ['Ready', 'ContainersReady'].map((type) => ({ type, status: 'False', reason: 'PodCompleted', lastTransitionTime: now })),
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image,
        ready: false,
        started: false,
        restartCount: 0,
        state: { terminated },
      })),
    };
    try {
      const opts = { namespace: this.namespace, subresource: 'status', type: 'strategic', fieldManager: 'kubelet', signal } as const;
      await this.client.patch(Pods, objectName(pod), { status }, opts);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
