/**
 * The pod VMs of a cluster on Google Cloud, through Compute Engine's REST API with the service account key
 * the adaptor uses (an OAuth2 token for a JWT signed with the key, RS256): the zone's instances labelled
 * with the cluster, and their deletion. Errors are Google's OAuth2 ones (`invalid_grant`) and the API's
 * (`{error: {code, message, errors: [{reason}]}}`).
 */
import { createSign } from 'node:crypto';
import { CLUSTER_UID_TAG } from '../../../api/podvm-leaks.ts';
import type { PodVM, PodVMInventory } from '../../../peerpods/leaks.ts';
import { CloudAPIError, type CloudEndpoint, CloudHttp, type CloudResponse, target } from './http.ts';
import {
  type AccessToken,
  type ExternalAccount,
  generateAccessTokenBody,
  googleStsBody,
  needsRefresh,
  parseGenerateAccessToken,
  parseOAuthToken,
  subjectToken,
} from './token-exchange.ts';
import { readTokenFile } from './token-file.ts';

export const COMPUTE = 'https://compute.googleapis.com/compute/v1';
export const COMPUTE_SCOPE = 'https://www.googleapis.com/auth/compute';
export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** The fields of a service account key file the client uses. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id: string;
  token_uri?: string;
}

export interface GcpInventoryOptions {
  /** A service account key, or an external_account configuration with the operator's token file (workload identity federation). */
  key?: ServiceAccountKey;
  external?: { config: ExternalAccount; tokenFile: string };
  now?: () => number;
  project: string;
  zone: string;
  endpoint?: CloudEndpoint;
}

const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');

/** The signed JWT a service account trades for a token (RFC 7523), valid for an hour from `now` (seconds). */
export function serviceAccountAssertion(key: ServiceAccountKey, now: number): string {
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.private_key_id }));
  const claims = b64url(
    JSON.stringify({ iss: key.client_email, scope: COMPUTE_SCOPE, aud: key.token_uri || DEFAULT_TOKEN_URI, iat: now, exp: now + 3600 }),
  );
  const signature = createSign('RSA-SHA256').update(`${header}.${claims}`).sign(key.private_key);
  return `${header}.${claims}.${b64url(signature)}`;
}

/** Google's OAuth2 error (`{error, error_description}`) or the API's (`{error: {code, message, errors}}`). */
export function googleError(res: CloudResponse): CloudAPIError {
  try {
    const body = JSON.parse(res.body) as {
      error?: string | { code?: number; message?: string; status?: string; errors?: { reason?: string }[] };
      error_description?: string;
    };
    if (typeof body.error === 'string') return new CloudAPIError(body.error, body.error_description ?? '', res.status);
    if (body.error) {
      const reason = body.error.errors?.[0]?.reason ?? body.error.status ?? String(body.error.code ?? res.status);
      return new CloudAPIError(reason, body.error.message ?? '', res.status);
    }
  } catch {
    // Not JSON: the status says it.
  }
  return new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
}

interface GceInstance {
  id?: string;
  name?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  status?: string;
}

export class GceInventory implements PodVMInventory {
  private readonly http: CloudHttp;
  private readonly opts: GcpInventoryOptions;
  private token: AccessToken | undefined;

  constructor(opts: GcpInventoryOptions) {
    this.opts = opts;
    this.http = new CloudHttp(opts.endpoint);
  }

  private async bearer(signal?: AbortSignal): Promise<string> {
    const now = this.opts.now?.() ?? Date.now();
    if (this.token && !needsRefresh(this.token.expiresAt, now)) return this.token.token;
    this.token = this.opts.external ? await this.federated(this.opts.external, now, signal) : await this.signed(now, signal);
    return this.token.token;
  }

  /**
   * Workload identity federation: the operator's token exchanged at Google's STS for a federated token, then,
   * when the configuration names a service account to impersonate, that account's access token.
   */
  private async federated(ext: { config: ExternalAccount; tokenFile: string }, now: number, signal?: AbortSignal): Promise<AccessToken> {
    const token = subjectToken(ext.config, await readTokenFile(ext.tokenFile));
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const sts = await this.http.request(target(ext.config.token_url, this.opts.endpoint), {
      method: 'POST',
      headers: form,
      body: googleStsBody(ext.config, token),
      ...(signal ? { signal } : {}),
    });
    const federated = parseOAuthToken(sts, now);
    const url = ext.config.service_account_impersonation_url;
    if (!url) return federated;
    const res = await this.http.request(target(url, this.opts.endpoint), {
      method: 'POST',
      headers: { authorization: `Bearer ${federated.token}`, 'content-type': 'application/json' },
      body: generateAccessTokenBody(),
      ...(signal ? { signal } : {}),
    });
    return parseGenerateAccessToken(res);
  }

  /** A service account key: a JWT signed with it, traded at the key's token URI. */
  private async signed(now: number, signal?: AbortSignal): Promise<AccessToken> {
    const key = this.opts.key;
    if (!key) throw new CloudAPIError('invalid_credentials', 'no service account key', 0);
    const body = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: serviceAccountAssertion(key, Math.floor(now / 1000)),
    }).toString();
    const res = await this.http.request(target(key.token_uri || DEFAULT_TOKEN_URI, this.opts.endpoint), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      ...(signal ? { signal } : {}),
    });
    if (res.status !== 200) throw googleError(res);
    return parseOAuthToken(res, now);
  }

  private async call(method: string, url: string, signal?: AbortSignal): Promise<CloudResponse> {
    const token = await this.bearer(signal);
    return this.http.request(target(url, this.opts.endpoint), {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      ...(signal ? { signal } : {}),
    });
  }

  private instancesURL(): string {
    return `${COMPUTE}/projects/${encodeURIComponent(this.opts.project)}/zones/${encodeURIComponent(this.opts.zone)}/instances`;
  }

  async list(clusterUID: string, signal?: AbortSignal): Promise<PodVM[]> {
    const filter = `labels.${CLUSTER_UID_TAG} = "${clusterUID}"`;
    const vms: PodVM[] = [];
    let pageToken = '';
    do {
      const q = new URLSearchParams({ filter, maxResults: '500', ...(pageToken ? { pageToken } : {}) });
      const res = await this.call('GET', `${this.instancesURL()}?${q}`, signal);
      if (res.status !== 200) throw googleError(res);
      const page = JSON.parse(res.body) as { items?: GceInstance[]; nextPageToken?: string };
      for (const i of page.items ?? []) {
        // A VM on its way out needs no help.
        if (i.status === 'STOPPING' || i.status === 'TERMINATED') continue;
        // The adaptor uses the instance's name as its ID (what delete takes).
        vms.push({ id: i.name ?? '', name: i.name ?? '', createdAt: i.creationTimestamp ?? '', tags: i.labels ?? {} });
      }
      pageToken = page.nextPageToken ?? '';
    } while (pageToken);
    return vms;
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    const res = await this.call('DELETE', `${this.instancesURL()}/${encodeURIComponent(id)}`, signal);
    // 200: the deletion operation started; 404: gone already.
    if (res.status === 200 || res.status === 404) return;
    throw googleError(res);
  }

  close(): void {
    this.http.close();
  }
}
