import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { objectName } from '../api/meta.ts';
import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import { CLUSTER_UID_TAG, PODVM_NAME_PREFIX } from '../api/podvm-leaks.ts';
import type { KubeClient } from '../kube/client.ts';
import { ConfigMaps, Namespaces, type Node, Nodes, type Pod, Pods } from '../kube/resources.ts';
import { keyOf } from '../kube/types.ts';
import { type PodVM, type PodVMInventory, podVMNamePart } from '../peerpods/leaks.ts';
import { Controller, type ReconcileResult } from '../runtime/controller.ts';
import { EventRecorder } from '../runtime/events.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import { type AwsAccount, type AwsCredentials, AwsError } from './clouds/aws-account.ts';
import {
  adaptorCreateError,
  noAdaptorError,
  reportCrashLoop,
  reportRestarted,
  reportSandboxFailed,
  reportSandboxReady,
  sandboxFailedMessage,
} from './kubelet-status.ts';
import { type ContainerCredentialFiles, containerEnv, credentialFiles, credentialsFromEnv } from './pod-credentials.ts';

/**
 * What a cloud other than AWS answers the adaptor's calls made with the credentials its container holds
 * (its variables and the files a workload identity reads): the error its SDK reports, or undefined.
 */
export interface AdaptorAuthority {
  /** The start-up calls (the image, the sizes). */
  startup(env: Record<string, string>, files: ContainerCredentialFiles): string | undefined;
  /** Creating the VM named `name`. */
  create(env: Record<string, string>, files: ContainerCredentialFiles, name: string): string | undefined;
  /** Deleting the VM `id`. */
  terminate(env: Record<string, string>, files: ContainerCredentialFiles, id: string): string | undefined;
}

/**
 * Dev-cluster only: on a `kata-remote` pod, `osc.dev/crash-caa-before-record: "true"` makes the simulated
 * adaptor die once between creating the pod's VM and recording it; restarted, it makes another VM for the
 * pod, and the first one is left behind (a leak), as with the real adaptor.
 */
export const CRASH_BEFORE_RECORD_ANNOTATION = 'osc.dev/crash-caa-before-record';
/** On peer-pods-cm: the cloud refuses every deletion of a pod VM by osc with this error. */
export const FAIL_PODVM_DELETION_ANNOTATION = 'osc.dev/fail-podvm-deletion';

/** kwok's jq query for the pods whose sandbox this simulator creates (kwok runs them once it exists). */
export const PEER_POD_QUERY = `.spec.runtimeClassName == "${KATA_REMOTE_RUNTIME_CLASS}"`;

/** The kubelet's sandbox retries and the adaptor's restart back-off, compressed for the dev cluster. */
const SANDBOX_RETRY = { baseMs: 500, maxMs: 10_000 };
const RESTART_BACKOFF = { baseMs: 1_000, maxMs: 10_000 };
/** The adaptor's default pod VM size when peer-pods-cm names none (its -instance-type default). */
const ADAPTOR_DEFAULT_TYPE = 'm6a.large';

const ADAPTOR = 'adaptor:';
const PEER = 'pod:';
const isPeerPod = (p: Pod) => p.spec?.runtimeClassName === KATA_REMOTE_RUNTIME_CLASS;
const isRunning = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp;
const sandboxReady = (p: Pod) => (p.status?.conditions ?? []).some((c) => c.type === 'PodReadyToStartContainers' && c.status === 'True');
const containerCreating = (p: Pod) =>
  p.status?.phase === 'Pending' &&
  (p.status.containerStatuses as { state?: { waiting?: { reason?: string } } }[] | undefined)?.[0]?.state?.waiting?.reason ===
    'ContainerCreating';

/** The adaptor's TAGS setting (`key1=value1,key2=value2`) as the tags it puts on a VM. */
export function parseTags(value: string | undefined): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq > 0) tags[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return tags;
}

