/**
 * Leaked pod VMs, as a pure plan: given the pod VMs the cloud lists for this cluster, the live peer pods and
 * the time, which VMs to delete, which to leave, and what to report. No I/O here: the caller lists the VMs
 * through the cloud's inventory, deletes what the plan says and records failures for the next plan.
 *
 * A VM leaks when the cloud-api-adaptor dies between creating it and recording it, or when its pod is
 * force-deleted while the adaptor is down: nothing deletes it then, and it is billed on. The rules:
 *
 * - only VMs tagged with this cluster's UID are considered (the list is filtered by it; the plan checks),
 *   and of those only the ones named as the adaptor names pod VMs (`podvm-<pod>-<sandbox>`);
 * - a VM whose name names a pod that exists (in any namespace: the adaptor's name holds no namespace) is
 *   never touched, however the pod fares: the adaptor deletes it with the pod;
 * - a VM younger than the grace period is left alone, so that a create in flight (the VM made, the pod not
 *   yet in the cache) is never mistaken for a leak; so is one first seen without a pod less than the grace
 *   period ago, so that the adaptor's own deletion of a VM whose pod just went is not raced;
 * - a VM whose deletion failed is not tried again on its own (no silent retry loop): it is reported in a
 *   condition until the inputs that could fix it (peer-pods-cm, peer-pods-secret) change, or it is gone.
 */
import { CLUSTER_UID_TAG, PODVM_NAME_MAX, PODVM_NAME_PREFIX } from '../api/podvm-leaks.ts';

/** A pod VM as the cloud lists it. */
export interface PodVM {
  /** The cloud's ID of the instance (what its delete call takes). */
  id: string;
  /** Its name: AWS's `Name` tag, the VM's name on Azure and Google Cloud (`podvm-<pod>-<sandbox>`). */
  name: string;
  /** When the cloud created it (RFC 3339). */
  createdAt: string;
  tags: Readonly<Record<string, string>>;
}

/** What the cloud's inventory of pod VMs offers osc (one per cloud, behind the provider seam). */
export interface PodVMInventory {
  /** The pod VMs tagged with the cluster (CLUSTER_UID_TAG = clusterUID) that are not already terminating. */
  list(clusterUID: string, signal?: AbortSignal): Promise<PodVM[]>;
  /** Deletes (terminates) one; rejects with the cloud's error. */
  delete(id: string, signal?: AbortSignal): Promise<void>;
}

/** A live pod, as far as VM ownership needs it. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** A deletion that failed, remembered between plans. */
export interface FailedDeletion {
  id: string;
  error: string;
  /** The digest of peer-pods-cm and peer-pods-secret when it failed: a change means a retry may succeed. */
  inputs: string;
}

export interface LeakInput {
  clusterUID: string;
  vms: readonly PodVM[];
  pods: readonly PodRef[];
  now: Date;
  /** How young a VM may be and still be in flight, in ms. */
  graceMs: number;
  failures: readonly FailedDeletion[];
  /** The digest of peer-pods-cm and peer-pods-secret now. */
  inputs: string;
  /** When each VM was first seen without a live pod (on the `elapsedMs` clock), from the previous plan. */
  unownedSince: ReadonlyMap<string, number>;
  /**
   * A monotonic clock reading (performance.now in the controller), for how long a VM has been seen without
   * a pod: a step of the wall clock must not age an in-flight create past the grace period. Absent: `now`.
   */
  elapsedMs?: number;
}

export interface LeakPlan {
  /** VMs to delete now: leaked, past the grace period, not held by a failure. */
  delete: PodVM[];
  /** Leaked VMs whose deletion failed and stays failed until the inputs change (the condition). */
  failed: FailedDeletion[];
  /** Leaked VMs still within the grace period (checked again once it has passed). */
  young: PodVM[];
  /** When the youngest of `young` passes the grace period: when to look again (ms from `now`). */
  requeueAfterMs?: number;
  /** VMs a live pod owns. */
  owned: number;
  /** When each VM without a live pod was first seen so (for the next plan). */
  unownedSince: Map<string, number>;
}

/**
 * The TAGS the adaptor is given: peer-pods-cm's, and the cluster's tag, which the adaptor then puts on
 * every VM it makes (its TAGS are `key=value` pairs, comma-separated; a key given twice takes the last).
 */
export function adaptorTagsValue(configured: string | undefined, clusterUID: string): string {
  const own = `${CLUSTER_UID_TAG}=${clusterUID}`;
  const given = (configured ?? '').trim().replace(/,+$/, '');
  return given ? `${given},${own}` : own;
}

/** The part of a pod VM's name the adaptor takes from a pod's name (its GenerateInstanceName). */
export function podVMNamePart(podName: string): string {
  const sanitized = [...podName.toLowerCase()].map((c) => (/^[a-z0-9-]$/.test(c) ? c : '-')).join('');
  return sanitized.slice(0, PODVM_NAME_MAX - PODVM_NAME_PREFIX.length - 10);
}

const VM_NAME_RE = new RegExp(`^${PODVM_NAME_PREFIX}-(.+)-[a-z0-9-]{8}$`);

/** The pod part of a VM's name, or undefined for a name the adaptor does not give (not a pod VM). */
export function podPartOfVMName(name: string): string | undefined {
  return VM_NAME_RE.exec(name)?.[1];
}

export function planLeakedVMs(input: LeakInput): LeakPlan {
  const names = new Set(input.pods.map((p) => podVMNamePart(p.name)));
  const failures = new Map(input.failures.map((f) => [f.id, f]));
  const plan: LeakPlan = { delete: [], failed: [], young: [], owned: 0, unownedSince: new Map() };
  const now = input.now.getTime();
  const elapsed = input.elapsedMs ?? now;
  for (const vm of input.vms) {
    if (vm.tags[CLUSTER_UID_TAG] !== input.clusterUID) continue;
    const pod = podPartOfVMName(vm.name);
    // Tagged with the cluster but not named as the adaptor names pod VMs: not ours to judge.
    if (pod === undefined) continue;
    if (names.has(pod)) {
      plan.owned++;
      continue;
    }
    const since = input.unownedSince.get(vm.id) ?? elapsed;
    plan.unownedSince.set(vm.id, since);
    const created = Date.parse(vm.createdAt);
    // A VM whose creation time cannot be read is as young as can be: never deleted on a guess.
    const age = Number.isNaN(created) ? 0 : now - created;
    const waited = Math.min(age, elapsed - since);
    if (waited < input.graceMs) {
      plan.young.push(vm);
      const left = input.graceMs - waited;
      plan.requeueAfterMs = Math.min(plan.requeueAfterMs ?? left, left);
      continue;
    }
    const failure = failures.get(vm.id);
    if (failure && failure.inputs === input.inputs) plan.failed.push(failure);
    else plan.delete.push(vm);
  }
  return plan;
}
