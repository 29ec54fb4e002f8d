/**
 * Google Cloud as osc's client reaches it: the OAuth2 token endpoint (`POST /token`, a JWT signed with a
 * service account key, RFC 7523) and Compute Engine's instances of a zone (list with a label filter,
 * delete), answered as oauth2.googleapis.com and compute.googleapis.com answer: a token only for a JWT
 * signed by a key the project issued, with the right audience and a short life; every API call with a
 * valid, unexpired token; a deletion only for a role that may delete; Google's error JSON where not.
 */
import { createVerify, randomBytes } from 'node:crypto';
import { GCP_REGIONS, ZONE_RE } from '../../peerpods/clouds/gcp/facts.ts';
import type { SimulatedGcp } from '../clouds/gcp.ts';
import { GcpAuthError } from '../clouds/gcp-identity.ts';
import type { PodVMStore } from './ec2.ts';
import { type IssuerKeys, verifyToken } from './sa-tokens.ts';
import type { CloudReply, CloudRequest } from './server.ts';

const TOKEN_LIFETIME_S = 3599;
const AUDIENCE = 'https://oauth2.googleapis.com/token';
const SCOPES = ['https://www.googleapis.com/auth/compute', 'https://www.googleapis.com/auth/cloud-platform'];

const json = (status: number, body: unknown): CloudReply => ({
  status,
  contentType: 'application/json; charset=UTF-8',
  body: JSON.stringify(body),
});
const oauthError = (error: string, description: string) => json(400, { error, error_description: description });
const apiError = (code: number, reason: string, message: string, extra: Record<string, unknown> = {}) =>
  json(code, { error: { code, message, errors: [{ message, domain: 'global', reason, ...extra }] } });

const unauthenticated = (message: string, reason: string) =>
  json(401, { error: { code: 401, message, errors: [{ message, domain: 'global', reason }], status: 'UNAUTHENTICATED' } });

export class GceAPI {
  private readonly gcp: SimulatedGcp;
  private readonly vms: PodVMStore;
  private readonly now: () => number;
  /** Access tokens: a service account's (`email`), or a federated one of the pool (`principal`, no roles of its own). */
  private readonly tokens = new Map<string, { email: string; until: number; principal?: string }>();
  private readonly issuer: (() => Promise<IssuerKeys>) | undefined;

  constructor(opts: { gcp: SimulatedGcp; vms: PodVMStore; now?: () => number; issuer?: () => Promise<IssuerKeys> }) {
    this.gcp = opts.gcp;
    this.vms = opts.vms;
    this.now = opts.now ?? Date.now;
    this.issuer = opts.issuer;
  }

  handle = async (req: CloudRequest): Promise<CloudReply | undefined> => {
    const url = new URL(req.url, 'https://compute.googleapis.com');
    if (url.pathname === '/token' && req.method === 'POST') return this.token(new URLSearchParams(req.body));
    if (url.pathname === '/v1/token' && req.method === 'POST') return this.exchange(new URLSearchParams(req.body));
    const impersonate = /^\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/.exec(url.pathname);
    if (impersonate && req.method === 'POST') return this.generateAccessToken(decodeURIComponent(impersonate[1] ?? ''), req);
    if (url.pathname.startsWith('/compute/v1/')) return this.compute(req, url);
    return undefined;
  };

