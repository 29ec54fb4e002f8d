import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { objectName } from '../api/meta.ts';
import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import { CLUSTER_UID_TAG, PODVM_NAME_PREFIX } from '../api/podvm-leaks.ts';
import type { KubeClient } from '../kube/client.ts';
import { type ConfigMap, ConfigMaps, type DaemonSet, DaemonSets, Namespaces, type Node, Nodes, type Pod, Pods } from '../kube/resources.ts';
import { type PodVM, type PodVMInventory, podVMNamePart } from '../peerpods/leaks.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';

/**
 * Dev-cluster only: on a `kata-remote` pod, `osc.dev/crash-caa-before-record: "true"` makes the simulated
 * adaptor die once between creating the pod's VM and recording it; restarted, it makes another VM for the
 * pod, and the first one is left behind (a leak), as with the real adaptor.
 */
export const CRASH_BEFORE_RECORD_ANNOTATION = 'osc.dev/crash-caa-before-record';
/**
 * On peer-pods-cm: the cloud refuses every deletion of a pod VM through its API (osc's) with this error
 * code, as it would refuse credentials without the right to delete instances.
 */
export const FAIL_PODVM_DELETION_ANNOTATION = 'osc.dev/fail-podvm-deletion';

const isPeerPod = (p: Pod) => p.spec?.runtimeClassName === KATA_REMOTE_RUNTIME_CLASS;
const isRunning = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp;

/** The adaptor's TAGS setting (`key1=value1,key2=value2`) as the tags it puts on a VM. */
export function parseTags(value: string | undefined): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq > 0) tags[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return tags;
}

/**
 * The pod VMs of the dev cluster's cloud, and the cloud-api-adaptor's part in their life: a VM per scheduled
 * `kata-remote` pod, named and tagged as the adaptor does (`podvm-<pod>-<sandbox>` as its Name, and the
 * adaptor's TAGS: the adaptor container's own TAGS variable, else peer-pods-cm's), made by the adaptor of the
 * pod's node when it sees the pod, and deleted by it when the pod goes. Each node's adaptor is its real
 * adaptor pod (the DaemonSet osc-caa-ds's, run by kwok): it is up while that pod is Running on a node that
 * exists. Killed (its pod deleted) or lost with its node, it makes and deletes nothing: a pod deleted
 * meanwhile leaves its VM running. Back (the DaemonSet's new pod Running), it makes the VMs of its node's
 * pods that have none; its records survive it, as the real adaptor's do on the node's disk, but not the
 * node. `setAdaptorDown` stops every adaptor at once whatever their pods do. The cloud's API over these VMs,
 * as osc's client reaches it, is ./cloudapi/.
 */
export class SimulatedPodVMs implements PodVMInventory {
  readonly vms = new Map<string, PodVM>();
  readonly stats = { created: 0, deletedByAdaptor: 0, deletedByOsc: 0, crashes: 0, refusedDeletions: 0, lists: 0, liveVMsDeletedByOsc: 0 };
  readonly pods: Informer<Pod>;
  /** Which pod each VM was made for (by UID): the simulation's own truth, which no tag on the VM carries. */
  private readonly madeFor = new Map<string, string>();
  /** Where each VM runs: the region (AWS_REGION, AZURE_REGION) or zone (GCP_ZONE) peer-pods-cm named when it was made. */
  readonly regions = new Map<string, string>();
  private readonly adaptor: Informer<DaemonSet>;
  private readonly config: Informer<ConfigMap>;
  /** The adaptor pods (osc-caa-ds) and the nodes: which node's adaptor is up. */
  private readonly adaptors: Informer<Pod>;
  private readonly nodes: Informer<Node>;
  private readonly client: KubeClient;
  private readonly namespace: string;
  private readonly log: Logger;
  /** The adaptor's record: pod UID -> its VM. */
  private readonly records = new Map<string, string>();
  private readonly crashed = new Set<string>();
  private down = false;
  private uid = '';

  constructor(opts: { client: KubeClient; log?: Logger; namespace?: string }) {
    this.client = opts.client;
    this.namespace = opts.namespace ?? OPERATOR_NAMESPACE;
    this.log = opts.log ?? silentLogger();
    this.pods = new Informer(this.client, Pods, { log: this.log });
    const byName = (name: string) => ({ namespace: this.namespace, fieldSelector: `metadata.name=${name}`, log: this.log });
    this.adaptor = new Informer(this.client, DaemonSets, byName(CAA_DAEMONSET));
    this.config = new Informer(this.client, ConfigMaps, byName(PEER_PODS_CM));
    this.pods.addEventHandler({
      add: (p) => this.podSeen(p),
      update: (_o, p) => this.podSeen(p),
      delete: (p) => this.podGone(p),
    });
    this.adaptors = new Informer(this.client, Pods, { namespace: this.namespace, labelSelector: `app=${CAA_DAEMONSET}`, log: this.log });
    this.nodes = new Informer(this.client, Nodes, { log: this.log });
    // An adaptor that comes up (again) makes the VMs its node's pods lack.
    const cameUp = (p: Pod) => {
      const node = p.spec?.nodeName;
      if (node && isRunning(p)) for (const pod of this.pods.list()) if (pod.spec?.nodeName === node) this.podSeen(pod);
    };
    this.adaptors.addEventHandler({ add: cameUp, update: (_o, p) => cameUp(p) });
  }

  /** Whether this adaptor pod is still in the simulation's view (a killed one has left it once the kill is seen). */
  seesAdaptorPod(uid: string): boolean {
    return this.adaptors.list().some((a) => a.metadata.uid === uid);
  }

