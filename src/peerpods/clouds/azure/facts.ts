/**
 * Facts about Azure that peer-pods-cm is checked against: the public cloud's region names, the shapes of
 * resource IDs, and the VM sizes (vCPUs, memory) the pod VM best fit chooses from.
 */
import type { InstanceTable } from '../provider.ts';

/** Azure public cloud regions, as `az account list-locations --query '[].name'` names them. */
export const AZURE_REGIONS: readonly string[] = [
  'eastus',
  'eastus2',
  'southcentralus',
  'westus2',
  'westus3',
  'australiaeast',
  'southeastasia',
  'northeurope',
  'swedencentral',
  'uksouth',
  'westeurope',
  'centralus',
  'southafricanorth',
  'centralindia',
  'eastasia',
  'japaneast',
  'koreacentral',
  'canadacentral',
  'francecentral',
  'germanywestcentral',
  'italynorth',
  'norwayeast',
  'polandcentral',
  'spaincentral',
  'switzerlandnorth',
  'mexicocentral',
  'uaenorth',
  'brazilsouth',
  'israelcentral',
  'qatarcentral',
  'northcentralus',
  'westus',
  'westcentralus',
  'australiacentral',
  'australiacentral2',
  'australiasoutheast',
  'japanwest',
  'koreasouth',
  'southindia',
  'westindia',
  'jioindiawest',
  'jioindiacentral',
  'canadaeast',
  'francesouth',
  'germanynorth',
  'norwaywest',
  'switzerlandwest',
  'ukwest',
  'uaecentral',
  'brazilsoutheast',
  'southafricawest',
  'swedensouth',
  'newzealandnorth',
  'indonesiacentral',
  'malaysiawest',
  'chilecentral',
  'centraluseuap',
  'eastus2euap',
];

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A resource group name: 1 to 90 letters, digits, `_`, `-`, `.`, `(`, `)`, not ending with a period. */
export const RESOURCE_GROUP_RE = /^[-\w.()]{0,89}[-\w()]$/;
const NAME = '[-\\w.]{1,80}';
const SUB = '/subscriptions/([0-9a-fA-F-]{36})/resourceGroups/([-\\w.()]{1,90})/providers';

/** `/subscriptions/<uuid>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>` */
export const SUBNET_ID_RE = new RegExp(`^${SUB}/Microsoft\\.Network/virtualNetworks/(${NAME})/subnets/(${NAME})$`, 'i');
/** `/subscriptions/<uuid>/resourceGroups/<rg>/providers/Microsoft.Network/networkSecurityGroups/<nsg>` */
export const NSG_ID_RE = new RegExp(`^${SUB}/Microsoft\\.Network/networkSecurityGroups/(${NAME})$`, 'i');
/**
 * A pod VM image: a managed image, an image version in a compute gallery (what the image job makes), or a
 * community gallery's image version.
 */
export const IMAGE_ID_RES: readonly RegExp[] = [
  new RegExp(`^${SUB}/Microsoft\\.Compute/images/(${NAME})$`, 'i'),
  new RegExp(`^${SUB}/Microsoft\\.Compute/galleries/(${NAME})/images/(${NAME})/versions/(\\d+\\.\\d+\\.\\d+)$`, 'i'),
  new RegExp(`^/CommunityGalleries/(${NAME})/Images/(${NAME})/Versions/(\\d+\\.\\d+\\.\\d+|latest)$`, 'i'),
];

/** The subscription a resource ID lives in (lower case), if it names one. */
export function subscriptionOf(resourceId: string): string | undefined {
  return /^\/subscriptions\/([0-9a-fA-F-]{36})\//.exec(resourceId)?.[1]?.toLowerCase();
}

const GiB = 1024;

/** Adds `Standard_<prefix><n><suffix>` rows with `memPerVcpuGiB` GiB per vCPU. */
function series(t: InstanceTable, prefix: string, suffix: string, vcpus: number[], memPerVcpuGiB: number): void {
  for (const n of vcpus) t[`Standard_${prefix}${n}${suffix}`] = { vcpus: n, memoryMiB: n * memPerVcpuGiB * GiB };
}

function buildSizes(): InstanceTable {
  const t: InstanceTable = {};
  // B-series v2 (burstable): the docs' default pod VM size, Standard_B2als_v2, is the smallest.
  series(t, 'B', 'als_v2', [2, 4, 8, 16, 32], 2);
  series(t, 'B', 'as_v2', [2, 4, 8, 16, 32], 4);
  series(t, 'B', 's_v2', [2, 4, 8, 16, 32], 4);
  // General purpose, 4 GiB per vCPU (the docs' Standard_D2as_v5, D4as_v5, D2ads_v5).
  const d = [2, 4, 8, 16, 32, 48, 64, 96];
  for (const s of ['as_v5', 'ads_v5', 's_v5', 'ds_v5', 'as_v6', 's_v6']) series(t, 'D', s, d, 4);
  // Confidential (AMD SEV-SNP, Intel TDX): the adaptor's own default is Standard_DC2as_v5.
  for (const s of ['as_v5', 'ads_v5', 'es_v5', 'eds_v5']) series(t, 'DC', s, d, 4);
  for (const s of ['as_v5', 'ads_v5', 'es_v5']) series(t, 'EC', s, [2, 4, 8, 16, 20, 32, 48, 64], 8);
  // Memory optimised, 8 GiB per vCPU; compute optimised, 2 GiB per vCPU.
  for (const s of ['as_v5', 'ads_v5', 's_v5']) series(t, 'E', s, [2, 4, 8, 16, 20, 32, 48, 64, 96], 8);
  series(t, 'F', 's_v2', [2, 4, 8, 16, 32, 48, 64, 72], 2);
  // GPU: one H100 per confidential VM.
  t.Standard_NCC40ads_H100_v5 = { vcpus: 40, memoryMiB: 320 * GiB };
  return t;
}

/** VM size name → vCPUs and memory (MiB), as Azure documents them. */
export const AZURE_VM_SIZES: Readonly<InstanceTable> = Object.freeze(buildSizes());