/** An adaptor pod's process: up once its start-up calls passed, else crashed and waiting to be restarted. */
interface AdaptorProcess {
  up: boolean;
  env: Record<string, string>;
  creds?: AwsCredentials;
  /** The files a workload identity reads (other clouds than AWS). */
  files?: ContainerCredentialFiles;
  restarts: number;
  restartAt: number;
}

export interface SimulatedPodVMsOptions {
  client: KubeClient;
  log?: Logger;
  namespace?: string;
  /**
   * The AWS account every call of the adaptor is checked against, with the credentials the adaptor pod was
   * started with. Without one the cloud takes any credentials. (osc's own calls reach the account through
   * the cloud API endpoint, ./cloudapi/, which checks their signatures.)
   */
  account?: AwsAccount;
  /** On Azure and Google Cloud: their identities' answers to the adaptor's calls. */
  authority?: AdaptorAuthority;
}

/** What the simulated adaptor and cloud counted, each from 0. */
export function podVMStats() {
  return {
    created: 0,
    deletedByAdaptor: 0,
    deletedByOsc: 0,
    crashes: 0,
    refusedDeletions: 0,
    lists: 0,
    liveVMsDeletedByOsc: 0,
    /** Sandboxes refused by the cloud, and terminations it refused (each leaves a VM behind). */
    refusedCreations: 0,
    refusedTerminations: 0,
    /** Adaptor processes that exited at start-up because the cloud refused them. */
    adaptorStartFailures: 0,
  };
}

/**
 * The pod VMs of the dev cluster's cloud, and the cloud-api-adaptor's and the kubelet's part in their life
 * (docs/devcluster.md). Each `osc-caa-ds` pod is an adaptor process: when it starts it describes the pod
 * VM image and its instance types with the credentials its environment holds, and exits when the cloud
 * refuses (CrashLoopBackOff, restarted with a back-off, its environment read again). For each scheduled
 * `kata-remote` pod the kubelet asks the node's adaptor for a sandbox: the adaptor runs a VM
 * (ec2:RunInstances with its tags), named and tagged as the adaptor does (`podvm-<pod>-<sandbox>`, and the
 * adaptor's TAGS as its process reads them: the container's TAGS variable, which osc sets, else
 * peer-pods-cm's), known by instance ID, resource ID or name as each cloud knows it; kwok starts the
 * containers only then. When the cloud refuses, or no adaptor runs on the node, the pod stays Pending with
 * its containers in ContainerCreating and a FailedCreatePodSandBox event carrying the error, retried with a
 * back-off. When the pod goes, the node's adaptor terminates its VM; a refusal is only logged (the VM
 * leaks), as the real adaptor does. A node's adaptor is up while its osc-caa-ds pod runs on a node that
 * exists: killed (its pod deleted) or lost with its node, it makes and deletes nothing, and a pod deleted
 * meanwhile leaves its VM running; `setAdaptorDown(true)` stops every adaptor at once. Its records survive a
 * restart, as the real adaptor's do on the node's disk, but not the node. The cloud's API over these VMs,
 * as osc's client reaches it, is ./cloudapi/.
 */
export class SimulatedPodVMs implements PodVMInventory {
  readonly vms = new Map<string, PodVM>();
  readonly stats = podVMStats();
  readonly pods: Informer<Pod>;
  /** Where each VM runs: the region (AWS_REGION, AZURE_REGION) or zone (GCP_ZONE) the adaptor was configured with. */
  readonly regions = new Map<string, string>();
  /** Which pod each VM was made for (by UID): the simulation's own truth, which no tag on the VM carries. */
  private readonly madeFor = new Map<string, string>();
  private readonly nodes: Informer<Node>;
  private readonly client: KubeClient;
  private readonly namespace: string;
  private readonly log: Logger;
  private readonly account: AwsAccount | undefined;
  private readonly authority: AdaptorAuthority | undefined;
  private readonly controller: Controller;
  /** The adaptor's record: pod UID -> its VM. */
  private readonly records = new Map<string, string>();
  private readonly crashed = new Set<string>();
  /**
   * Pods whose node was lost with their adaptor's records while they ran: the machine that takes over
   * their node's name runs them again, in new sandboxes (new VMs) although their status still says Running.
   */
  private readonly orphaned = new Set<string>();
  /** Adaptor processes by pod UID. */
  private readonly adaptors = new Map<string, AdaptorProcess>();
  /** Failed sandbox attempts by pod UID (the retry back-off). */
  private readonly attempts = new Map<string, number>();
  private readonly kubelets = new Map<string, EventRecorder>();
  private down = false;
  private uid = '';

