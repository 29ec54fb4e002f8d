/**
 * The leaked pod VM collector (docs/peerpods.md, "Leaked pod VMs"): observe (the cloud's pod VMs of this
 * cluster through its inventory, the live pods from the shared cache), plan (src/peerpods/leaks.ts, pure),
 * confirm (before any deletion the pods are read live and the plan made again: the cache may be behind),
 * act (delete each leaked VM, with an event and a metric per VM; a failure becomes the KataConfig condition
 * PodVMDeletionFailed and is not retried until peer-pods-cm or the credentials change). It runs beside the
 * peer pods controller, with its own key and its own condition (its own status field manager), only while
 * the KataConfig enables peer pods. The inventory is the cloud's API (./cloudapi/), opened for the cloud
 * peer-pods-cm names with peer-pods-secret, else the collector's own workload identity (Manual mode, its
 * Secret from ccoctl, the operator's projected token traded for short-lived credentials), else the adaptor's
 * long-lived keys (src/peerpods/collector-credentials.ts), and opened again when any of them changes. A
 * refused list is the same condition (reason PodVMListRefused), listed again at the interval.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { COLLECTOR_CCO_SECRET, PEER_PODS_CCO_SECRET } from '../../api/credentials-text.ts';
import { activeKataConfig, type KataConfig, type KataConfigStatus, KataConfigs } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM, PEER_PODS_SECRET } from '../../api/names.ts';
import {
  deletionFailedConditionMessage,
  LEAKED_VM_DELETED_EVENT,
  LEAKED_VM_DELETION_FAILED_EVENT,
  LEAKED_VMS_NOT_COLLECTED_EVENT,
  leakedVMDeletedMessage,
  leakedVMDeletionFailedMessage,
  listFailedConditionMessage,
  PODVM_DELETION_FAILED,
  PODVM_DELETION_FAILED_REASON,
  PODVM_LIST_FAILED_REASON,
} from '../../api/podvm-leaks.ts';
import { type ConfigMap, ConfigMaps, Namespaces, type Pod, Pods, type Secret, Secrets } from '../../kube/resources.ts';
import type { Condition } from '../../kube/types.ts';
import { collectorCredentials } from '../../peerpods/collector-credentials.ts';
import { type FailedDeletion, type LeakInput, type PodRef, type PodVM, type PodVMInventory, planLeakedVMs } from '../../peerpods/leaks.ts';
import { setCondition } from '../../runtime/conditions.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';
import { applyStatusIfChanged, type StatusShare } from '../../runtime/status.ts';
import { POD_CACHE } from '../kataconfig/controller.ts';
import type { CloudEndpoint, CloudInventory } from './cloudapi/index.ts';
import type { PodVMMetrics } from './vm-metrics.ts';

export const LEAKS_CONTROLLER = 'podvm-leaks';
const KEY = 'podvm-leaks';

export interface LeakCollectorOptions {
  /**
   * A fixed inventory (pure tests). Without one, the cloud's own API is used, for the cloud peer-pods-cm
   * names, with the credentials src/peerpods/collector-credentials.ts chooses.
   */
  inventory?: PodVMInventory;
  /** Where the cloud API clients send their requests instead of the cloud (tests, air-gapped endpoints). */
  endpoint?: CloudEndpoint;
  /** How young an unowned VM may be and still be a create in flight (default 10 minutes). */
  graceMs?: number;
  /** How often the cloud is listed (default 5 minutes); a kata-remote pod's deletion also wakes it. */
  intervalMs?: number;
  /**
   * The operator's projected ServiceAccount token, traded for a workload identity's credentials (default
   * the path its Deployment mounts it at; `osc run` outside a pod, and tests, name another).
   */
  tokenFile?: string;
  /** The `cloud` label of the metrics (default: peer-pods-cm's CLOUD_PROVIDER). */
  cloud?: string;
  namespace?: string;
  now?: () => Date;
  /** The monotonic clock the grace period is measured on (tests set it; default performance.now). */
  elapsedMs?: () => number;
}

export const DEFAULT_LEAK_GRACE_MS = 10 * 60_000;
export const DEFAULT_LEAK_INTERVAL_MS = 5 * 60_000;

