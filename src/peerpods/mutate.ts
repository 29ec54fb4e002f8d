/**
 * Admission-time mutation of peer pods (docs/peerpods.md, "Pods at admission"), pure: a pod in, a JSON patch (RFC 6902, against the pod
 * as received) or a rejection out.
 *
 * For a pod with `runtimeClassName: kata-remote`:
 *  1. Its CPU and memory are summed into `io.katacontainers.config.hypervisor.default_vcpus` (whole vCPUs,
 *     rounded up) and `...default_memory` (MiB, rounded up), the size of the pod VM.
 *     - Per container the limit is used when set, else the request: a limit is what the container may use,
 *       and the VM must hold it. (The API server has already defaulted a missing request to the limit.)
 *     - Containers add up; init containers run before them, so the pod needs the larger of the sum of its
 *       containers and its largest init container; sidecars (init containers with restartPolicy Always)
 *       keep running, so they add to both. This is Kubernetes' own effective-request rule. The upstream
 *       peer-pods webhook adds init containers to the sum instead, which oversizes such VMs.
 *     - Pod-level `spec.resources`, when it sets cpu or memory, wins over the containers' sum.
 *     - Annotations the pod already carries win (the product documentation has users set them by hand); a warning
 *       says when they are smaller than what the containers ask for.
 *  2. cpu and memory are removed from every container's (and the pod's) resources, and the first
 *     container gets `kata.peerpods.io/vm: "1"` in requests and limits: the pod takes one of the node's
 *     pod VM slots instead of node CPU and memory. Other resources (ephemeral-storage, extended resources)
 *     are kept.
 *  3. The instance type is chosen (instancetypes.ts) and written to `...machine_type`; a type outside the
 *     allowed list, or a pod bigger than every allowed type, is rejected with a message naming them.
 *  4. The Kata Agent policy annotation, when present, must decode and be usable by the agent; a pod
 *     whose policy does not deny ExecProcessRequest gets a warning (docs/peerpods.md, "Kata Agent policy").
 *  5. The initdata annotation, when present, must be a value the guest accepts (initdata.ts); a malformed
 *     one is rejected with the layer at fault (docs/peerpods.md, "Initdata"). When absent and a default is
 *     configured (DEFAULT_POD_INITDATA), the default is written into it; a malformed default refuses the pod
 *     rather than let it start without the attestation and policy the administrator meant it to have.
 *
 * Mutating an already mutated pod yields an empty patch.
 */

import { DEFAULT_INITDATA_TEXT, INITDATA_ANNOTATION } from '../api/initdata.ts';
import { KATA_REMOTE_RUNTIME_CLASS, PEER_POD_VM_RESOURCE } from '../api/names.ts';
import type { Container, Pod } from '../kube/resources.ts';
import type { CloudSizes } from './clouds/provider.ts';
import type { PeerPodsConfig } from './config.ts';
import { decodeInitdata, InitdataError } from './initdata.ts';
import { type InstanceTable, selectInstanceType } from './instancetypes.ts';
import { AGENT_POLICY_ANNOTATION, checkPolicy, decodePolicy, deniesExec, PolicyDecodeError } from './policy.ts';
import { parseQuantity, QuantityError, toMiB, toWholeUnits } from './quantity.ts';

export const MACHINE_TYPE_ANNOTATION = 'io.katacontainers.config.hypervisor.machine_type';
export const DEFAULT_VCPUS_ANNOTATION = 'io.katacontainers.config.hypervisor.default_vcpus';
export const DEFAULT_MEMORY_ANNOTATION = 'io.katacontainers.config.hypervisor.default_memory';
/** A custom pod VM image for this pod (docs/peerpods.md); passed through untouched. */
export const IMAGE_ANNOTATION = 'io.katacontainers.config.hypervisor.image';