  constructor(opts: SimulatedPodVMsOptions) {
    this.client = opts.client;
    this.namespace = opts.namespace ?? OPERATOR_NAMESPACE;
    this.log = opts.log ?? silentLogger();
    this.account = opts.account;
    this.authority = opts.authority;
    this.pods = new Informer(this.client, Pods, { log: this.log });
    this.pods.addEventHandler({ delete: (p) => this.podGone(p) });
    this.nodes = new Informer(this.client, Nodes, { log: this.log });
    this.controller = new Controller(
      {
        name: 'podvm-simulator',
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [{ informer: this.pods, keys: (p: Pod) => this.keysOf(p) }],
        reconcile: (key, ctx) =>
          key.startsWith(ADAPTOR)
            ? this.reconcileAdaptor(key.slice(ADAPTOR.length), ctx.signal)
            : this.reconcilePeerPod(key.slice(PEER.length), ctx.signal),
      },
      this.log,
    );
    // A node lost takes its adaptor's records (they live on its disk) and its adaptor's process with it. A
    // machine that registers under its name runs the pods bound to that name, its adaptor among them (the
    // same pod object, no event): that adaptor starts again and makes the pods it takes over new VMs; the old
    // ones are left behind.
    this.nodes.addEventHandler({
      add: (n) => this.nodeUp(n.metadata.name),
      update: (o, n) => {
        if (o.metadata.uid === n.metadata.uid) return;
        this.nodeLost(n.metadata.name);
        this.nodeUp(n.metadata.name);
      },
      delete: (n) => this.nodeLost(n.metadata.name),
    });
  }

  /** A node (re)appeared: its adaptor starts, then makes the VMs its node's pods lack. */
  private nodeUp(node: string | undefined): void {
    if (!node) return;
    for (const p of this.pods.list()) if (p.spec?.nodeName === node) for (const key of this.keysOf(p)) this.controller.queue.add(key);
  }

  private nodeLost(node: string | undefined): void {
    if (!node) return;
    for (const p of this.pods.list()) {
      if (p.spec?.nodeName !== node) continue;
      if (this.records.delete(p.metadata.uid ?? '')) this.orphaned.add(p.metadata.uid ?? '');
      this.adaptors.delete(p.metadata.uid ?? '');
    }
  }

  /** The cluster's UID, the kube-system namespace's (what the adaptor tags VMs with). */
  get clusterUID(): string {
    return this.uid;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.uid = (await this.client.get(Namespaces, 'kube-system', undefined, signal)).metadata.uid ?? '';
    void this.nodes.run(signal);
    await this.nodes.waitForSync(signal);
    void this.pods.run(signal);
    await this.pods.waitForSync(signal);
    void this.controller.run(signal);
  }

  /** Every adaptor stops (true) or comes back (false); back, each makes the VMs of its node's pods that have none. */
  setAdaptorDown(down: boolean): void {
    this.down = down;
    if (!down) for (const p of this.pods.list()) if (isPeerPod(p)) this.controller.queue.add(`${PEER}${keyOf(p)}`);
  }

  /** The VMs a live pod's record names, by pod UID. */
  recorded(podUID: string): string | undefined {
    return this.records.get(podUID);
  }

  /** The UID of the pod a VM was made for. */
  podOf(vmId: string): string | undefined {
    return this.madeFor.get(vmId);
  }

  /** Whether this adaptor pod is still in the simulation's view (a killed one has left it once the kill is seen). */
  seesAdaptorPod(uid: string): boolean {
    return this.pods.list().some((p) => p.metadata.uid === uid);
  }

