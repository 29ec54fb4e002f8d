/**
 * AWS instance sizes and the pod VM instance type choice (docs/peerpods.md, "Pods at admission").
 *
 * The choice, in order:
 *   1. the pod names a type (`io.katacontainers.config.hypervisor.machine_type`): it must be allowed;
 *   2. else, when both the pod's vCPUs and memory are known: the smallest allowed type that fits both;
 *   3. else the default type (`PODVM_INSTANCE_TYPE`).
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

export interface InstanceSize {
  vcpus: number;
  memoryMiB: number;
}

export type InstanceTable = Record<string, InstanceSize>;

const GiB = 1024;

/** Adds `<family>.<size>` rows with `memPerVcpu` GiB per vCPU. */
function family(table: InstanceTable, name: string, sizes: Record<string, number>, memPerVcpuGiB: number): void {
  for (const [size, vcpus] of Object.entries(sizes)) table[`${name}.${size}`] = { vcpus, memoryMiB: vcpus * memPerVcpuGiB * GiB };
}

const STANDARD = { large: 2, xlarge: 4, '2xlarge': 8, '4xlarge': 16, '8xlarge': 32, '12xlarge': 48, '16xlarge': 64, '24xlarge': 96 };
const STANDARD32 = { ...STANDARD, '32xlarge': 128 };
const STANDARD48 = { ...STANDARD32, '48xlarge': 192 };

function buildTable(): InstanceTable {
  const t: InstanceTable = {
    // Burstable: t2 (the documentation's t2.small, t2.medium), t3/t3a (its t3.medium, t3.large).
    't2.nano': { vcpus: 1, memoryMiB: 512 },
    't2.micro': { vcpus: 1, memoryMiB: 1 * GiB },
    't2.small': { vcpus: 1, memoryMiB: 2 * GiB },
    't2.medium': { vcpus: 2, memoryMiB: 4 * GiB },
    't2.large': { vcpus: 2, memoryMiB: 8 * GiB },
    't2.xlarge': { vcpus: 4, memoryMiB: 16 * GiB },
    't2.2xlarge': { vcpus: 8, memoryMiB: 32 * GiB },
  };
  for (const f of ['t3', 't3a']) {
    t[`${f}.nano`] = { vcpus: 2, memoryMiB: 512 };
    t[`${f}.micro`] = { vcpus: 2, memoryMiB: 1 * GiB };
    t[`${f}.small`] = { vcpus: 2, memoryMiB: 2 * GiB };
    t[`${f}.medium`] = { vcpus: 2, memoryMiB: 4 * GiB };
    t[`${f}.large`] = { vcpus: 2, memoryMiB: 8 * GiB };
    t[`${f}.xlarge`] = { vcpus: 4, memoryMiB: 16 * GiB };
    t[`${f}.2xlarge`] = { vcpus: 8, memoryMiB: 32 * GiB };
  }
  // General purpose, 4 GiB per vCPU (m6a.large is the cloud-api-adaptor's own default type).
  family(t, 'm5', STANDARD, 4);
  family(t, 'm5a', STANDARD, 4);
  family(t, 'm6i', STANDARD32, 4);
  family(t, 'm6a', STANDARD48, 4);
  family(t, 'm7i', STANDARD48, 4);
  // Compute optimised, 2 GiB per vCPU (c5 has its own sizes).
  family(t, 'c5', { large: 2, xlarge: 4, '2xlarge': 8, '4xlarge': 16, '9xlarge': 36, '12xlarge': 48, '18xlarge': 72, '24xlarge': 96 }, 2);
  family(t, 'c6i', STANDARD32, 2);
  family(t, 'c6a', STANDARD48, 2);
  // Memory optimised, 8 GiB per vCPU.
  family(t, 'r5', STANDARD, 8);
  family(t, 'r6i', STANDARD32, 8);
  family(t, 'r6a', STANDARD48, 8);
  return t;
}

/** The built-in table: instance type name → vCPUs and memory (MiB), as AWS documents them. */
export const AWS_INSTANCE_TYPES: Readonly<InstanceTable> = Object.freeze(buildTable());

/** The built-in table with `extra` rows added or overriding built-in ones. */
export function instanceTable(extra?: InstanceTable): InstanceTable {
  return { ...AWS_INSTANCE_TYPES, ...(extra ?? {}) };
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
  /** Extra or overriding sizes, on top of the built-in table. */
  table?: InstanceTable;
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
  const table = instanceTable(input.table);
  const allowed = effectiveAllowedTypes(input.allowed, input.defaultType);
  const { vcpus, memoryMiB } = input;
  const list = allowed.join(', ');

  if (input.requestedType !== undefined && input.requestedType !== '') {
    const requested = input.requestedType;
    if (!allowed.includes(requested)) {
      return {
        ok: false,
        message:
          `instance type ${JSON.stringify(requested)} (annotation io.katacontainers.config.hypervisor.machine_type) is not allowed: ` +
          `the allowed types are ${list}; use one of them, or ask the administrator to add it to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm`,
      };
    }
    const size = table[requested];
    if (size && (vcpus || memoryMiB) && tooSmall(size, vcpus, memoryMiB)) {
      return {
        ok: true,
        type: requested,
        reason: 'requested',
        warning: `instance type ${describeType(requested, table)} is smaller than the ${needs(vcpus, memoryMiB)} the containers ask for`,
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
        warning: `no allowed instance type of known size has ${needs(vcpus, memoryMiB)}; the cloud-api-adaptor will choose among ${unknown.join(', ')}`,
      };
    }
    return {
      ok: false,
      message:
        `the pod needs ${needs(vcpus, memoryMiB)}, more than any allowed instance type offers: ` +
        `${allowed.map((t) => describeType(t, table)).join(', ')}; lower the containers' CPU/memory limits, ` +
        `or ask the administrator to add a larger type to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm`,
    };
  }

  const size = table[input.defaultType];
  if (size && (vcpus || memoryMiB) && tooSmall(size, vcpus, memoryMiB)) {
    return {
      ok: true,
      type: input.defaultType,
      reason: 'default',
      warning: `default instance type ${describeType(input.defaultType, table)} is smaller than the ${needs(vcpus, memoryMiB)} the containers ask for`,
    };
  }
  return { ok: true, type: input.defaultType, reason: 'default' };
}