export type JSONPatchOp = { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

export interface MutateSettings {
  /** PODVM_INSTANCE_TYPE */
  defaultType: string;
  /** PODVM_INSTANCE_TYPES */
  allowedTypes: string[];
  /** Extra or overriding instance sizes. */
  table?: InstanceTable;
  /** The cloud's sizes (its table and the names in messages); AWS's when not given. */
  sizes?: CloudSizes;
  /** The runtime class whose pods are mutated; kata-remote. */
  runtimeClassName?: string;
  /**
   * DEFAULT_POD_INITDATA of peer-pods-cm, when set: given to pods without their own initdata, or, when it is
   * malformed (`problem`), the reason such pods are refused.
   */
  defaultInitdata?: { value: string; problem?: string };
}

export function settingsFromConfig(config: Pick<PeerPodsConfig, 'instanceType' | 'instanceTypes'>, table?: InstanceTable): MutateSettings {
  return { defaultType: config.instanceType, allowedTypes: [...config.instanceTypes], ...(table ? { table } : {}) };
}

export interface MutateSummary {
  /** The pod VM size written (or kept), 0 when unknown. */
  vcpus: number;
  memoryMiB: number;
  /** The instance type, unless left to the cloud-api-adaptor. */
  instanceType?: string;
  instanceTypeReason: 'requested' | 'best-fit' | 'default' | 'unknown-sizes';
}

export type MutateResult =
  | { allowed: true; patch: JSONPatchOp[]; warnings: string[]; summary?: MutateSummary }
  | { allowed: false; message: string };

type Resources = NonNullable<Container['resources']>;
type ResourceName = 'cpu' | 'memory';

class Rejection extends Error {}

/** RFC 6901 escaping of one path segment. */
export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function quantityOf(where: string, text: string): bigint {
  let n: bigint;
  try {
    n = parseQuantity(text);
  } catch (e) {
    if (e instanceof QuantityError) throw new Rejection(`${where} is invalid: ${e.message}`);
    throw e;
  }
  if (n < 0n) throw new Rejection(`${where} is ${JSON.stringify(text)}: it must not be negative`);
  return n;
}

/** What one container (or the pod level) may use of `r`, in nano-units: its limit, else its request, else 0. */
function amount(res: Resources | undefined, r: ResourceName, where: string): bigint {
  const limit = res?.limits?.[r];
  if (limit !== undefined) return quantityOf(`${where} resources.limits.${r}`, limit);
  const request = res?.requests?.[r];
  if (request !== undefined) return quantityOf(`${where} resources.requests.${r}`, request);
  return 0n;
}

/** The pod's effective need of `r` in nano-units (see the file comment). */
export function podAmount(pod: Pod, r: ResourceName): bigint {
  const spec = pod.spec;
  const podLevel = spec?.resources as Resources | undefined;
  const fromPod = amount(podLevel, r, 'the pod');
  if (fromPod > 0n) return fromPod;
  let sidecars = 0n;
  let initMax = 0n;
  for (const c of spec?.initContainers ?? []) {
    const v = amount(c.resources, r, `init container ${JSON.stringify(c.name)}`);
    if (c.restartPolicy === 'Always') sidecars += v;
    else if (sidecars + v > initMax) initMax = sidecars + v;
  }
  let sum = sidecars;
  for (const c of spec?.containers ?? []) sum += amount(c.resources, r, `container ${JSON.stringify(c.name)}`);
  return sum > initMax ? sum : initMax;
}

/** An explicit default_vcpus/default_memory annotation, checked: a whole number, 1 or more. */
function explicitSize(annotations: Record<string, string>, key: string, unit: 'vCPUs' | 'MiB'): number | undefined {
  const v = annotations[key];
  if (v === undefined) return undefined;
  if (/^\d+$/.test(v) && Number(v) >= 1 && Number.isSafeInteger(Number(v))) return Number(v);
  if (/^\d+$/.test(v) && Number(v) >= 1) {
    const like = unit === 'vCPUs' ? '"2"' : '"2048"';
    throw new Rejection(`annotation ${key} is ${JSON.stringify(v)}: it is too large; write a whole number of ${unit}, like ${like}`);
  }
  let fix = unit === 'vCPUs' ? ' (like "2")' : ' (like "2048")';
  try {
    const n = parseQuantity(v);
    const whole = unit === 'vCPUs' ? toWholeUnits(n) : toMiB(n);
    if (n > 0n && whole <= BigInt(Number.MAX_SAFE_INTEGER)) fix = ` (write ${JSON.stringify(String(whole))})`;
  } catch {
    // not a quantity either: keep the generic example
  }
  throw new Rejection(`annotation ${key} is ${JSON.stringify(v)}: it must be a whole number of ${unit}, 1 or more${fix}`);
}

function stripped(res: Resources | undefined, first: boolean): Resources | undefined {
  const drop = new Set(['cpu', 'memory', PEER_POD_VM_RESOURCE]);
  const out: Resources = { ...(res ?? {}) };
  for (const field of ['requests', 'limits'] as const) {
    const kept: Record<string, string> = {};
    for (const [k, v] of Object.entries(res?.[field] ?? {})) if (!drop.has(k)) kept[k] = v;
    if (first) kept[PEER_POD_VM_RESOURCE] = '1';
    if (Object.keys(kept).length > 0) out[field] = kept;
    else delete out[field];
  }
  return res === undefined && Object.keys(out).length === 0 ? undefined : out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function resourcesPatch(path: string, before: Resources | undefined, after: Resources | undefined, patch: JSONPatchOp[]): void {
  if (same(before, after)) return;
  if (after === undefined) patch.push({ op: 'remove', path });
  else if (before === undefined) patch.push({ op: 'add', path, value: after });
  else patch.push({ op: 'replace', path, value: after });
}

function policyCheck(annotations: Record<string, string>, warnings: string[]): void {
  const encoded = annotations[AGENT_POLICY_ANNOTATION];
  if (encoded === undefined) {
    warnings.push(`no Kata Agent policy (${AGENT_POLICY_ANNOTATION}): oc exec is allowed; deny ExecProcessRequest in production`);
    return;
  }
  let text: string;
  try {
    text = decodePolicy(encoded);
  } catch (e) {
    if (e instanceof PolicyDecodeError) throw new Rejection(`annotation ${AGENT_POLICY_ANNOTATION}: ${e.message}`);
    throw e;
  }
  const check = checkPolicy(text);
  const fatal = check.issues.filter((i) => i.severity === 'fatal');
  if (fatal.length > 0) {
    const shown = fatal.map((i) => (i.line > 0 ? `line ${i.line}: ${i.message}` : i.message)).join('; ');
    throw new Rejection(
      `annotation ${AGENT_POLICY_ANNOTATION}: the Kata Agent cannot use this policy, so the pod would never start: ${shown}`,
    );
  }
  for (const i of check.issues) {
    if (i.severity === 'error') warnings.push(`agent policy line ${i.line}: ${i.message}`);
    // Requests without a rule: the agent denies them, which can keep the pod from starting.
    else if (i.severity === 'warning' && i.line === 0) warnings.push(`agent policy: ${i.message}`);
  }
  if (!deniesExec(text)) warnings.push('the Kata Agent policy allows oc exec (ExecProcessRequest); deny it in production');
}

/** A pod's own initdata must be one the guest accepts, or its pod VM would never start. */
function initdataCheck(annotations: Record<string, string>, warnings: string[]): void {
  const value = annotations[INITDATA_ANNOTATION];
  if (value === undefined) return;
  try {
    for (const w of decodeInitdata(value).warnings) warnings.push(`annotation ${INITDATA_ANNOTATION}: ${w}`);
  } catch (e) {
    if (e instanceof InitdataError) throw new Rejection(`annotation ${INITDATA_ANNOTATION}: ${e.message}`);
    throw e;
  }
}

function toSafeNumber(n: bigint, what: string): number {
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new Rejection(
      `the pod's ${what} (the sum of its containers' ${what} limits, or requests) is too large for any pod VM; lower the containers' resources.limits.${what === 'CPU' ? 'cpu' : 'memory'}`,
    );
  }
  return Number(n);
}

/** The admission decision for one pod. */
export function mutatePeerPod(pod: Pod, settings: MutateSettings): MutateResult {
  const runtimeClass = settings.runtimeClassName ?? KATA_REMOTE_RUNTIME_CLASS;
  if (pod.spec?.runtimeClassName !== runtimeClass) return { allowed: true, patch: [], warnings: [] };
  try {
    return mutate(pod, settings);
  } catch (e) {
    if (e instanceof Rejection) return { allowed: false, message: e.message };
    throw e;
  }
}

function mutate(pod: Pod, settings: MutateSettings): MutateResult {
  const spec = pod.spec;
  const containers = spec?.containers ?? [];
  if (containers.length === 0) throw new Rejection('the pod has no containers');
  const annotations = pod.metadata.annotations ?? {};
  const warnings: string[] = [];

  // 1. The pod VM size.
  const computedVcpus = toSafeNumber(toWholeUnits(podAmount(pod, 'cpu')), 'CPU');
  const computedMiB = toSafeNumber(toMiB(podAmount(pod, 'memory')), 'memory');
  const explicitVcpus = explicitSize(annotations, DEFAULT_VCPUS_ANNOTATION, 'vCPUs');
  const explicitMiB = explicitSize(annotations, DEFAULT_MEMORY_ANNOTATION, 'MiB');
  if (explicitVcpus !== undefined && explicitVcpus < computedVcpus) {
    warnings.push(`annotation ${DEFAULT_VCPUS_ANNOTATION} is ${explicitVcpus}, but the containers ask for ${computedVcpus} vCPUs`);
  }
  if (explicitMiB !== undefined && explicitMiB < computedMiB) {
    warnings.push(`annotation ${DEFAULT_MEMORY_ANNOTATION} is ${explicitMiB}, but the containers ask for ${computedMiB} MiB`);
  }
  const vcpus = explicitVcpus ?? computedVcpus;
  const memoryMiB = explicitMiB ?? computedMiB;
  const set: Record<string, string> = {};
  if (explicitVcpus === undefined && computedVcpus > 0) set[DEFAULT_VCPUS_ANNOTATION] = String(computedVcpus);
  if (explicitMiB === undefined && computedMiB > 0) set[DEFAULT_MEMORY_ANNOTATION] = String(computedMiB);

  // 3. The instance type.
  const requestedType = annotations[MACHINE_TYPE_ANNOTATION];
  const choice = selectInstanceType({
    ...(requestedType !== undefined ? { requestedType } : {}),
    vcpus,
    memoryMiB,
    allowed: settings.allowedTypes,
    defaultType: settings.defaultType,
    ...(settings.table ? { table: settings.table } : {}),
    ...(settings.sizes ? { sizes: settings.sizes } : {}),
  });
  if (!choice.ok) throw new Rejection(choice.message);
  if (choice.warning) warnings.push(choice.warning);
  if (choice.type !== undefined && choice.type !== requestedType) set[MACHINE_TYPE_ANNOTATION] = choice.type;

  // 4. The agent policy.
  policyCheck(annotations, warnings);
  // 5. The initdata: the pod's own, else the configured default.
  initdataCheck(annotations, warnings);
  const fallback = settings.defaultInitdata;
  if (annotations[INITDATA_ANNOTATION] === undefined && fallback) {
    if (fallback.problem !== undefined) throw new Rejection(DEFAULT_INITDATA_TEXT.refused(fallback.problem));
    set[INITDATA_ANNOTATION] = fallback.value;
    warnings.push(DEFAULT_INITDATA_TEXT.injected);
  }

  // The patch.
  const patch: JSONPatchOp[] = [];
  const toSet = Object.entries(set).filter(([k, v]) => annotations[k] !== v);
  if (toSet.length > 0) {
    if (pod.metadata.annotations === undefined) patch.push({ op: 'add', path: '/metadata/annotations', value: Object.fromEntries(toSet) });
    else for (const [k, v] of toSet) patch.push({ op: 'add', path: `/metadata/annotations/${escapePointer(k)}`, value: v });
  }
  // 2. Resources.
  containers.forEach((c, i) => {
    resourcesPatch(`/spec/containers/${i}/resources`, c.resources, stripped(c.resources, i === 0), patch);
  });
  (spec?.initContainers ?? []).forEach((c, i) => {
    resourcesPatch(`/spec/initContainers/${i}/resources`, c.resources, stripped(c.resources, false), patch);
  });
  if (spec?.resources !== undefined) {
    const before = spec.resources as Resources;
    const after = stripped(before, false);
    resourcesPatch('/spec/resources', before, after && Object.keys(after).length > 0 ? after : undefined, patch);
  }

  return {
    allowed: true,
    patch,
    warnings,
    summary: {
      vcpus,
      memoryMiB,
      ...(choice.type !== undefined ? { instanceType: choice.type } : {}),
      instanceTypeReason: choice.reason,
    },
  };
}
