/**
 * The pod VMs of a cluster on Azure, through Azure Resource Manager's REST API with the service principal
 * the adaptor uses (an OAuth2 client-credentials token from Microsoft Entra ID): the resource group's
 * virtual machines, those tagged with the cluster, and their deletion (the adaptor makes each VM's NIC and
 * disk to go with it). Errors are Entra ID's (`AADSTS...`) and ARM's (`AuthorizationFailed`, ...).
 */
import { CLUSTER_UID_TAG } from '../../../api/podvm-leaks.ts';
import type { PodVM, PodVMInventory } from '../../../peerpods/leaks.ts';
import { CloudAPIError, type CloudEndpoint, CloudHttp, type CloudResponse, target } from './http.ts';
import { clientAssertionBody, needsRefresh, parseOAuthToken } from './token-exchange.ts';
import { readTokenFile } from './token-file.ts';

export const ARM = 'https://management.azure.com';
export const LOGIN = 'https://login.microsoftonline.com';
export const COMPUTE_API_VERSION = '2024-07-01';

export interface AzureInventoryOptions {
  tenantId: string;
  clientId: string;
  /** A service principal's secret, or the operator's token file for a workload identity (a federated credential). */
  clientSecret?: string;
  federatedTokenFile?: string;
  subscriptionId: string;
  resourceGroup: string;
  endpoint?: CloudEndpoint;
  now?: () => number;
}

interface ArmVM {
  id?: string;
  name?: string;
  tags?: Record<string, string>;
  properties?: { timeCreated?: string; provisioningState?: string };
}

/** Entra ID's error (`{error, error_description}`) or ARM's (`{error: {code, message}}`), else the status. */
export function azureError(res: CloudResponse): CloudAPIError {
  try {
    const body = JSON.parse(res.body) as { error?: string | { code?: string; message?: string }; error_description?: string };
    if (typeof body.error === 'string') return new CloudAPIError(body.error, body.error_description ?? '', res.status);
    if (body.error?.code) return new CloudAPIError(body.error.code, body.error.message ?? '', res.status);
  } catch {
    // Not JSON: the status says it.
  }
  return new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
}

export class ArmInventory implements PodVMInventory {
  private readonly http: CloudHttp;
  private readonly opts: AzureInventoryOptions;
  private token: { token: string; expiresAt: number } | undefined;

  constructor(opts: AzureInventoryOptions) {
    this.opts = opts;
    this.http = new CloudHttp(opts.endpoint);
  }

  /**
   * A token for ARM (client credentials: the secret, or the operator's token as the client assertion),
   * reused until a margin before it expires.
   */
  private async bearer(signal?: AbortSignal): Promise<string> {
    const now = this.opts.now?.() ?? Date.now();
    if (this.token && !needsRefresh(this.token.expiresAt, now)) return this.token.token;
    const url = target(`${LOGIN}/${encodeURIComponent(this.opts.tenantId)}/oauth2/v2.0/token`, this.opts.endpoint);
    const scope = `${ARM}/.default`;
    const body = this.opts.federatedTokenFile
      ? clientAssertionBody(this.opts.clientId, await readTokenFile(this.opts.federatedTokenFile), scope)
      : new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: this.opts.clientId,
          client_secret: this.opts.clientSecret ?? '',
          scope,
        }).toString();
    const res = await this.http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      ...(signal ? { signal } : {}),
    });
    if (res.status !== 200) throw azureError(res);
    this.token = parseOAuthToken(res, now);
    return this.token.token;
  }

  private async arm(method: string, url: string, signal?: AbortSignal): Promise<CloudResponse> {
    const token = await this.bearer(signal);
    return this.http.request(target(url, this.opts.endpoint), {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      ...(signal ? { signal } : {}),
    });
  }

  async list(clusterUID: string, signal?: AbortSignal): Promise<PodVM[]> {
    const { subscriptionId: sub, resourceGroup: rg } = this.opts;
    let next: string | undefined =
      `${ARM}/subscriptions/${sub}/resourceGroups/${encodeURIComponent(rg)}/providers/Microsoft.Compute/virtualMachines?api-version=${COMPUTE_API_VERSION}`;
    const vms: PodVM[] = [];
    while (next) {
      const res = await this.arm('GET', next, signal);
      if (res.status !== 200) throw azureError(res);
      const page = JSON.parse(res.body) as { value?: ArmVM[]; nextLink?: string };
      for (const vm of page.value ?? []) {
        const tags = vm.tags ?? {};
        // ARM lists by resource group only; the cluster's tag is checked here. A VM being deleted needs no help.
        if (tags[CLUSTER_UID_TAG] !== clusterUID || vm.properties?.provisioningState === 'Deleting') continue;
        vms.push({ id: vm.id ?? '', name: vm.name ?? '', createdAt: vm.properties?.timeCreated ?? '', tags });
      }
      next = page.nextLink;
    }
    return vms;
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    const res = await this.arm('DELETE', `${ARM}${id}?api-version=${COMPUTE_API_VERSION}`, signal);
    // 200 deleted, 202 accepted (ARM finishes it), 204 and 404 already gone.
    if ([200, 202, 204, 404].includes(res.status)) return;
    throw azureError(res);
  }

  close(): void {
    this.http.close();
  }
}
