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
 * credentials (the Secret's keys, as the adaptor reads them).
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
    default:
      return { unavailable: `osc cannot list the pod VMs of cloud provider "${cloud}"` };
  }
}