  /** The credentials an adaptor pod's process holds (read when it last started), once it started. */
  adaptorCredentials(pod: Pod): AwsCredentials | undefined {
    return this.adaptors.get(pod.metadata.uid ?? '')?.creds;
  }

  async list(clusterUID: string): Promise<PodVM[]> {
    this.stats.lists++;
    return [...this.vms.values()].filter((vm) => vm.tags[CLUSTER_UID_TAG] === clusterUID);
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    const cm = await this.client.find(ConfigMaps, PEER_PODS_CM, this.namespace, signal);
    const refusal = cm?.metadata.annotations?.[FAIL_PODVM_DELETION_ANNOTATION];
    if (refusal !== undefined) {
      this.stats.refusedDeletions++;
      throw new Error(refusal || 'the cloud refused the request');
    }
    // A VM the adaptor holds for a live pod: what osc must never delete (tests read the count).
    if ([...this.records.values()].includes(id)) this.stats.liveVMsDeletedByOsc++;
    // Terminating a VM that is already gone succeeds, as on the clouds.
    if (this.vms.delete(id)) this.stats.deletedByOsc++;
    this.regions.delete(id);
  }

  private keysOf(p: Pod): string[] {
    if (p.metadata.namespace === this.namespace && p.metadata.labels?.app === CAA_DAEMONSET) return [`${ADAPTOR}${keyOf(p)}`];
    return isPeerPod(p) ? [`${PEER}${keyOf(p)}`] : [];
  }

  /** The node's adaptor process that is up, if any (none on a node that is gone or going). */
  private adaptorOn(node: string): AdaptorProcess | undefined {
    const n = this.nodes.get(node);
    if (!n || n.metadata.deletionTimestamp) return undefined;
    for (const p of this.pods.list()) {
      if (p.spec?.nodeName !== node || p.metadata.namespace !== this.namespace || p.metadata.labels?.app !== CAA_DAEMONSET) continue;
      const proc = this.adaptors.get(p.metadata.uid ?? '');
      if (isRunning(p) && proc?.up) return proc;
    }
    return undefined;
  }

  /** The adaptor's start-up calls (the image's root device, the instance types' sizes): the cloud's refusal, or undefined. */
  private startupRefusal(creds: AwsCredentials | undefined, env: Record<string, string>): string | undefined {
    if (!this.account) return undefined;
    try {
      if (env.ROOT_VOLUME_SIZE !== '0') this.account.authorize(creds, 'ec2:DescribeImages');
      const types = (env.PODVM_INSTANCE_TYPES || env.PODVM_INSTANCE_TYPE || ADAPTOR_DEFAULT_TYPE).split(',').filter(Boolean);
      for (const _ of types) this.account.authorize(creds, 'ec2:DescribeInstanceTypes');
      return undefined;
    } catch (e) {
      if (e instanceof AwsError) return e.sdkMessage;
      throw e;
    }
  }

