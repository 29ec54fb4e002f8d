import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PODVM_IMAGE_CREATION_JOB, PODVM_IMAGE_DELETION_JOB } from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { ConfigMaps, type DaemonSet, DaemonSets, type Job, Jobs, type Node } from '../kube/resources.ts';
import { keyOf } from '../kube/types.ts';
import { rfc3339 } from '../runtime/conditions.ts';
import { Controller } from '../runtime/controller.ts';
import { EventRecorder } from '../runtime/events.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';

/**
 * Dev-cluster only: failure injection for the pod VM image jobs. Put `osc.dev/fail-podvm-image-creation:
 * "<error>"` (or `...-deletion`) on peer-pods-cm or on the Job itself, and the next such job fails (after
 * its retries) as a real one would when the cloud refuses, with <error> in a Warning event on the job.
 */
export const FAIL_IMAGE_CREATION_ANNOTATION = 'osc.dev/fail-podvm-image-creation';
export const FAIL_IMAGE_DELETION_ANNOTATION = 'osc.dev/fail-podvm-image-deletion';

export interface SimulatedCloudOptions {
  client: KubeClient;
  log?: Logger;
  /** A shared node informer (the DaemonSet status follows the nodes). */
  nodes: Informer<Node>;
  namespace?: string;
  /** How long building or deleting a pod VM image takes; default 300ms. */
  imageJobMs?: number;
}

type Taint = NonNullable<NonNullable<Node['spec']>['taints']>[number];
interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

/** Taints the DaemonSet controller tolerates for every daemon pod (node conditions, cordoning). */
const DAEMON_TOLERATED = /^node\.kubernetes\.io\//;

function tolerates(tolerations: readonly Toleration[], taint: Taint): boolean {
  if (taint.effect === 'PreferNoSchedule' || DAEMON_TOLERATED.test(taint.key)) return true;
  return tolerations.some(
    (t) =>
      (t.effect === undefined || t.effect === '' || t.effect === taint.effect) &&
      (t.key === undefined || t.key === '' ? t.operator === 'Exists' : t.key === taint.key) &&
      (t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '')),
  );
}

const isReady = (n: Node) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

type ImageJobKind = 'creation' | 'deletion';
const kindOf = (name: string | undefined): ImageJobKind | undefined =>
  name === PODVM_IMAGE_CREATION_JOB ? 'creation' : name === PODVM_IMAGE_DELETION_JOB ? 'deletion' : undefined;

/**
 * The cloud behind peer pods, as far as the operator can see it (docs/devcluster.md), and the two Kubernetes
 * controllers it needs that this control plane lacks:
 *
 * - the pod VM image jobs: `osc-podvm-image-creation` runs for imageJobMs, "builds" an AMI (a fake
 *   `ami-` + 17 hex digits id, kept in `images`), writes it to PODVM_AMI_ID in peer-pods-cm and completes;
 *   `osc-podvm-image-deletion` deletes the AMI named by its AMI_ID variable, empties PODVM_AMI_ID when it
 *   still names that image, and completes. Job status, conditions and events are those of the Job
 *   controller (SuccessfulCreate, Completed, BackoffLimitExceeded); no pods are made.
 * - DaemonSet status in the operator namespace: desired/current/ready/up-to-date counts follow the nodes
 *   that match the pod template's node selector and tolerate their taints, as `oc get ds` shows them.
 */
export class SimulatedCloud {
  /** The pod VM images (AMIs) that exist, with when they were built. */
  readonly images = new Map<string, string>();
  readonly stats = { builds: 0, deletions: 0, failures: 0 };
  readonly jobs: Informer<Job>;
  readonly daemonSets: Informer<DaemonSet>;
  private readonly client: KubeClient;
  private readonly nodes: Informer<Node>;
  private readonly namespace: string;
  private readonly imageJobMs: number;
  private readonly events: EventRecorder;
  private readonly started = new Map<string, number>();
  private readonly jobController: Controller;
  private readonly dsController: Controller;

