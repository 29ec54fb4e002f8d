/**
 * Azure as osc's client reaches it: Entra ID's token endpoint (`POST /<tenant>/oauth2/v2.0/token`, client
 * credentials with a secret, or with a ServiceAccount token as the client assertion of a managed identity's
 * federated credential: the cluster's issuer, an audience and a subject the credential names) and Azure Resource Manager's virtual machines of a resource group (list, delete), answered as
 * login.microsoftonline.com and management.azure.com answer: a token only for a service principal the
 * account has, with its secret; every ARM call with a valid, unexpired token; a deletion only for a role
 * that may delete; their error codes, statuses and JSON where not.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { SimulatedAzure } from '../clouds/azure.ts';
import { AzureAuthError } from '../clouds/azure-identity.ts';
import type { PodVMStore } from './ec2.ts';
import { type IssuerKeys, verifyToken } from './sa-tokens.ts';
import type { CloudReply, CloudRequest } from './server.ts';

const TOKEN_LIFETIME_S = 3599;
const PAGE = 100;

const json = (status: number, body: unknown): CloudReply => ({
  status,
  contentType: 'application/json; charset=utf-8',
  body: JSON.stringify(body),
});
const armError = (status: number, code: string, message: string) => json(status, { error: { code, message } });

export class ArmAPI {
  private readonly azure: SimulatedAzure;
  private readonly vms: PodVMStore;
  private readonly now: () => number;
  private readonly tokens = new Map<string, { clientId: string; until: number }>();
  private readonly issuer: (() => Promise<IssuerKeys>) | undefined;

  constructor(opts: { azure: SimulatedAzure; vms: PodVMStore; now?: () => number; issuer?: () => Promise<IssuerKeys> }) {
    this.azure = opts.azure;
    this.vms = opts.vms;
    this.now = opts.now ?? Date.now;
    this.issuer = opts.issuer;
  }

  handle = async (req: CloudRequest): Promise<CloudReply | undefined> => {
    const url = new URL(req.url, 'https://management.azure.com');
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (token && req.method === 'POST') return this.token(decodeURIComponent(token[1] ?? ''), new URLSearchParams(req.body));
    if (url.pathname.startsWith('/subscriptions/')) return this.arm(req, url);
    return undefined;
  };

  private async token(tenant: string, form: URLSearchParams): Promise<CloudReply> {
    const refuse = (status: number, error: string, code: number, description: string) =>
      json(status, {
        error,
        error_description: description,
        error_codes: [code],
        timestamp: new Date(this.now()).toISOString(),
        trace_id: randomUUID(),
      });
    if (form.get('grant_type') !== 'client_credentials')
      return refuse(
        400,
        'unsupported_grant_type',
        70003,
        `AADSTS70003: The app requested an unsupported grant type '${form.get('grant_type') ?? ''}'.`,
      );
    if (form.get('scope') !== 'https://management.azure.com/.default')
      return refuse(
        400,
        'invalid_scope',
        70011,
        `AADSTS70011: The provided value for the input parameter 'scope' is not valid: '${form.get('scope') ?? ''}'.`,
      );
    const clientId = form.get('client_id') ?? '';
    const assertion = form.get('client_assertion');
    let r: ReturnType<SimulatedAzure['signIn']>;
    if (assertion !== null) {
      if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
        return refuse(400, 'invalid_request', 50027, 'AADSTS50027: JWT token is invalid or malformed.');
      if (!this.issuer)
        return refuse(
          401,
          'invalid_client',
          700211,
          'AADSTS700211: No matching federated identity record found for presented assertion issuer.',
        );
      const v = verifyToken(assertion, await this.issuer(), this.now());
      if ('refused' in v) {
        if (v.refused === 'expired')
          return refuse(400, 'invalid_client', 700024, 'AADSTS700024: Client assertion is not within its valid time range.');
        if (v.refused === 'issuer')
          return refuse(
            400,
            'invalid_request',
            700211,
            `AADSTS700211: No matching federated identity record found for presented assertion issuer. ${v.message}`,
          );
        return refuse(401, 'invalid_client', 700027, 'AADSTS700027: Client assertion failed signature validation.');
      }
      // The federated credential's audience first (700212), then its subject (70021), as Entra ID checks them.
      const audiences = this.azure.tenant.federatedAudiences(clientId);
      const audience = v.audiences.find((a) => audiences?.includes(a));
      if (audiences && audience === undefined)
        return refuse(
          400,
          'invalid_client',
          700212,
          `AADSTS700212: No matching federated identity record found for presented assertion audience '${v.audiences.join(',')}'.`,
        );
      r = this.azure.tenant.signIn({ tenantId: tenant, clientId, federatedToken: { serviceAccount: v.subject, audience: audience ?? '' } });
    } else r = this.azure.signIn(tenant, clientId, form.get('client_secret') ?? '');
    if ('error' in r) return refuse(r.status, r.error, r.code, r.description);
    const value = randomBytes(32).toString('base64url');
    this.tokens.set(value, { clientId: r.clientId, until: this.now() + TOKEN_LIFETIME_S * 1000 });
    return json(200, { token_type: 'Bearer', expires_in: TOKEN_LIFETIME_S, ext_expires_in: TOKEN_LIFETIME_S, access_token: value });
  }

  private async arm(req: CloudRequest, url: URL): Promise<CloudReply> {
    const header = String(req.headers.authorization ?? '');
    if (!header) return armError(401, 'AuthenticationFailed', "Authentication failed. The 'Authorization' header is missing.");
    const t = this.tokens.get(header.replace(/^Bearer /, ''));
    if (!header.startsWith('Bearer ') || !t) return armError(401, 'InvalidAuthenticationToken', 'The access token is invalid.');
    if (this.now() >= t.until) {
      return armError(
        401,
        'ExpiredAuthenticationToken',
        `The access token expiry UTC time '${new Date(t.until).toISOString()}' is earlier than current UTC time '${new Date(this.now()).toISOString()}'.`,
      );
    }
    if (!url.searchParams.get('api-version'))
      return armError(400, 'MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.');
    const m = /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines(?:\/([^/]+))?$/i.exec(
      url.pathname,
    );
    if (!m)
      return armError(400, 'InvalidResourceType', `The resource type could not be found in the namespace for path '${url.pathname}'.`);
    const [, sub = '', rg = '', name] = m.map((v) => (v === undefined ? v : decodeURIComponent(v)));
    const a = this.azure.account;
    if (sub.toLowerCase() !== a.subscriptionId)
      return armError(404, 'SubscriptionNotFound', `The subscription '${sub}' could not be found.`);
    if (rg.toLowerCase() !== a.resourceGroup.toLowerCase())
      return armError(404, 'ResourceGroupNotFound', `Resource group '${rg}' could not be found.`);
    const prefix = `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachines/`.toLowerCase();
    const inGroup = [...this.vms.vms.values()].filter((vm) => vm.id.toLowerCase().startsWith(prefix));
    // Each call is authorized for the principal's roles on the resource group.
    const action = req.method === 'GET' ? 'Microsoft.Compute/virtualMachines/read' : 'Microsoft.Compute/virtualMachines/delete';
    try {
      this.azure.tenant.authorize(
        t.clientId,
        action,
        `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachines${name ? `/${name}` : ''}`,
      );
    } catch (e) {
      if (e instanceof AzureAuthError) return armError(e.status, e.code, e.message);
      throw e;
    }
    if (req.method === 'GET' && name === undefined) {
      this.vms.stats.lists++;
      const from = Number(url.searchParams.get('$skiptoken') ?? 0);
      const page = inGroup.slice(from, from + PAGE);
      const next = from + PAGE < inGroup.length ? new URL(url) : undefined;
      next?.searchParams.set('$skiptoken', String(from + PAGE));
      return json(200, {
        value: page.map((vm) => ({
          id: vm.id,
          name: vm.name,
          type: 'Microsoft.Compute/virtualMachines',
          location: this.vms.regions.get(vm.id) ?? a.region,
          tags: vm.tags,
          properties: { provisioningState: 'Succeeded', timeCreated: vm.createdAt, vmId: randomUUID() },
        })),
        ...(next ? { nextLink: next.href } : {}),
      });
    }
    if (req.method === 'DELETE' && name !== undefined) {
      const id = `${prefix}${name.toLowerCase()}`;
      const vm = inGroup.find((v) => v.id.toLowerCase() === id);
      if (!vm) return { status: 204, contentType: 'application/json', body: '' };
      return this.remove(vm.id);
    }
    return armError(405, 'MethodNotAllowed', `The requested resource does not support http method '${req.method}'.`);
  }

  private async remove(id: string): Promise<CloudReply> {
    try {
      await this.vms.delete(id);
    } catch (e) {
      const code = /^[A-Za-z][\w.]*$/.test((e as Error).message) ? (e as Error).message : 'AuthorizationFailed';
      return armError(403, code, 'refused by osc.dev/fail-podvm-deletion');
    }
    // Accepted: ARM deletes the VM, its NIC and its disk (made to go with it) in the background.
    return { status: 202, contentType: 'application/json', body: '' };
  }
}