  private async reconcileAdaptor(key: string, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const pod = this.pods.get(key);
    if (!pod || !isRunning(pod) || !pod.spec?.nodeName) return undefined;
    const uid = pod.metadata.uid ?? '';
    const proc = this.adaptors.get(uid);
    if (proc?.up) return undefined;
    const wait = (proc?.restartAt ?? 0) - Date.now();
    if (wait > 0) return { requeueAfterMs: wait };
    // The container (re)starts: the kubelet resolves its environment now.
    const env = await containerEnv(this.client, pod, signal);
    const creds = credentialsFromEnv(pod, env);
    const files = this.authority ? await credentialFiles(this.client, pod, env, signal) : undefined;
    const refusal = this.authority ? this.authority.startup(env, files ?? {}) : this.startupRefusal(creds, env);
    const restarts = proc?.restarts ?? 0;
    if (refusal !== undefined) {
      const backOffMs = Math.min(RESTART_BACKOFF.baseMs * 2 ** restarts, RESTART_BACKOFF.maxMs);
      const message = `cloud-api-adaptor: ${refusal}`;
      if (!(await reportCrashLoop(this.client, pod, restarts + 1, message, Math.ceil(backOffMs / 1000), signal)))
        return { requeueAfterMs: 100 };
      this.stats.adaptorStartFailures++;
      this.adaptors.set(uid, {
        up: false,
        env,
        creds,
        ...(files ? { files } : {}),
        restarts: restarts + 1,
        restartAt: Date.now() + backOffMs,
      });
      this.log.info({ pod: key, error: refusal }, 'simulated adaptor exited at start-up');
      return { requeueAfterMs: backOffMs };
    }
    if (restarts > 0 && !(await reportRestarted(this.client, pod, restarts, signal))) return { requeueAfterMs: 100 };
    this.adaptors.set(uid, { up: true, env, creds, ...(files ? { files } : {}), restarts, restartAt: 0 });
    // The node's peer pods waiting for a sandbox are tried again now.
    for (const p of this.pods.list())
      if (isPeerPod(p) && p.spec?.nodeName === pod.spec.nodeName) this.controller.queue.add(`${PEER}${keyOf(p)}`);
    return undefined;
  }

  private async reconcilePeerPod(key: string, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const p = this.pods.get(key);
    const node = p?.spec?.nodeName;
    if (!p || !node || !isPeerPod(p) || p.metadata.deletionTimestamp) return undefined;
    const uid = p.metadata.uid ?? '';
    if (this.records.has(uid)) {
      if (p.status?.phase === 'Pending' && !sandboxReady(p)) await reportSandboxReady(this.client, p, signal);
      return undefined;
    }
    // A pod whose status someone else plays (a test setting phases) is not the kubelet's to report.
    const rerun = this.orphaned.has(uid);
    if (p.status?.phase && p.status.phase !== 'Pending' && !rerun) return undefined;
    const adaptor = this.down ? undefined : this.adaptorOn(node);
    if (!adaptor) return this.sandboxFailed(p, noAdaptorError(), signal);
    // The sandbox ID is the container runtime's, new for every sandbox: its first 8 characters end the name.
    const name = `${PODVM_NAME_PREFIX}-${podVMNamePart(objectName(p))}-${randomBytes(4).toString('hex')}`;
    if (this.account) {
      try {
        // One RunInstances call: launching needs ec2:RunInstances, tagging at launch ec2:CreateTags.
        this.account.authorize(adaptor.creds, 'ec2:RunInstances');
        this.account.authorize(adaptor.creds, 'ec2:CreateTags', '*', 'ec2:RunInstances');
        // With a public address the adaptor waits for the instance and reads the address.
        if (adaptor.env.USE_PUBLIC_IP === 'true') this.account.authorize(adaptor.creds, 'ec2:DescribeInstances');
      } catch (e) {
        if (!(e instanceof AwsError)) throw e;
        this.stats.refusedCreations++;
        return this.sandboxFailed(p, adaptorCreateError(name, e.sdkMessage), signal);
      }
    }
    const refused = this.authority?.create(adaptor.env, adaptor.files ?? {}, name);
    if (refused !== undefined) {
      this.stats.refusedCreations++;
      return this.sandboxFailed(p, adaptorCreateError(name, refused), signal);
    }
    if (p.metadata.annotations?.[CRASH_BEFORE_RECORD_ANNOTATION] === 'true' && !this.crashed.has(uid)) {
      // Made, then the adaptor died before writing it down: restarted, it knows nothing of this VM.
      const lost = this.create(p, name, adaptor.env);
      this.crashed.add(uid);
      this.stats.crashes++;
      this.log.info({ pod: key, vm: lost }, 'simulated adaptor crashed before recording its VM');
    }
    this.records.set(
      uid,
      this.create(p, `${PODVM_NAME_PREFIX}-${podVMNamePart(objectName(p))}-${randomBytes(4).toString('hex')}`, adaptor.env),
    );
    this.attempts.delete(uid);
    this.orphaned.delete(uid);
    if (!rerun) await reportSandboxReady(this.client, p, signal);
    return undefined;
  }

