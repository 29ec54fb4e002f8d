/**
 * The pod VM instance type choice, from the size table of the pod's cloud (docs/peerpods.md, "Pods at admission").
 *
 * The choice, in order:
 *   1. the pod names a type (`io.katacontainers.config.hypervisor.machine_type`): it must be allowed;
 *   2. else, when both the pod's vCPUs and memory are known: the smallest allowed type that fits both;
 *   3. else the default type (`PODVM_INSTANCE_TYPE`).
 *
 * (The keys are AWS's; Azure's are AZURE_INSTANCE_SIZE(S), Google Cloud's GCP_MACHINE_TYPE and PODVM_INSTANCE_TYPES.)
 *
 * "Allowed" is `PODVM_INSTANCE_TYPES` plus the default type itself (the documented example ConfigMap uses a
 * default, t3.medium, that is not in its own list, and the cloud-api-adaptor uses the default regardless).
 * An empty list allows only the default.
 *
 * "Smallest" orders by memory, then vCPUs, then the administrator's order in `PODVM_INSTANCE_TYPES`. Memory
 * first is the cost proxy the cloud-api-adaptor uses for its own best fit, and on AWS memory is what
 * separates the price of same-vCPU types (c5.xlarge 4/8 GiB < m5.xlarge 4/16 GiB < r5.xlarge 4/32 GiB).
 * Allowed types whose size is unknown (not in the table) are never picked by best fit; they can still be
 * asked for by name, or be the default. When no type of known size fits but some sizes are unknown, osc
 * does not reject the pod: it leaves the choice to the cloud-api-adaptor, which asks AWS for the sizes.
 */

import { defaultCloud } from './clouds/index.ts';
import type { CloudSizes, InstanceSize, InstanceTable } from './clouds/provider.ts';

/** AWS's table, where callers that predate the other clouds look for it. */
export { AWS_INSTANCE_TYPES } from './clouds/aws/sizes.ts';
export type { InstanceSize, InstanceTable };

/** A cloud's size table (AWS's when none is given) with `extra` rows added or overriding its own. */
export function instanceTable(extra?: InstanceTable, base: Readonly<InstanceTable> = defaultCloud().sizes.table): InstanceTable {
  return { ...base, ...(extra ?? {}) };
}

/** `t3.medium (2 vCPUs, 4096 MiB)`, or `t9.huge (size unknown)`. */
export function describeType(name: string, table: InstanceTable): string {
  const s = table[name];
  if (!s) return `${name} (size unknown)`;
  return `${name} (${s.vcpus} vCPU${s.vcpus === 1 ? '' : 's'}, ${s.memoryMiB} MiB)`;
}

export interface SelectInstanceTypeInput {
  /** `io.katacontainers.config.hypervisor.machine_type` from the pod, if set. */
  requestedType?: string;
  /** Whole vCPUs the pod needs, if known (0 or undefined = unknown). */
  vcpus?: number;
  /** MiB of memory the pod needs, if known (0 or undefined = unknown). */
  memoryMiB?: number;
  /** `PODVM_INSTANCE_TYPES` (empty: only the default type is allowed). */
  allowed: string[];
  /** `PODVM_INSTANCE_TYPE`; always allowed. */
  defaultType: string;
  /** Extra or overriding sizes, on top of the cloud's table. */
  table?: InstanceTable;
  /** The cloud's sizes: its table, the list's key and what a size is called (AWS's when not given). */
  sizes?: Pick<CloudSizes, 'table' | 'listKey' | 'noun' | 'short'>;
}

export type SelectInstanceTypeResult =
  | { ok: true; type: string; reason: 'requested' | 'best-fit' | 'default'; warning?: string }
  /**
   * No allowed type of known size fits, but some allowed types have unknown sizes: osc cannot decide, so it
   * leaves the choice to the cloud-api-adaptor (which asks AWS for the sizes) instead of rejecting the pod.
   */
  | { ok: true; type?: undefined; reason: 'unknown-sizes'; warning: string }
  | { ok: false; message: string };

