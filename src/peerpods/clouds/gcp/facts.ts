/**
 * Facts about Google Cloud that peer-pods-cm is checked against: regions and zones, the shapes of project,
 * network and image names, the machine types (vCPUs, memory) the pod VM best fit chooses from, and the
 * shape of a service account key.
 */
import type { InstanceTable } from '../provider.ts';

/** Compute Engine regions; a zone is a region and a letter (us-central1-a). */
export const GCP_REGIONS: readonly string[] = [
  'us-central1',
  'us-east1',
  'us-east4',
  'us-east5',
  'us-south1',
  'us-west1',
  'us-west2',
  'us-west3',
  'us-west4',
  'northamerica-northeast1',
  'northamerica-northeast2',
  'northamerica-south1',
  'southamerica-east1',
  'southamerica-west1',
  'europe-central2',
  'europe-north1',
  'europe-north2',
  'europe-southwest1',
  'europe-west1',
  'europe-west2',
  'europe-west3',
  'europe-west4',
  'europe-west6',
  'europe-west8',
  'europe-west9',
  'europe-west10',
  'europe-west12',
  'me-central1',
  'me-central2',
  'me-west1',
  'africa-south1',
  'asia-east1',
  'asia-east2',
  'asia-northeast1',
  'asia-northeast2',
  'asia-northeast3',
  'asia-south1',
  'asia-south2',
  'asia-southeast1',
  'asia-southeast2',
  'australia-southeast1',
  'australia-southeast2',
];

export const ZONE_RE = /^([a-z]+-[a-z]+\d+)-([a-z])$/;
/** 6 to 30 lower-case letters, digits and hyphens, starting with a letter, not ending with a hyphen. */
export const PROJECT_ID_RE = /^[a-z][-a-z0-9]{4,28}[a-z0-9]$/;
/** A Compute Engine resource name (RFC 1035 label). */
export const RESOURCE_NAME_RE = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A network: its name, `global/networks/<name>` or `projects/<project>/global/networks/<name>`. */
export const NETWORK_RE = /^((projects\/[a-z][-a-z0-9]{4,28}[a-z0-9]\/)?global\/networks\/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** An image: its name, or `projects/<project>/global/images/<name>`. */
export const IMAGE_RE = /^(projects\/[a-z][-a-z0-9]{4,28}[a-z0-9]\/global\/images\/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const DISK_TYPES: readonly string[] = ['pd-standard', 'pd-balanced', 'pd-ssd', 'pd-extreme', 'hyperdisk-balanced'];

const GiB = 1024;

function series(t: InstanceTable, prefix: string, vcpus: number[], memPerVcpuGiB: number): void {
  for (const n of vcpus) t[`${prefix}-${n}`] = { vcpus: n, memoryMiB: Math.round(n * memPerVcpuGiB * GiB) };
}

function buildMachineTypes(): InstanceTable {
  // E2 shared-core: the adaptor's default pod VM, e2-medium, is 2 vCPUs and 4 GiB.
  const t: InstanceTable = {
    'e2-micro': { vcpus: 2, memoryMiB: 1 * GiB },
    'e2-small': { vcpus: 2, memoryMiB: 2 * GiB },
    'e2-medium': { vcpus: 2, memoryMiB: 4 * GiB },
  };
  const e2 = [2, 4, 8, 16, 32];
  series(t, 'e2-standard', e2, 4);
  series(t, 'e2-highmem', [2, 4, 8, 16], 8);
  series(t, 'e2-highcpu', e2, 1);
  const n2 = [2, 4, 8, 16, 32, 48, 64, 80, 96, 128];
  series(t, 'n2-standard', n2, 4);
  series(t, 'n2-highmem', n2, 8);
  series(t, 'n2-highcpu', n2, 1);
  // N2D (AMD): also the confidential (SEV, SEV-SNP) machine types.
  const n2d = [2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224];
  series(t, 'n2d-standard', n2d, 4);
  series(t, 'n2d-highmem', n2d.slice(0, 10), 8);
  series(t, 'n2d-highcpu', n2d, 1);
  series(t, 'n1-standard', [1, 2, 4, 8, 16, 32, 64, 96], 3.75);
  series(t, 'c2d-standard', [2, 4, 8, 16, 32, 56, 112], 4);
  series(t, 'c3-standard', [4, 8, 22, 44, 88, 176], 4);
  // One H100 per VM.
  t['a3-highgpu-1g'] = { vcpus: 26, memoryMiB: 234 * GiB };
  return t;
}

/** Machine type → vCPUs and memory (MiB), as Google Cloud documents them. */
export const GCP_MACHINE_TYPES: Readonly<InstanceTable> = Object.freeze(buildMachineTypes());

/** The fields of a service account key (`gcloud iam service-accounts keys create`) the adaptor needs. */
export const SERVICE_ACCOUNT_FIELDS = [
  'type',
  'project_id',
  'private_key_id',
  'private_key',
  'client_email',
  'client_id',
  'token_uri',
] as const;

/** Why `text` is not a service account key, ending with the fix; undefined when it is one. */
export function checkServiceAccountKey(text: string): string | undefined {
  const fix = 'store the key file of the service account (gcloud iam service-accounts keys create key.json --iam-account=<account>)';
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return `is not JSON; ${fix}`;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return `is JSON but not an object; ${fix}`;
  const key = doc as Record<string, unknown>;
  if (key.type !== 'service_account') {
    return `has type ${JSON.stringify(key.type ?? null)}, not "service_account" (is it a user's application default credentials?); ${fix}`;
  }
  const missing = SERVICE_ACCOUNT_FIELDS.filter((f) => typeof key[f] !== 'string' || key[f] === '');
  if (missing.length > 0) return `lacks ${missing.join(', ')}; ${fix}`;
  if (!String(key.private_key).includes('-----BEGIN PRIVATE KEY-----')) return `has a private_key that is not a PEM private key; ${fix}`;
  if (!/^[^@\s]+@[-a-z0-9]+\.iam\.gserviceaccount\.com$/.test(String(key.client_email))) {
    return `has a client_email that is not a service account (<name>@<project>.iam.gserviceaccount.com); ${fix}`;
  }
  return undefined;
}