  constructor(opts: SimulatedCloudOptions) {
    this.client = opts.client;
    this.nodes = opts.nodes;
    this.namespace = opts.namespace ?? OPERATOR_NAMESPACE;
    this.imageJobMs = opts.imageJobMs ?? 300;
    const log = opts.log ?? silentLogger();
    this.events = new EventRecorder(this.client, 'job-controller', 'simulated-cloud', log);
    this.jobs = new Informer(this.client, Jobs, { namespace: this.namespace, log });
    this.daemonSets = new Informer(this.client, DaemonSets, { namespace: this.namespace, log });
    const backoff = { baseDelayMs: 50, maxDelayMs: 5_000 };
    this.jobController = new Controller(
      {
        name: 'cloud-simulator-jobs',
        backoff,
        watches: [{ informer: this.jobs, keys: (j: Job) => (kindOf(j.metadata.name) ? [keyOf(j)] : []) }],
        reconcile: (key, ctx) => this.reconcileJob(key, ctx.signal),
      },
      log,
    );
    const allDaemonSets = () => this.daemonSets.list().map(keyOf);
    this.dsController = new Controller(
      {
        name: 'cloud-simulator-daemonsets',
        backoff,
        watches: [
          { informer: this.daemonSets, keys: (d: DaemonSet) => [keyOf(d)] },
          { informer: this.nodes, keys: allDaemonSets },
        ],
        reconcile: async (key, ctx) => {
          await this.reconcileDaemonSet(key, ctx.signal);
          return undefined;
        },
      },
      log,
    );
  }

  /** Starts the caches (the node informer is the caller's) and the controllers; answers once synced. */
  async start(signal: AbortSignal): Promise<void> {
    void this.jobs.run(signal);
    void this.daemonSets.run(signal);
    await Promise.all([this.jobs.waitForSync(signal), this.daemonSets.waitForSync(signal), this.nodes.waitForSync(signal)]);
    void this.jobController.run(signal);
    void this.dsController.run(signal);
  }

  // -------------------------------------------------------------------------------------------------------
  // Pod VM image jobs

  private async reconcileJob(key: string, signal: AbortSignal): Promise<{ requeueAfterMs: number } | undefined> {
    const job = this.jobs.get(key);
    const kind = kindOf(job?.metadata.name);
    if (!job || !kind || job.metadata.deletionTimestamp) return undefined;
    if (job.status?.conditions?.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) return undefined;
    const uid = job.metadata.uid ?? '';
    const now = Date.now();
    if (!job.status?.startTime) {
      await this.patchJobStatus(job, { startTime: rfc3339(new Date(now)), active: 1, ready: 0 }, signal);
      this.started.set(uid, now);
      await this.events.record(job, 'Normal', 'SuccessfulCreate', 'Create', `Created pod: ${job.metadata.name}-${suffix()}`);
      return { requeueAfterMs: this.imageJobMs };
    }
    const started = this.started.get(uid) ?? Date.parse(job.status.startTime);
    const remaining = started + this.imageJobMs - now;
    if (remaining > 0) return { requeueAfterMs: remaining };

    const cm = await this.client.find(ConfigMaps, PEER_PODS_CM, this.namespace, signal);
    const failAnnotation = kind === 'creation' ? FAIL_IMAGE_CREATION_ANNOTATION : FAIL_IMAGE_DELETION_ANNOTATION;
    let failure = job.metadata.annotations?.[failAnnotation] ?? cm?.metadata.annotations?.[failAnnotation];
    if (failure === undefined && kind === 'creation' && !cm) failure = `configmap "${PEER_PODS_CM}" not found`;
    if (failure !== undefined) {
      await this.fail(job, failure || 'the cloud refused the request', signal);
      return undefined;
    }
    if (kind === 'creation') {
      const amiId = `ami-${randomBytes(9).toString('hex').slice(0, 17)}`;
      this.images.set(amiId, new Date().toISOString());
      this.stats.builds++;
      await this.client.patch(ConfigMaps, PEER_PODS_CM, { data: { PODVM_AMI_ID: amiId } }, { namespace: this.namespace, signal });
    } else {
      const container = (job.spec.template.spec.containers as { env?: { name: string; value?: string }[] }[] | undefined)?.[0];
      const amiId = container?.env?.find((e) => e.name === 'AMI_ID')?.value ?? cm?.data?.PODVM_AMI_ID ?? '';
      this.images.delete(amiId);
      this.stats.deletions++;
      if (amiId && cm?.data?.PODVM_AMI_ID === amiId) {
        await this.client.patch(ConfigMaps, PEER_PODS_CM, { data: { PODVM_AMI_ID: '' } }, { namespace: this.namespace, signal });
      }
    }
    const t = rfc3339(new Date());
    const done = {
      lastProbeTime: t,
      lastTransitionTime: t,
      reason: 'CompletionsReached',
      message: 'Reached expected number of succeeded pods',
    };
    await this.patchJobStatus(
      job,
      {
        active: null,
        ready: 0,
        succeeded: 1,
        completionTime: t,
        conditions: [
          { type: 'SuccessCriteriaMet', status: 'True', ...done },
          { type: 'Complete', status: 'True', ...done },
        ],
      },
      signal,
    );
    await this.events.record(job, 'Normal', 'Completed', 'Complete', 'Job completed');
    this.started.delete(uid);
    return undefined;
  }