/** The KataConfig status field this collector owns: its one condition, only while it is True. */
export const leaksStatusShare: StatusShare<KataConfigStatus> = {
  fieldManager: 'osc-podvm-leaks',
  owned: (s) => {
    const conditions = (s?.conditions ?? []).filter((c) => c.type === PODVM_DELETION_FAILED);
    return conditions.length ? { conditions } : {};
  },
};

interface LeakCaches {
  kataConfigs: Informer<KataConfig>;
  pods: Informer<Pod>;
  configMaps: Informer<ConfigMap>;
  secrets: Informer<Secret>;
  ccoSecrets: Informer<Secret>;
  collectorSecrets: Informer<Secret>;
}

const podRef = (p: Pod): PodRef => ({ namespace: p.metadata.namespace ?? '', name: objectName(p), uid: p.metadata.uid ?? '' });

export class LeakedVMCollector {
  /** Deletions that failed, by VM ID, kept until the VM is gone or a retry succeeds. */
  readonly failures = new Map<string, FailedDeletion>();
  private readonly counted = new Set<string>();
  private unownedSince = new Map<string, number>();
  private clusterUID: string | undefined;
  /** The cloud API client open now, and the digest of the configuration it was opened with. */
  private opened: { digest: string; inventory?: CloudInventory } | undefined;
  /**
   * Why the cloud refused to list pod VMs (a sign-in or a list refused), with the inputs it was refused
   * for: the condition says it until they change or a list succeeds; tried again at the interval only.
   */
  private listFailure: { error: string; from: string } | undefined;

  private readonly mgr: Manager;
  private readonly opts: LeakCollectorOptions & { namespace: string };
  private readonly metrics: PodVMMetrics;
  private readonly caches: LeakCaches;

  constructor(mgr: Manager, opts: LeakCollectorOptions & { namespace: string }, metrics: PodVMMetrics, caches: LeakCaches) {
    this.mgr = mgr;
    this.opts = opts;
    this.metrics = metrics;
    this.caches = caches;
  }

