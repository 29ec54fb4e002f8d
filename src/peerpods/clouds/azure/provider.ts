/**
 * Peer pods on Microsoft Azure: the keys of peer-pods-cm as the cloud-api-adaptor reads them (subscription,
 * region, resource group, subnet and network security group by resource ID), the service principal in
 * peer-pods-secret, Azure VM sizes and the image the image job puts in a compute gallery.
 */
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from '../../../api/names.ts';
import { CLUSTER_UID_TAG } from '../../../api/podvm-leaks.ts';
import { q } from '../../config-values.ts';
import { closestName } from '../../policy.ts';
import type { CloudProvider } from '../provider.ts';
import { azureIssued } from './credentials.ts';
import {
  AZURE_REGIONS,
  AZURE_VM_SIZES,
  IMAGE_ID_RES,
  NSG_ID_RE,
  RESOURCE_GROUP_RE,
  SUBNET_ID_RE,
  subscriptionOf,
  UUID_RE,
} from './facts.ts';

export interface AzureSettings {
  /** AZURE_IMAGE_ID; '' means the operator must build the pod VM image. */
  imageId: string;
  subscriptionId: string;
  region: string;
  resourceGroup: string;
  subnetId: string;
  nsgId: string;
}

const RG_LOOKUP = "oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.azure.resourceGroupName}'";
const HOW_TO_FIND = {
  AZURE_SUBSCRIPTION_ID: `the subscription's ID (az account list --query "[?isDefault].id" -o tsv)`,
  AZURE_REGION: `the resource group's region (az group show --resource-group <resource group> --query location -o tsv)`,
  AZURE_RESOURCE_GROUP: `the cluster's resource group (${RG_LOOKUP})`,
  AZURE_SUBNET_ID:
    "the workers' subnet ID (az network vnet subnet list --resource-group <resource group> --vnet-name <vnet> --query \"[].{Id:id} | [? contains(Id, 'worker')]\" -o tsv)",
  AZURE_NSG_ID: 'the network security group ID (az network nsg list --resource-group <resource group> --query "[].{Id:id}" -o tsv)',
};

const SUBNET_SHAPE =
  '/subscriptions/<subscription id>/resourceGroups/<resource group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>';
const NSG_SHAPE =
  '/subscriptions/<subscription id>/resourceGroups/<resource group>/providers/Microsoft.Network/networkSecurityGroups/<nsg>';

export const AZURE_CM_KEYS = [
  'CLOUD_PROVIDER',
  'VXLAN_PORT',
  'AZURE_INSTANCE_SIZES',
  'AZURE_INSTANCE_SIZE',
  'AZURE_RESOURCE_GROUP',
  'AZURE_REGION',
  'AZURE_SUBNET_ID',
  'AZURE_NSG_ID',
  'PROXY_TIMEOUT',
  'AZURE_IMAGE_ID',
  'AZURE_SUBSCRIPTION_ID',
  'DISABLECVM',
  'PEERPODS_LIMIT_PER_NODE',
  'TAGS',
  'ROOT_VOLUME_SIZE',
] as const;