  private async fail(job: Job, error: string, signal: AbortSignal): Promise<void> {
    const t = rfc3339(new Date());
    const failed = {
      lastProbeTime: t,
      lastTransitionTime: t,
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    };
    this.stats.failures++;
    await this.events.record(job, 'Warning', 'PodVMImageJobError', 'Run', error);
    await this.patchJobStatus(
      job,
      {
        active: null,
        ready: 0,
        failed: (job.spec.backoffLimit ?? 6) + 1,
        conditions: [
          { type: 'FailureTarget', status: 'True', ...failed },
          { type: 'Failed', status: 'True', ...failed },
        ],
      },
      signal,
    );
    await this.events.record(job, 'Warning', 'BackoffLimitExceeded', 'Fail', 'Job has reached the specified backoff limit');
    this.started.delete(job.metadata.uid ?? '');
  }

  private async patchJobStatus(job: Job, status: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    try {
      await this.client.patch(Jobs, job.metadata.name ?? '', { status }, { namespace: this.namespace, subresource: 'status', signal });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  // -------------------------------------------------------------------------------------------------------
  // DaemonSet status

  private async reconcileDaemonSet(key: string, signal: AbortSignal): Promise<void> {
    const ds = this.daemonSets.get(key);
    if (!ds || ds.metadata.deletionTimestamp) return;
    const podSpec = ds.spec.template.spec as { nodeSelector?: Record<string, string>; tolerations?: Toleration[] };
    const selector = podSpec.nodeSelector ?? {};
    const nodes = this.nodes
      .list()
      .filter(
        (n) =>
          !n.metadata.deletionTimestamp &&
          Object.entries(selector).every(([k, v]) => n.metadata.labels?.[k] === v) &&
          (n.spec?.taints ?? []).every((t) => tolerates(podSpec.tolerations ?? [], t)),
      );
    const desired = nodes.length;
    const ready = nodes.filter(isReady).length;
    const status = {
      currentNumberScheduled: desired,
      desiredNumberScheduled: desired,
      numberMisscheduled: 0,
      numberReady: ready,
      numberAvailable: ready,
      numberUnavailable: desired - ready,
      updatedNumberScheduled: desired,
      observedGeneration: ds.metadata.generation,
    };
    const current = (ds.status ?? {}) as Record<string, unknown>;
    const same = Object.entries(status).every(([k, v]) => (current[k] ?? 0) === (v ?? 0));
    if (same) return;
    try {
      await this.client.patch(
        DaemonSets,
        ds.metadata.name ?? '',
        { status: { ...status, numberAvailable: ready || null, numberUnavailable: desired - ready || null } },
        { namespace: this.namespace, subresource: 'status', signal },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

const suffix = () =>
  Array.from(randomBytes(5))
    .map((b) => 'bcdfghjklmnpqrstvwxz2456789'[b % 27])
    .join('');
