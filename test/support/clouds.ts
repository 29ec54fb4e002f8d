/**
 * Documented peer-pods-cm and peer-pods-secret contents for Azure and Google Cloud, with the values the
 * procedures look up filled in: the good rows the bad-input tables change one key of.
 */
export const AZURE_SUBSCRIPTION = '5d2a1c3e-8b7f-4e21-9a6c-0f1e2d3c4b5a';
const RG_PATH = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/osc-dev-abcde-rg/providers`;
export const AZURE_SUBNET_ID = `${RG_PATH}/Microsoft.Network/virtualNetworks/osc-dev-abcde-vnet/subnets/osc-dev-abcde-worker-subnet`;
export const AZURE_NSG_ID = `${RG_PATH}/Microsoft.Network/networkSecurityGroups/osc-dev-abcde-nsg`;

export const azureData = (): Record<string, string> => ({
  CLOUD_PROVIDER: 'azure',
  VXLAN_PORT: '9000',
  AZURE_INSTANCE_SIZES: 'Standard_B2als_v2,Standard_D2as_v5,Standard_D4as_v5,Standard_D2ads_v5',
  AZURE_INSTANCE_SIZE: 'Standard_B2als_v2',
  AZURE_RESOURCE_GROUP: 'osc-dev-abcde-rg',
  AZURE_REGION: 'eastus',
  AZURE_SUBNET_ID,
  AZURE_NSG_ID,
  PROXY_TIMEOUT: '5m',
  AZURE_IMAGE_ID: '',
  AZURE_SUBSCRIPTION_ID: AZURE_SUBSCRIPTION,
  DISABLECVM: 'true',
  PEERPODS_LIMIT_PER_NODE: '10',
  TAGS: 'key1=value1,key2=value2',
  ROOT_VOLUME_SIZE: '6',
});

export const AZURE_CLIENT_SECRET = 'osc~TestClientSecret.DoNotLeak-0123456';
export const azureSecret = (): Record<string, string> => ({
  AZURE_CLIENT_ID: '0f1e2d3c-4b5a-4697-8877-665544332211',
  AZURE_CLIENT_SECRET,
  AZURE_TENANT_ID: '11223344-5566-4778-899a-abbccddeeff0',
});

export const GCP_PROJECT = 'osc-dev-project';
export const GCP_PRIVATE_KEY = '-----BEGIN PRIVATE KEY-----\nMIIEosc-test-key-do-not-leak\n-----END PRIVATE KEY-----\n';

/** A service account key file as `gcloud iam service-accounts keys create` writes it. */
export const gcpKey = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'service_account',
  project_id: GCP_PROJECT,
  private_key_id: '0123456789abcdef0123456789abcdef01234567',
  private_key: GCP_PRIVATE_KEY,
  client_email: `peerpods@${GCP_PROJECT}.iam.gserviceaccount.com`,
  client_id: '112233445566778899001',
  auth_uri: 'https://accounts.google.com/o/oauth2/auth',
  token_uri: 'https://oauth2.googleapis.com/token',
  ...over,
});
export const gcpKeyFile = (over: Record<string, unknown> = {}) => `${JSON.stringify(gcpKey(over), null, 2)}\n`;

export const gcpData = (): Record<string, string> => ({
  CLOUD_PROVIDER: 'gcp',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  GCP_PROJECT_ID: GCP_PROJECT,
  GCP_ZONE: 'us-central1-a',
  GCP_NETWORK: 'global/networks/default',
  GCP_MACHINE_TYPE: 'e2-medium',
  PODVM_IMAGE_NAME: '',
  TAGS: 'key1=value1,key2=value2',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
});
