import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { objectName } from '../api/meta.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import { CLUSTER_UID_TAG, POD_NAME_TAG, POD_NAMESPACE_TAG, POD_UID_TAG } from '../api/podvm-leaks.ts';
import type { KubeClient } from '../kube/client.ts';
import { ConfigMaps, Namespaces, type Pod, Pods } from '../kube/resources.ts';
import type { PodVM, PodVMInventory } from '../peerpods/leaks.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';

/**
 * Dev-cluster only: on a `kata-remote` pod, `osc.dev/crash-caa-before-record: "true"` makes the simulated
 * adaptor die once between creating the pod's VM and recording it; restarted, it makes another VM for the
 * pod, and the first one is left behind (a leak), as with the real adaptor.
 */
export const CRASH_BEFORE_RECORD_ANNOTATION = 'osc.dev/crash-caa-before-record';
/** On peer-pods-cm: the cloud refuses every deletion of a pod VM by osc with this error. */
export const FAIL_PODVM_DELETION_ANNOTATION = 'osc.dev/fail-podvm-deletion';

const isPeerPod = (p: Pod) => p.spec?.runtimeClassName === KATA_REMOTE_RUNTIME_CLASS;

/**
 * The pod VMs of the dev cluster's cloud, and the cloud-api-adaptor's part in their life: a VM per scheduled
 * `kata-remote` pod, tagged with the cluster's UID and the pod, made when the adaptor sees the pod and
 * deleted when the pod goes, while the adaptor is up. While it is down (`setAdaptorDown(true)`, as when
 * the adaptor pods are killed), nothing is made or deleted: a pod force-deleted then leaves its VM running.
 * Through `PodVMInventory` it is also the cloud API osc lists and deletes leaked VMs with.
 */
export class SimulatedPodVMs implements PodVMInventory {
  readonly vms = new Map<string, PodVM>();
  readonly stats = { created: 0, deletedByAdaptor: 0, deletedByOsc: 0, crashes: 0, refusedDeletions: 0, lists: 0, liveVMsDeletedByOsc: 0 };
  readonly pods: Informer<Pod>;
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
    this.pods.addEventHandler({
      add: (p) => this.podSeen(p),
      update: (_o, p) => this.podSeen(p),
      delete: (p) => this.podGone(p),
    });
  }

  /** The cluster's UID, the kube-system namespace's (what the adaptor tags VMs with). */
  get clusterUID(): string {
    return this.uid;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.uid = (await this.client.get(Namespaces, 'kube-system', undefined, signal)).metadata.uid ?? '';
    void this.pods.run(signal);
    await this.pods.waitForSync(signal);
  }

  /** The adaptor stops (true) or comes back (false); back, it makes the VMs of pods that have none. */
  setAdaptorDown(down: boolean): void {
    this.down = down;
    if (!down) for (const p of this.pods.list()) this.podSeen(p);
  }

  /** The VMs a live pod's record names, by pod UID. */
  recorded(podUID: string): string | undefined {
    return this.records.get(podUID);
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
  }

  private create(p: Pod): string {
    const id = `i-${randomBytes(9).toString('hex').slice(0, 17)}`;
    this.vms.set(id, {
      id,
      createdAt: new Date().toISOString(),
      tags: {
        Name: `podvm-${p.metadata.name}-${(p.metadata.uid ?? '').slice(0, 8)}`,
        [CLUSTER_UID_TAG]: this.uid,
        [POD_NAMESPACE_TAG]: p.metadata.namespace ?? '',
        [POD_NAME_TAG]: objectName(p),
        [POD_UID_TAG]: p.metadata.uid ?? '',
      },
    });
    this.stats.created++;
    return id;
  }

  private podSeen(p: Pod): void {
    const uid = p.metadata.uid ?? '';
    if (this.down || !isPeerPod(p) || !p.spec?.nodeName || p.metadata.deletionTimestamp || this.records.has(uid)) return;
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
    // The record goes with the pod; while the adaptor is down, nothing deletes the VM.
    this.records.delete(uid);
    if (!this.down && vm !== undefined && this.vms.delete(vm)) this.stats.deletedByAdaptor++;
  }
}