export const azure: CloudProvider<AzureSettings> = {
  name: 'azure',
  title: 'Azure',
  infrastructureType: 'Azure',
  cmKeys: AZURE_CM_KEYS,
  otherCmKeys: ['USE_PUBLIC_IP', 'ENABLE_SECURE_BOOT', 'AZURE_ZONE', 'SSH_USERNAME', 'DISABLE_CLOUD_CONFIG', 'CLOUD_CONFIG_VERIFY'],
  listKeys: ['AZURE_INSTANCE_SIZES'],
  requiredInWords: 'CLOUD_PROVIDER, AZURE_SUBSCRIPTION_ID, AZURE_REGION, AZURE_RESOURCE_GROUP, AZURE_SUBNET_ID and AZURE_NSG_ID',
  sizes: {
    defaultKey: 'AZURE_INSTANCE_SIZE',
    listKey: 'AZURE_INSTANCE_SIZES',
    // The docs' default for (non-confidential) peer pods.
    defaultSize: 'Standard_B2als_v2',
    noun: 'VM size',
    short: 'size',
    pattern: /^(Standard|Basic)_[A-Z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$/,
    shape: 'an Azure VM size name (like Standard_D2as_v5)',
    listExample: 'Standard_B2als_v2,Standard_D2as_v5,Standard_D4as_v5',
    // The adaptor refuses a default size outside AZURE_INSTANCE_SIZES.
    defaultOutsideList: 'problem',
    table: AZURE_VM_SIZES,
    warnUnknown: true,
  },
  image: {
    key: 'AZURE_IMAGE_ID',
    deletionEnv: 'IMAGE_ID',
    // The image is a version of this definition in this compute gallery of AZURE_RESOURCE_GROUP.
    creationEnv: { IMAGE_GALLERY_NAME: 'podvm_gallery', IMAGE_DEFINITION_NAME: 'podvm_image' },
    what: 'image ID',
    noun: 'image',
    check: (v) =>
      IMAGE_ID_RES.some((re) => re.test(v))
        ? undefined
        : 'it is not an Azure image resource ID (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Compute/galleries/<gallery>/images/<image>/versions/<version>, or a managed or community gallery image)',
    example:
      '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/example/providers/Microsoft.Compute/galleries/podvm/images/podvm/versions/0.0.1',
  },
  secret: {
    required: ['AZURE_CLIENT_ID', 'AZURE_CLIENT_SECRET', 'AZURE_TENANT_ID'],
    optional: [],
    describe: (key) =>
      key === 'AZURE_CLIENT_SECRET'
        ? "the service principal's client secret (password)"
        : `the service principal's ${key === 'AZURE_CLIENT_ID' ? 'application (client) ID' : 'tenant ID'}`,
    createCommand:
      `oc create secret generic ${PEER_PODS_SECRET} -n ${OPERATOR_NAMESPACE} ` +
      '--from-literal AZURE_CLIENT_ID=<client id> --from-literal AZURE_CLIENT_SECRET=<client secret> --from-literal AZURE_TENANT_ID=<tenant id>',
    checkValue: (key, value) =>
      key !== 'AZURE_CLIENT_SECRET' && !UUID_RE.test(value)
        ? `is not a UUID (like 00000000-0000-0000-0000-000000000000); store the ${key === 'AZURE_CLIENT_ID' ? 'appId' : 'tenant'} that az ad sp create-for-rbac printed`
        : undefined,
  },
  credentials: azureIssued,
  tags: {
    // Azure allows 50 tags per resource; osc adds the cluster's tag.
    max: 49,
    besides: CLUSTER_UID_TAG,
    clusterTag: true,
    maxValue: 256,
    checkKey(k) {
      if (k === CLUSTER_UID_TAG) return `the key ${CLUSTER_UID_TAG} is set by the operator (the cluster's UID)`;
      if (k.length > 512) return `the key ${q(k)} is longer than 512 characters`;
      if (/[<>%&\\?/]/.test(k)) return `the key ${q(k)} holds one of < > % & \\ ? /, which Azure does not allow in tag names`;
      return undefined;
    },
  },
  maxRootVolumeGB: 32767,
  maxRootVolumeWhat: 'the largest Azure managed disk',

  validate(ctx) {
    const subscriptionId = ctx.required('AZURE_SUBSCRIPTION_ID', HOW_TO_FIND.AZURE_SUBSCRIPTION_ID, (v) =>
      UUID_RE.test(v) ? undefined : `it is not a subscription ID (a UUID); set it to ${HOW_TO_FIND.AZURE_SUBSCRIPTION_ID}`,
    );
    const region = ctx.required('AZURE_REGION', HOW_TO_FIND.AZURE_REGION, (v) => {
      if (AZURE_REGIONS.includes(v)) return undefined;
      const lower = v.toLowerCase().replace(/\s+/g, '');
      if (AZURE_REGIONS.includes(lower)) return `Azure region names are lower case without spaces; set it to "${lower}"`;
      const guess = closestName(v, AZURE_REGIONS, 3);
      return `it is not an Azure region${guess ? ` (did you mean "${guess}"?)` : ''}; set it to ${HOW_TO_FIND.AZURE_REGION}`;
    });
    const resourceGroup = ctx.required('AZURE_RESOURCE_GROUP', HOW_TO_FIND.AZURE_RESOURCE_GROUP, (v) =>
      RESOURCE_GROUP_RE.test(v)
        ? undefined
        : `it is not a resource group name (up to 90 letters, digits, _ - . ( ), not ending with a period); set it to ${HOW_TO_FIND.AZURE_RESOURCE_GROUP}`,
    );
    const subnetId = ctx.required('AZURE_SUBNET_ID', HOW_TO_FIND.AZURE_SUBNET_ID, (v) =>
      SUBNET_ID_RE.test(v)
        ? undefined
        : NSG_ID_RE.test(v)
          ? `it is a network security group's ID, not a subnet's; set it to ${HOW_TO_FIND.AZURE_SUBNET_ID}`
          : `it is not a subnet resource ID (${SUBNET_SHAPE}); set it to ${HOW_TO_FIND.AZURE_SUBNET_ID}`,
    );
    const nsgId = ctx.required('AZURE_NSG_ID', HOW_TO_FIND.AZURE_NSG_ID, (v) =>
      NSG_ID_RE.test(v)
        ? undefined
        : SUBNET_ID_RE.test(v)
          ? `it is a subnet's ID, not a network security group's; set it to ${HOW_TO_FIND.AZURE_NSG_ID}`
          : `it is not a network security group resource ID (${NSG_SHAPE}); set it to ${HOW_TO_FIND.AZURE_NSG_ID}`,
    );
    if (subscriptionId) {
      for (const [key, id] of [
        ['AZURE_SUBNET_ID', subnetId],
        ['AZURE_NSG_ID', nsgId],
      ] as const) {
        const sub = id && subscriptionOf(id);
        if (sub && sub !== subscriptionId.toLowerCase()) {
          ctx.warnings.push({
            key,
            message: `${key} is in subscription ${sub}, not AZURE_SUBSCRIPTION_ID ${subscriptionId}; the service principal needs access to both`,
          });
        }
      }
    }
    if (!subscriptionId || !region || !resourceGroup || !subnetId || !nsgId) return undefined;
    return { imageId: ctx.value('AZURE_IMAGE_ID') ?? '', subscriptionId, region, resourceGroup, subnetId, nsgId };
  },
};
