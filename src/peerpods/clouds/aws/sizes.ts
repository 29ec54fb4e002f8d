/**
 * AWS instance types: vCPUs and memory as AWS documents them, for the pod VM best fit. Memory first is the
 * cost proxy on AWS (c5.xlarge 4/8 GiB < m5.xlarge 4/16 GiB < r5.xlarge 4/32 GiB).
 */
import type { InstanceTable } from '../provider.ts';

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

/** Instance type name → vCPUs and memory (MiB), as AWS documents them. */
export const AWS_INSTANCE_TYPES: Readonly<InstanceTable> = Object.freeze(buildTable());