  private token(form: URLSearchParams): CloudReply {
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
      return oauthError('unsupported_grant_type', `Invalid grant_type: ${form.get('grant_type') ?? ''}`);
    const [h = '', c = '', sig = ''] = (form.get('assertion') ?? '').split('.');
    let header: { alg?: string; kid?: string };
    let claims: { iss?: string; aud?: string; scope?: string; iat?: number; exp?: number };
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString());
      claims = JSON.parse(Buffer.from(c, 'base64url').toString());
    } catch {
      return oauthError('invalid_grant', 'Invalid JWT: Failed audience check.');
    }
    const key = this.gcp.serviceAccountKey(header.kid ?? '');
    const signed =
      header.alg === 'RS256' &&
      !!key &&
      createVerify('RSA-SHA256').update(`${h}.${c}`).verify(key.publicKey, Buffer.from(sig, 'base64url')) &&
      claims.iss === key.email;
    if (!signed || !key) return oauthError('invalid_grant', 'Invalid JWT Signature.');
    if (claims.aud !== AUDIENCE)
      return oauthError('invalid_grant', 'Invalid JWT: Failed audience check. The expected value is the token_uri.');
    const now = this.now() / 1000;
    const { iat = 0, exp = 0 } = claims;
    if (exp - iat > 3600 || iat > now + 300 || exp < now) {
      return oauthError(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    }
    if (!(claims.scope ?? '').split(' ').some((s) => SCOPES.includes(s)))
      return oauthError('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const value = `ya29.${randomBytes(32).toString('base64url')}`;
    this.tokens.set(value, { email: key.email, until: this.now() + TOKEN_LIFETIME_S * 1000 });
    return json(200, { access_token: value, expires_in: TOKEN_LIFETIME_S, token_type: 'Bearer' });
  }

  /**
   * sts.googleapis.com's token exchange: a ServiceAccount token of the cluster's issuer, for the provider's
   * allowed audience, traded for a federated token of the pool's principal for its subject.
   */
  private async exchange(form: URLSearchParams): Promise<CloudReply> {
    const iam = this.gcp.iam;
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange')
      return oauthError('unsupported_grant_type', `Invalid grant_type: ${form.get('grant_type') ?? ''}`);
    if (form.get('audience') !== iam.poolAudience)
      return oauthError(
        'invalid_target',
        'The target service indicated by the "audience" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn\'t exist.',
      );
    if (!this.issuer) return oauthError('invalid_grant', "The issuer of the subject token is not the provider's issuer.");
    const v = verifyToken(form.get('subject_token') ?? '', await this.issuer(), this.now());
    if ('refused' in v) {
      if (v.refused === 'expired') return oauthError('invalid_grant', `ID Token expired: ${v.message}.`);
      if (v.refused === 'issuer')
        return oauthError('invalid_grant', `The issuer in ID Token does not match the provider's issuer: ${v.message}.`);
      return oauthError('invalid_grant', 'Invalid ID Token signature.');
    }
    if (!v.audiences.some((a) => iam.providerAudiences.includes(a)))
      return oauthError('invalid_grant', `The audience in ID Token [${v.audiences.join(',')}] does not match the expected audience.`);
    const value = `ya29.d.${randomBytes(32).toString('base64url')}`;
    this.tokens.set(value, { email: '', principal: v.subject, until: this.now() + TOKEN_LIFETIME_S * 1000 });
    return json(200, {
      access_token: value,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: TOKEN_LIFETIME_S,
    });
  }

  /** iamcredentials.googleapis.com: a federated principal allowed to impersonate the service account gets its token. */
  private generateAccessToken(email: string, req: CloudRequest): CloudReply {
    const t = this.tokens.get(String(req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!t || this.now() >= t.until)
      return unauthenticated(
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
      );
    if (t.principal === undefined || !this.gcp.iam.mayImpersonate(email, t.principal))
      return json(403, {
        error: {
          code: 403,
          message: "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
          status: 'PERMISSION_DENIED',
        },
      });
    const value = `ya29.c.${randomBytes(32).toString('base64url')}`;
    const until = this.now() + TOKEN_LIFETIME_S * 1000;
    this.tokens.set(value, { email, until });
    return json(200, { accessToken: value, expireTime: new Date(until).toISOString() });
  }

  private async compute(req: CloudRequest, url: URL): Promise<CloudReply> {
    const header = String(req.headers.authorization ?? '');
    if (!header) {
      return unauthenticated(
        'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'required',
      );
    }
    const t = this.tokens.get(header.replace(/^Bearer /, ''));
    if (!t || this.now() >= t.until) {
      return unauthenticated(
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
      );
    }
    const m = /^\/compute\/v1\/projects\/([^/]+)\/zones\/([^/]+)\/instances(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return apiError(404, 'notFound', `The requested URL ${url.pathname} was not found.`);
    const [, project = '', zone = '', name] = m.map((v) => (v === undefined ? v : decodeURIComponent(v)));
    if (project !== this.gcp.account.projectId) return apiError(404, 'notFound', `The resource 'projects/${project}' was not found`);
    const region = ZONE_RE.exec(zone)?.[1];
    if (!region || !GCP_REGIONS.includes(region))
      return apiError(400, 'invalid', `Invalid value for field 'zone': '${zone}'. Unknown zone.`);
    const inZone = [...this.vms.vms.values()].filter((vm) => this.vms.regions.get(vm.id) === zone);
    const resource = `projects/${project}/zones/${zone}/instances${name ? `/${name}` : ''}`;
    const permission = req.method === 'GET' ? 'compute.instances.list' : 'compute.instances.delete';
    try {
      // Recorded per account: the tests prove a service account's permissions minimal by what it used.
      this.gcp.iam.authorize(t.email, permission, resource);
    } catch (e) {
      if (!(e instanceof GcpAuthError)) throw e;
      return apiError(403, 'forbidden', e.message);
    }
    if (req.method === 'GET' && name === undefined) {
      this.vms.stats.lists++;
      const labels = this.labelFilter(url.searchParams.get('filter') ?? '');
      if (!labels) {
        return apiError(
          400,
          'invalid',
          `Invalid value for field 'filter': '${url.searchParams.get('filter')}'. Invalid list filter expression.`,
        );
      }
      const found = inZone.filter((vm) => [...labels].every(([k, v]) => vm.tags[k] === v));
      const max = Math.min(Number(url.searchParams.get('maxResults') ?? 500), 500);
      const from = Number(url.searchParams.get('pageToken') || 0);
      const page = found.slice(from, from + max);
      return json(200, {
        kind: 'compute#instanceList',
        id: resource,
        items: page.map((vm) => ({
          kind: 'compute#instance',
          id: String(BigInt(`0x${Buffer.from(vm.id).toString('hex').slice(0, 15) || '0'}`)),
          name: vm.name,
          creationTimestamp: vm.createdAt,
          zone: `https://www.googleapis.com/compute/v1/projects/${project}/zones/${zone}`,
          status: 'RUNNING',
          labels: vm.tags,
        })),
        ...(from + max < found.length ? { nextPageToken: String(from + max) } : {}),
        selfLink: `https://www.googleapis.com/compute/v1/${resource}`,
      });
    }
    if (req.method === 'DELETE' && name !== undefined) {
      const vm = inZone.find((v) => v.name === name);
      if (!vm) return apiError(404, 'notFound', `The resource '${resource}' was not found`);
      try {
        await this.vms.delete(vm.id);
      } catch (e) {
        const reason = /^[A-Za-z][\w.]*$/.test((e as Error).message) ? (e as Error).message : 'forbidden';
        return apiError(403, reason, 'refused by osc.dev/fail-podvm-deletion');
      }
      return json(200, {
        kind: 'compute#operation',
        name: `operation-${randomBytes(8).toString('hex')}`,
        operationType: 'delete',
        status: 'RUNNING',
        targetLink: `https://www.googleapis.com/compute/v1/${resource}`,
      });
    }
    return apiError(405, 'httpMethodNotAllowed', `HTTP method ${req.method} is not supported by this URL`);
  }

  /** `labels.<key> = "<value>"` terms, joined by AND or spaces (what the client sends); undefined for anything else. */
  private labelFilter(filter: string): Map<string, string> | undefined {
    const out = new Map<string, string>();
    const rest = filter.replace(/\(?\s*labels\.([a-z][-_a-z0-9]*)\s*=\s*"([^"]*)"\s*\)?(\s+AND\s+|\s*)/g, (_m, k: string, v: string) => {
      out.set(k, v);
      return '';
    });
    return rest.trim() === '' ? out : undefined;
  }
}