  async reconcile(log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    const kc = activeKataConfig(this.caches.kataConfigs.list());
    if (!kc?.spec?.enablePeerPods || kc.metadata.deletionTimestamp) {
      // Peer pods off: no cloud client stays open (its connections, its credentials in memory).
      this.opened?.inventory?.close();
      this.opened = undefined;
      return undefined;
    }
    const ns = this.opts.namespace;
    this.clusterUID ??= (await this.mgr.client.get(Namespaces, 'kube-system', undefined, signal)).metadata.uid ?? '';
    const cm = this.caches.configMaps.get(`${ns}/${PEER_PODS_CM}`);
    const secret = this.caches.secrets.get(`${ns}/${PEER_PODS_SECRET}`);
    // Any change of either may fix a refused deletion (new credentials, say): compared by their versions.
    const ccoSecret = this.caches.ccoSecrets.get(`${ns}/${PEER_PODS_CCO_SECRET}`);
    const collectorSecret = this.caches.collectorSecrets.get(`${ns}/${COLLECTOR_CCO_SECRET}`);
    const versions = [cm, secret, ccoSecret, collectorSecret].map((o) => o?.metadata.resourceVersion ?? null);
    const inputs = createHash('sha256').update(JSON.stringify(versions)).digest('hex');
    const cloud = this.opts.cloud ?? cm?.data?.CLOUD_PROVIDER ?? 'unknown';
    // Each counter exists from the first pass, at 0: an alert on its rate needs the series before the first leak.
    for (const m of [this.metrics.leakedVMsFound, this.metrics.leakedVMsDeleted, this.metrics.leakedVMDeleteFailures]) m.inc({ cloud }, 0);
    const opened = this.opts.inventory ? { inventory: this.opts.inventory, from: 'test' } : await this.cloudInventory(kc, cm, secret, log);
    const interval = this.opts.intervalMs ?? DEFAULT_LEAK_INTERVAL_MS;
    if (!opened) {
      this.listFailure = undefined;
      await this.writeCondition(kc);
      return undefined;
    }
    const { inventory } = opened;

    let vms: PodVM[];
    try {
      vms = await inventory.list(this.clusterUID, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      // Refused (a sign-in the cloud does not trust, a list not allowed): a condition naming the fix, tried
      // again at the interval (the kubelet's next token, a role fixed in the cloud) and on any input change.
      const error = e instanceof Error ? e.message : String(e);
      if (this.listFailure?.error !== error) log.warn({ err: error, credentials: opened.from }, 'pod VMs not listed');
      this.listFailure = { error, from: opened.from };
      await this.writeCondition(kc);
      return { requeueAfterMs: interval };
    }
    this.listFailure = undefined;
    const now = this.opts.now?.() ?? new Date();
    const input: LeakInput = {
      clusterUID: this.clusterUID,
      vms,
      pods: this.caches.pods.list().map(podRef),
      now,
      elapsedMs: this.opts.elapsedMs?.() ?? performance.now(),
      graceMs: this.opts.graceMs ?? DEFAULT_LEAK_GRACE_MS,
      failures: [...this.failures.values()],
      inputs,
      unownedSince: this.unownedSince,
    };
    let plan = planLeakedVMs(input);
    if (plan.delete.length) {
      // A deletion cannot be undone: before one, the pods are read live (every pod was made before its VM, so
      // a read after the VM list shows each pod that owns a VM of it). A cache behind the API server (a watch
      // slow or cut) then never has a live pod's VM taken for a leak, however short the grace period.
      const live = await this.mgr.client.list(Pods, { labelSelector: POD_CACHE.labelSelector, map: POD_CACHE.transform, signal });
      const confirmed = planLeakedVMs({ ...input, pods: live.items.map(podRef) });
      const kept = plan.delete.filter((vm) => !confirmed.delete.some((c) => c.id === vm.id));
      if (kept.length) log.info({ vms: kept.map((vm) => vm.id) }, 'pod cache behind the API server: VMs of pods it lacks kept');
      plan = confirmed;
    }
    this.unownedSince = plan.unownedSince;

    for (const vm of plan.delete) {
      if (!this.counted.has(vm.id)) {
        this.counted.add(vm.id);
        this.metrics.leakedVMsFound.inc({ cloud });
      }
      try {
        await inventory.delete(vm.id, signal);
        this.failures.delete(vm.id);
        this.metrics.leakedVMsDeleted.inc({ cloud });
        const age = Math.round((now.getTime() - Date.parse(vm.createdAt)) / 1000);
        log.info({ vm: vm.id }, 'leaked pod VM deleted');
        await this.mgr.events.record(kc, 'Normal', LEAKED_VM_DELETED_EVENT, 'Delete', leakedVMDeletedMessage(vm.id, vm.name, age));
      } catch (e) {
        if (signal.aborted) throw e;
        const error = e instanceof Error ? e.message : String(e);
        this.failures.set(vm.id, { id: vm.id, error, inputs });
        this.metrics.leakedVMDeleteFailures.inc({ cloud });
        log.warn({ vm: vm.id, err: error }, 'leaked pod VM not deleted');
        await this.mgr.events.record(
          kc,
          'Warning',
          LEAKED_VM_DELETION_FAILED_EVENT,
          'Delete',
          leakedVMDeletionFailedMessage(vm.id, vm.name, error),
        );
      }
    }
    // A VM no longer listed (deleted by hand) is no longer a failure.
    const listed = new Set(vms.map((v) => v.id));
    for (const id of this.failures.keys()) if (!listed.has(id)) this.failures.delete(id);
    await this.writeCondition(kc);

    return { requeueAfterMs: Math.min(interval, plan.requeueAfterMs ?? interval) };
  }

  /** The cloud's inventory for this configuration: opened once, again when the cloud or credentials change. */
  private async cloudInventory(
    kc: KataConfig,
    cm: ConfigMap | undefined,
    secret: Secret | undefined,
    log: Logger,
  ): Promise<{ inventory: CloudInventory; from: string } | undefined> {
    const cloudName = cm?.data?.CLOUD_PROVIDER ?? '';
    const ns = this.opts.namespace;
    const chosen = collectorCredentials({
      ...(secret ? { adminSecret: secret } : {}),
      ...(this.caches.collectorSecrets.get(`${ns}/${COLLECTOR_CCO_SECRET}`)
        ? { collectorSecret: this.caches.collectorSecrets.get(`${ns}/${COLLECTOR_CCO_SECRET}`) }
        : {}),
      ...(this.caches.ccoSecrets.get(`${ns}/${PEER_PODS_CCO_SECRET}`)
        ? { ccoSecret: this.caches.ccoSecrets.get(`${ns}/${PEER_PODS_CCO_SECRET}`) }
        : {}),
      ...(cloudName ? { cloud: cloudName } : {}),
      ...(this.opts.tokenFile ? { tokenFile: this.opts.tokenFile } : {}),
    });
    const digest = createHash('sha256')
      .update(JSON.stringify([cloudName, cm?.data ?? {}, chosen]))
      .digest('hex');
    const from = 'from' in chosen ? chosen.from : 'none';
    if (this.opened?.digest === digest) return this.opened.inventory ? { inventory: this.opened.inventory, from } : undefined;
    this.opened?.inventory?.close();
    this.opened = { digest };
    if (!cloudName) return undefined;
    if ('unavailable' in chosen) {
      // Once per configuration (the digest): where an administrator looks, with the step that fixes it.
      log.warn({ cloud: cloudName, reason: chosen.unavailable }, 'leaked pod VMs are not collected');
      await this.mgr.events.record(
        kc,
        'Warning',
        LEAKED_VMS_NOT_COLLECTED_EVENT,
        'List',
        `leaked pod VMs are not collected: ${chosen.unavailable}`,
      );
      return undefined;
    }
    // Loaded only now: an operator without peer pods never loads a cloud client.
    const { openInventory } = await import('./cloudapi/index.ts');
    const result = await openInventory(cloudName, cm?.data ?? {}, chosen.creds, this.opts.endpoint);
    if ('unavailable' in result) {
      log.warn({ cloud: cloudName, reason: result.unavailable }, 'leaked pod VMs are not collected');
      return undefined;
    }
    this.opened.inventory = result.inventory;
    return { inventory: result.inventory, from };
  }

  private async writeCondition(kc: KataConfig): Promise<void> {
    const failed = [...this.failures.values()];
    const list = this.listFailure;
    const conditions: Condition[] = list
      ? setCondition(kc.status?.conditions, {
          type: PODVM_DELETION_FAILED,
          status: 'True',
          reason: PODVM_LIST_FAILED_REASON,
          message: listFailedConditionMessage(list.error, list.from),
        })
      : failed.length
        ? setCondition(kc.status?.conditions, {
            type: PODVM_DELETION_FAILED,
            status: 'True',
            reason: PODVM_DELETION_FAILED_REASON,
            message: deletionFailedConditionMessage(failed),
          })
        : [];
    const status = leaksStatusShare.owned({ conditions } as KataConfigStatus);
    await applyStatusIfChanged(this.mgr.client, KataConfigs, kc, status, leaksStatusShare, this.mgr.metrics);
  }
}

/** Wires the collector into a manager, on the caches the peer pods controller shares. */
export function setupLeakedVMCollector(mgr: Manager, metrics: PodVMMetrics, options: LeakCollectorOptions): LeakedVMCollector {
  const namespace = options.namespace ?? OPERATOR_NAMESPACE;
  const byName = (name: string) => ({ namespace, fieldSelector: `metadata.name=${name}` });
  const caches = {
    kataConfigs: mgr.informer(KataConfigs),
    pods: mgr.informer(Pods, POD_CACHE),
    configMaps: mgr.informer(ConfigMaps, byName(PEER_PODS_CM)),
    secrets: mgr.informer(Secrets, byName(PEER_PODS_SECRET)),
    ccoSecrets: mgr.informer(Secrets, byName(PEER_PODS_CCO_SECRET)),
    collectorSecrets: mgr.informer(Secrets, byName(COLLECTOR_CCO_SECRET)),
  };
  const collector = new LeakedVMCollector(mgr, { ...options, namespace }, metrics, caches);
  mgr.addController({
    name: LEAKS_CONTROLLER,
    watches: [
      { informer: caches.kataConfigs, keys: () => [KEY], updated: (a, b) => a.spec?.enablePeerPods !== b.spec?.enablePeerPods },
      // A peer pod gone may have left its VM behind; a change of peer-pods-cm or the secret may unblock a failure.
      { informer: caches.pods, keys: (p: Pod) => (p.spec?.runtimeClassName === KATA_REMOTE_RUNTIME_CLASS ? [KEY] : []) },
      { informer: caches.configMaps, keys: () => [KEY] },
      { informer: caches.secrets, keys: () => [KEY] },
      { informer: caches.ccoSecrets, keys: () => [KEY] },
      { informer: caches.collectorSecrets, keys: () => [KEY] },
    ],
    reconcile: (_key, { log, signal }) => collector.reconcile(log, signal),
  });
  return collector;
}
