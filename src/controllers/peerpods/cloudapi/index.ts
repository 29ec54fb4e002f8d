/**
 * The pod VM inventory of the cloud peer-pods-cm names, opened with the credentials the adaptor uses. Each
 * cloud's client is loaded only when that cloud is asked for: an operator without peer pods, or on
 * another cloud, never loads it (nor its signing and parsing libraries).
 */
import type { PodVMInventory } from '../../../peerpods/leaks.ts';
import type { CloudEndpoint } from './http.ts';

export type { CloudEndpoint } from './http.ts';

/** An inventory to close when the configuration it was opened with changes. */
export interface CloudInventory extends PodVMInventory {
  close(): void;
}

/** An inventory, or why there is none (in words, for the log). */
export type Opened = { inventory: CloudInventory } | { unavailable: string };

/**
 * Opens the inventory of `cloud` (peer-pods-cm's CLOUD_PROVIDER) with peer-pods-cm's values and the
 * credentials (the Secret's keys, as the adaptor reads them; for a workload identity the operator's own
 * token file beside them: AWS_WEB_IDENTITY_TOKEN_FILE, AZURE_FEDERATED_TOKEN_FILE, GCP_TOKEN_FILE with the
 * external_account configuration in GCP_EXTERNAL_ACCOUNT).
 */
export async function openInventory(
  cloud: string,
  cm: Readonly<Record<string, string>>,
  creds: Readonly<Record<string, string>>,
  endpoint?: CloudEndpoint,
): Promise<Opened> {
  const ep = endpoint?.url ? { endpoint } : {};
  switch (cloud) {
    case 'aws': {
      if (!cm.AWS_REGION) return { unavailable: 'peer-pods-cm has no AWS_REGION' };
      if (creds.AWS_ROLE_ARN && creds.AWS_WEB_IDENTITY_TOKEN_FILE && !creds.AWS_ACCESS_KEY_ID) {
        const { Ec2Inventory } = await import('./aws.ts');
        return {
          inventory: new Ec2Inventory({
            region: cm.AWS_REGION,
            webIdentity: { roleArn: creds.AWS_ROLE_ARN, tokenFile: creds.AWS_WEB_IDENTITY_TOKEN_FILE },
            ...ep,
          }),
        };
      }
      if (!creds.AWS_ACCESS_KEY_ID || !creds.AWS_SECRET_ACCESS_KEY) {
        return {
          unavailable: creds.AWS_ROLE_ARN
            ? 'the credentials are a role (STS): osc lists pod VMs with access keys only'
            : 'the credentials hold no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
        };
      }
      const { Ec2Inventory } = await import('./aws.ts');
      return {
        inventory: new Ec2Inventory({
          region: cm.AWS_REGION,
          accessKeyId: creds.AWS_ACCESS_KEY_ID,
          secretAccessKey: creds.AWS_SECRET_ACCESS_KEY,
          ...(creds.AWS_SESSION_TOKEN ? { sessionToken: creds.AWS_SESSION_TOKEN } : {}),
          ...ep,
        }),
      };
    }
    case 'azure': {
      const missing = ['AZURE_SUBSCRIPTION_ID', 'AZURE_RESOURCE_GROUP'].filter((k) => !cm[k]);
      if (missing.length) return { unavailable: `peer-pods-cm has no ${missing.join(', ')}` };
      const federated = !creds.AZURE_CLIENT_SECRET && creds.AZURE_FEDERATED_TOKEN_FILE;
      const noCreds = ['AZURE_TENANT_ID', 'AZURE_CLIENT_ID', federated ? '' : 'AZURE_CLIENT_SECRET'].filter((k) => k && !creds[k]);
      if (noCreds.length) return { unavailable: `the credentials hold no ${noCreds.join(', ')}` };
      const { ArmInventory } = await import('./azure.ts');
      return {
        inventory: new ArmInventory({
          tenantId: creds.AZURE_TENANT_ID ?? '',
          clientId: creds.AZURE_CLIENT_ID ?? '',
          ...(federated ? { federatedTokenFile: federated } : { clientSecret: creds.AZURE_CLIENT_SECRET ?? '' }),
          subscriptionId: cm.AZURE_SUBSCRIPTION_ID ?? '',
          resourceGroup: cm.AZURE_RESOURCE_GROUP ?? '',
          ...ep,
        }),
      };
    }
    case 'gcp': {
      if (!cm.GCP_PROJECT_ID || !cm.GCP_ZONE) return { unavailable: 'peer-pods-cm has no GCP_PROJECT_ID or GCP_ZONE' };
      if (creds.GCP_EXTERNAL_ACCOUNT && creds.GCP_TOKEN_FILE && !creds.GCP_CREDENTIALS) {
        const { parseExternalAccount } = await import('./token-exchange.ts');
        const config = parseExternalAccount(creds.GCP_EXTERNAL_ACCOUNT);
        if ('error' in config) return { unavailable: config.error };
        const { GceInventory } = await import('./gcp.ts');
        return {
          inventory: new GceInventory({
            external: { config, tokenFile: creds.GCP_TOKEN_FILE },
            project: cm.GCP_PROJECT_ID,
            zone: cm.GCP_ZONE,
            ...ep,
          }),
        };
      }
      if (creds.GOOGLE_APPLICATION_CREDENTIALS && !creds.GCP_CREDENTIALS)
        return {
          unavailable: 'the credentials are a workload identity (external_account): osc lists pod VMs with a service account key only',
        };
      let key: Record<string, unknown>;
      try {
        key = JSON.parse(creds.GCP_CREDENTIALS ?? '');
      } catch {
        return { unavailable: 'the credentials hold no service account key (GCP_CREDENTIALS)' };
      }
      const field = (k: string) => (typeof key[k] === 'string' ? (key[k] as string) : '');
      if (key.type !== 'service_account' || !field('private_key') || !field('client_email'))
        return { unavailable: 'GCP_CREDENTIALS is not a service account key' };
      const { GceInventory } = await import('./gcp.ts');
      return {
        inventory: new GceInventory({
          key: {
            client_email: field('client_email'),
            private_key: field('private_key'),
            private_key_id: field('private_key_id'),
            token_uri: field('token_uri'),
          },
          project: cm.GCP_PROJECT_ID,
          zone: cm.GCP_ZONE,
          ...ep,
        }),
      };
    }
    default:
      return { unavailable: `osc cannot list the pod VMs of cloud provider "${cloud}"` };
  }
}