/** The allowed types: the list, then the default type when the list does not hold it. */
export function effectiveAllowedTypes(allowed: string[], defaultType: string): string[] {
  const out: string[] = [];
  for (const t of [...allowed, defaultType]) if (t && !out.includes(t)) out.push(t);
  return out;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function needs(vcpus: number | undefined, memoryMiB: number | undefined): string {
  const parts: string[] = [];
  if (vcpus) parts.push(plural(vcpus, 'vCPU'));
  if (memoryMiB) parts.push(`${memoryMiB} MiB of memory`);
  return parts.join(' and ');
}

/** Whether `size` lacks room for what is known of the pod's needs. */
function tooSmall(size: InstanceSize, vcpus: number | undefined, memoryMiB: number | undefined): boolean {
  return (!!vcpus && size.vcpus < vcpus) || (!!memoryMiB && size.memoryMiB < memoryMiB);
}

export function selectInstanceType(input: SelectInstanceTypeInput): SelectInstanceTypeResult {
  const sizes = input.sizes ?? defaultCloud().sizes;
  const table = instanceTable(input.table, sizes.table);
  const { listKey, noun, short } = sizes;
  const allowed = effectiveAllowedTypes(input.allowed, input.defaultType);
  const { vcpus, memoryMiB } = input;
  const list = allowed.join(', ');

  if (input.requestedType !== undefined && input.requestedType !== '') {
    const requested = input.requestedType;
    if (!allowed.includes(requested)) {
      return {
        ok: false,
        message:
          `${noun} ${JSON.stringify(requested)} (annotation io.katacontainers.config.hypervisor.machine_type) is not allowed: ` +
          `the allowed ${short}s are ${list}; use one of them, or ask the administrator to add it to ${listKey} in ConfigMap peer-pods-cm`,
      };
    }
    const size = table[requested];
    if (size && (vcpus || memoryMiB) && tooSmall(size, vcpus, memoryMiB)) {
      return {
        ok: true,
        type: requested,
        reason: 'requested',
        warning: `${noun} ${describeType(requested, table)} is smaller than the ${needs(vcpus, memoryMiB)} the containers ask for`,
      };
    }
    return { ok: true, type: requested, reason: 'requested' };
  }

  if (vcpus && memoryMiB) {
    const candidates = allowed
      .map((name, order) => ({ name, order, size: table[name] }))
      .filter((c): c is { name: string; order: number; size: InstanceSize } => c.size !== undefined)
      .filter((c) => c.size.vcpus >= vcpus && c.size.memoryMiB >= memoryMiB)
      .sort((a, b) => a.size.memoryMiB - b.size.memoryMiB || a.size.vcpus - b.size.vcpus || a.order - b.order);
    const best = candidates[0];
    if (best) return { ok: true, type: best.name, reason: 'best-fit' };
    const unknown = allowed.filter((t) => !table[t]);
    if (unknown.length > 0) {
      return {
        ok: true,
        reason: 'unknown-sizes',
        warning: `no allowed ${noun} of known size has ${needs(vcpus, memoryMiB)}; the cloud-api-adaptor will choose among ${unknown.join(', ')}`,
      };
    }
    return {
      ok: false,
      message:
        `the pod needs ${needs(vcpus, memoryMiB)}, more than any allowed ${noun} offers: ` +
        `${allowed.map((t) => describeType(t, table)).join(', ')}; lower the containers' CPU/memory limits, ` +
        `or ask the administrator to add a larger ${short} to ${listKey} in ConfigMap peer-pods-cm`,
    };
  }

  const size = table[input.defaultType];
  if (size && (vcpus || memoryMiB) && tooSmall(size, vcpus, memoryMiB)) {
    return {
      ok: true,
      type: input.defaultType,
      reason: 'default',
      warning: `default ${noun} ${describeType(input.defaultType, table)} is smaller than the ${needs(vcpus, memoryMiB)} the containers ask for`,
    };
  }
  return { ok: true, type: input.defaultType, reason: 'default' };
}