  /** Whether the adaptor of `node` runs: its pod Running on a node that exists, and not every adaptor stopped. */
  adaptorUp(node: string | undefined): boolean {
    if (this.down || !node) return false;
    const n = this.nodes.get(node);
    if (!n || n.metadata.deletionTimestamp) return false;
    return this.adaptors.list().some((a) => a.spec?.nodeName === node && isRunning(a));
  }

  /** The cluster's UID, the kube-system namespace's (what the adaptor tags VMs with). */
  get clusterUID(): string {
    return this.uid;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.uid = (await this.client.get(Namespaces, 'kube-system', undefined, signal)).metadata.uid ?? '';
    void this.adaptor.run(signal);
    void this.config.run(signal);
    void this.nodes.run(signal);
    void this.adaptors.run(signal);
    await this.adaptor.waitForSync(signal);
    await this.config.waitForSync(signal);
    await this.nodes.waitForSync(signal);
    await this.adaptors.waitForSync(signal);
    void this.pods.run(signal);
    await this.pods.waitForSync(signal);
  }

  /** Every adaptor stops (true) or comes back (false); back, each makes the VMs of its pods that have none. */
  setAdaptorDown(down: boolean): void {
    this.down = down;
    if (!down) for (const p of this.pods.list()) this.podSeen(p);
  }

  /** The VMs a live pod's record names, by pod UID. */
  recorded(podUID: string): string | undefined {
    return this.records.get(podUID);
  }

  /** The UID of the pod a VM was made for. */
  podOf(vmId: string): string | undefined {
    return this.madeFor.get(vmId);
  }

  /** The tags the adaptor adds to every VM: its container's TAGS (what osc sets), else peer-pods-cm's. */
  private adaptorTags(): Record<string, string> {
    const spec = this.adaptor.get(`${this.namespace}/${CAA_DAEMONSET}`)?.spec.template.spec as
      | { containers?: { env?: { name: string; value?: string }[] }[] }
      | undefined;
    const container = spec?.containers?.[0];
    const own = container?.env?.find((e) => e.name === 'TAGS')?.value;
    return parseTags(own ?? this.config.get(`${this.namespace}/${PEER_PODS_CM}`)?.data?.TAGS);
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
      throw new Error(refusal || 'UnauthorizedOperation');
    }
    // A VM the adaptor holds for a live pod: what osc must never delete (tests read the count).
    if ([...this.records.values()].includes(id)) this.stats.liveVMsDeletedByOsc++;
    // Terminating a VM that is already gone succeeds, as on the clouds.
    if (this.vms.delete(id)) this.stats.deletedByOsc++;
    this.regions.delete(id);
  }

  private create(p: Pod): string {
    // The sandbox ID is the container runtime's (64 hex digits), new for every sandbox the runtime makes.
    const name = `${PODVM_NAME_PREFIX}-${podVMNamePart(objectName(p))}-${randomBytes(4).toString('hex')}`;
    const cm = this.config.get(`${this.namespace}/${PEER_PODS_CM}`)?.data ?? {};
    // As each cloud knows the VM: AWS by instance ID, with its Name tag and the adaptor's TAGS as tags;
    // Azure by resource ID, the TAGS as tags; Google Cloud by name, where the adaptor's TAGS are resource
    // manager tags bound to the instance, not labels, so the instance carries no labels at all.
    const [id, tags, where] =
      cm.CLOUD_PROVIDER === 'azure'
        ? [
            `/subscriptions/${cm.AZURE_SUBSCRIPTION_ID}/resourceGroups/${cm.AZURE_RESOURCE_GROUP}/providers/Microsoft.Compute/virtualMachines/${name}`,
            this.adaptorTags(),
            cm.AZURE_REGION,
          ]
        : cm.CLOUD_PROVIDER === 'gcp'
          ? [name, {}, cm.GCP_ZONE]
          : [`i-${randomBytes(9).toString('hex').slice(0, 17)}`, { Name: name, ...this.adaptorTags() }, cm.AWS_REGION];
    this.vms.set(id, { id, name, createdAt: new Date().toISOString(), tags });
    this.madeFor.set(id, p.metadata.uid ?? '');
    this.regions.set(id, where ?? '');
    this.stats.created++;
    return id;
  }

  private podSeen(p: Pod): void {
    const uid = p.metadata.uid ?? '';
    if (!isPeerPod(p) || !this.adaptorUp(p.spec?.nodeName) || p.metadata.deletionTimestamp || this.records.has(uid)) return;
    if (p.metadata.annotations?.[CRASH_BEFORE_RECORD_ANNOTATION] === 'true' && !this.crashed.has(uid)) {
      // Made, then the adaptor died before writing it down: restarted, it knows nothing of this VM.
      const lost = this.create(p);
      this.crashed.add(uid);
      this.stats.crashes++;
      this.log.info({ pod: `${p.metadata.namespace}/${p.metadata.name}`, vm: lost }, 'simulated adaptor crashed before recording its VM');
    }
    this.records.set(uid, this.create(p));
  }

  private podGone(p: Pod): void {
    const uid = p.metadata.uid ?? '';
    const vm = this.records.get(uid);
    // The record goes with the pod; while the pod's adaptor is down (or its node gone), nothing deletes the VM.
    this.records.delete(uid);
    if (this.adaptorUp(p.spec?.nodeName) && vm !== undefined && this.vms.delete(vm)) {
      this.stats.deletedByAdaptor++;
      this.regions.delete(vm);
    }
  }
}
