/**
 * Peer pods' Azure credentials from the Cloud Credential Operator (docs/cloud-credentials.md). On Azure the
 * operator no longer mints: in its default and Passthrough modes it copies the cluster's own service
 * principal (kube-system/azure-credentials) into the requested Secret; in Manual mode ccoctl makes a
 * user-assigned managed identity with the request's permissions and a federated credential trusting the
 * pods' ServiceAccounts, and writes a Secret naming it and the token file (workload identity).
 */
import { AZURE_ROOT_SECRET, STS_TOKEN_PATH } from '../../../api/cloudcredential.ts';
import { collectorRequestName, credentialsRequestName } from '../../../api/credentials-text.ts';
import { fromSecret, mountablePath, projectedToken } from '../issued.ts';
import type { CloudIssuedCredentials } from '../provider.ts';
import { UUID_RE } from './facts.ts';

/**
 * The Azure permissions peer pods need, by who needs them (docs/cloud-credentials.md says why each), as a
 * custom role rather than built-in roles (the product's request binds Reader, Virtual Machine Contributor
 * and Network Contributor, which grant far more). ccoctl makes the custom role in Manual mode.
 */
export const PEER_PODS_AZURE_PERMISSIONS = {
  /** The adaptor: the sizes at start-up, then a VM per peer pod with its NIC and OS disk, in the subnet and NSG; deleted with the pod. */
  adaptor: [
    'Microsoft.Compute/locations/vmSizes/read',
    'Microsoft.Compute/galleries/images/versions/read',
    'Microsoft.Compute/virtualMachines/read',
    'Microsoft.Compute/virtualMachines/write',
    'Microsoft.Compute/virtualMachines/delete',
    'Microsoft.Compute/disks/read',
    'Microsoft.Compute/disks/write',
    'Microsoft.Compute/disks/delete',
    'Microsoft.Network/networkInterfaces/read',
    'Microsoft.Network/networkInterfaces/write',
    'Microsoft.Network/networkInterfaces/delete',
    'Microsoft.Network/networkInterfaces/join/action',
    'Microsoft.Network/virtualNetworks/subnets/join/action',
    'Microsoft.Network/networkSecurityGroups/join/action',
  ],
  /** The adaptor with USE_PUBLIC_IP: a public address per pod VM. */
  publicIP: [
    'Microsoft.Network/publicIPAddresses/read',
    'Microsoft.Network/publicIPAddresses/write',
    'Microsoft.Network/publicIPAddresses/delete',
    'Microsoft.Network/publicIPAddresses/join/action',
  ],
  /** The image creation job: the gallery and image definition, a storage account for the VHD, the image version. */
  imageCreation: [
    'Microsoft.Compute/galleries/read',
    'Microsoft.Compute/galleries/write',
    'Microsoft.Compute/galleries/images/read',
    'Microsoft.Compute/galleries/images/write',
    'Microsoft.Compute/galleries/images/versions/write',
    'Microsoft.Storage/storageAccounts/read',
    'Microsoft.Storage/storageAccounts/write',
    'Microsoft.Storage/storageAccounts/delete',
    'Microsoft.Storage/storageAccounts/listKeys/action',
  ],
  /** The image deletion job. */
  imageDeletion: ['Microsoft.Compute/galleries/images/versions/delete'],
} as const;

/** The leaked pod VM collector's own identity (Manual mode): read the resource group's VMs, delete a leaked one. */
export const COLLECTOR_AZURE_PERMISSIONS = ['Microsoft.Compute/virtualMachines/read', 'Microsoft.Compute/virtualMachines/delete'] as const;

/** Every permission of the request, once. */
export const peerPodsAzurePermissions = (): string[] => [...new Set(Object.values(PEER_PODS_AZURE_PERMISSIONS).flat())].sort();

/** Where a workload identity's token is mounted when the Secret does not say (ccoctl's and the CCO's default). */
export const AZURE_TOKEN_PATH = STS_TOKEN_PATH;

export const azureIssued: CloudIssuedCredentials = {
  requestName: credentialsRequestName('azure'),
  providerSpec: () => ({
    apiVersion: 'cloudcredential.openshift.io/v1',
    kind: 'AzureProviderSpec',
    roleBindings: [],
    permissions: peerPodsAzurePermissions(),
  }),
  rootSecret: AZURE_ROOT_SECRET,
  collector: {
    requestName: collectorRequestName('azure'),
    providerSpec: () => ({
      apiVersion: 'cloudcredential.openshift.io/v1',
      kind: 'AzureProviderSpec',
      roleBindings: [],
      permissions: [...COLLECTOR_AZURE_PERMISSIONS],
    }),
    actions: COLLECTOR_AZURE_PERMISSIONS,
  },
  ccoctl: 'ccoctl azure create-managed-identities',
  formsInWords:
    'azure_client_id, azure_client_secret and azure_tenant_id (a service principal) nor azure_client_id, azure_tenant_id and azure_federated_token_file (a workload identity)',
  form(read) {
    const id = read('azure_client_id');
    const tenant = read('azure_tenant_id');
    const token = read('azure_federated_token_file');
    const secret = read('azure_client_secret');
    if (!id || !tenant || (!token && !secret)) return undefined;
    for (const [key, v] of [
      ['azure_client_id', id],
      ['azure_tenant_id', tenant],
    ] as const) {
      if (!UUID_RE.test(v.trim()))
        return {
          kind: 'unusable',
          why: `${key} is not a UUID; rerun ccoctl, or delete the Secret so that the Cloud Credential Operator writes it again`,
        };
    }
    if (secret) return { kind: 'minted' };
    if (!mountablePath(token ?? ''))
      return { kind: 'unusable', why: `azure_federated_token_file ${JSON.stringify(token)} is not an absolute file path; rerun ccoctl` };
    return { kind: 'sts', tokenPath: token ?? AZURE_TOKEN_PATH };
  },
  // A service principal: its three values by name. A workload identity: no secret, so that the adaptor's SDK
  // takes the federated token (its client ID, tenant and token file) instead.
  wiring(form, secret) {
    const ids = [fromSecret('AZURE_CLIENT_ID', secret, 'azure_client_id'), fromSecret('AZURE_TENANT_ID', secret, 'azure_tenant_id')];
    if (form.kind === 'minted') {
      return {
        envFrom: [],
        env: [...ids, fromSecret('AZURE_CLIENT_SECRET', secret, 'azure_client_secret')],
        volumes: [],
        volumeMounts: [],
      };
    }
    const path = form.tokenPath ?? AZURE_TOKEN_PATH;
    return { envFrom: [], env: [...ids, { name: 'AZURE_FEDERATED_TOKEN_FILE', value: path }], ...projectedToken(path) };
  },
  adaptorKeys: (form) =>
    form.kind === 'minted'
      ? ['AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET']
      : ['AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_FEDERATED_TOKEN_FILE'],
  adaptorValues(form, read) {
    const ids = { AZURE_CLIENT_ID: read('azure_client_id')?.trim() ?? '', AZURE_TENANT_ID: read('azure_tenant_id')?.trim() ?? '' };
    if (form.kind === 'minted') return { ...ids, AZURE_CLIENT_SECRET: read('azure_client_secret') ?? '' };
    return { ...ids, AZURE_FEDERATED_TOKEN_FILE: form.tokenPath ?? AZURE_TOKEN_PATH };
  },
  modeProblem: (mode) =>
    mode === 'Mint'
      ? "the Cloud Credential Operator has no Mint mode on Azure: set spec.credentialsMode of CloudCredential cluster to '' or Passthrough (it then hands out the cluster's service principal), or use Manual mode with a workload identity"
      : undefined,
};