  /** The kubelet reports the failed sandbox (once as status, each time as an event) and retries with a back-off. */
  private async sandboxFailed(p: Pod, detail: string, signal: AbortSignal): Promise<ReconcileResult> {
    const uid = p.metadata.uid ?? '';
    const n = this.attempts.get(uid) ?? 0;
    this.attempts.set(uid, n + 1);
    if (!containerCreating(p)) await reportSandboxFailed(this.client, p, signal);
    const node = p.spec?.nodeName ?? '';
    let kubelet = this.kubelets.get(node);
    if (!kubelet) this.kubelets.set(node, (kubelet = new EventRecorder(this.client, 'kubelet', node, this.log)));
    await kubelet.record(
      { ...p, apiVersion: 'v1', kind: 'Pod' },
      'Warning',
      'FailedCreatePodSandBox',
      'CreatePodSandbox',
      sandboxFailedMessage(detail),
    );
    return { requeueAfterMs: Math.min(SANDBOX_RETRY.baseMs * 2 ** n, SANDBOX_RETRY.maxMs) };
  }

  /** Runs the VM, as the adaptor configured by `env` (its container's resolved environment) makes it. */
  private create(p: Pod, name: string, env: Record<string, string>): string {
    // As each cloud knows the VM: AWS by instance ID, with its Name tag and the adaptor's TAGS as tags;
    // Azure by resource ID, the TAGS as tags; Google Cloud by name, where the adaptor's TAGS are resource
    // manager tags bound to the instance, not labels, so the instance carries no labels at all.
    const tags = parseTags(env.TAGS);
    const [id, vmTags, where] =
      env.CLOUD_PROVIDER === 'azure'
        ? [
            `/subscriptions/${env.AZURE_SUBSCRIPTION_ID}/resourceGroups/${env.AZURE_RESOURCE_GROUP}/providers/Microsoft.Compute/virtualMachines/${name}`,
            tags,
            env.AZURE_REGION,
          ]
        : env.CLOUD_PROVIDER === 'gcp'
          ? [name, {}, env.GCP_ZONE]
          : [`i-${randomBytes(9).toString('hex').slice(0, 17)}`, { Name: name, ...tags }, env.AWS_REGION];
    this.vms.set(id, { id, name, createdAt: new Date().toISOString(), tags: vmTags });
    this.madeFor.set(id, p.metadata.uid ?? '');
    this.regions.set(id, where ?? '');
    this.stats.created++;
    return id;
  }

  private podGone(p: Pod): void {
    const uid = p.metadata.uid ?? '';
    this.adaptors.delete(uid);
    this.attempts.delete(uid);
    this.orphaned.delete(uid);
    const vm = this.records.get(uid);
    // The record goes with the pod; while the node's adaptor is down (or its node gone), nothing deletes the VM.
    this.records.delete(uid);
    if (this.down || vm === undefined) return;
    const adaptor = this.adaptorOn(p.spec?.nodeName ?? '');
    // No adaptor to stop the sandbox: the VM stays, as when it is down.
    if (!adaptor) return;
    if (this.account) {
      try {
        this.account.authorize(adaptor.creds, 'ec2:TerminateInstances');
      } catch (e) {
        // The adaptor logs the refusal and forgets the sandbox: the VM is left running.
        this.stats.refusedTerminations++;
        this.log.info({ vm, error: e instanceof Error ? e.message : String(e) }, 'simulated adaptor could not delete its VM');
        return;
      }
    }
    const refused = this.authority?.terminate(adaptor.env, adaptor.files ?? {}, vm);
    if (refused !== undefined) {
      this.stats.refusedTerminations++;
      this.log.info({ vm, error: refused }, 'simulated adaptor could not delete its VM');
      return;
    }
    if (this.vms.delete(vm)) {
      this.stats.deletedByAdaptor++;
      this.regions.delete(vm);
    }
  }
}
