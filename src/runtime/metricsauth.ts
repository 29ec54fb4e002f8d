import { createHash } from 'node:crypto';
import type { KubeClient } from '../kube/client.ts';
import { TTLCache } from './ttlcache.ts';

/** Who the API server says a bearer token belongs to (a TokenReview's status.user). */
export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type AuthDecision = { ok: true; user: UserInfo } | { ok: false; status: 401 | 403 | 500; message: string };

/**
 * The two questions the API server answers for a scraper, as separate functions so that the decision
 * logic below is testable without one.
 */
export interface ReviewApi {
  tokenReview(token: string): Promise<{ authenticated: boolean; user?: UserInfo; error?: string }>;
  accessReview(user: UserInfo, path: string, verb: string): Promise<{ allowed: boolean; reason?: string }>;
}

/** TokenReview and SubjectAccessReview through the operator's own client (it needs `create` on both). */
export function apiServerReviews(client: KubeClient): ReviewApi {
  return {
    tokenReview: async (token) => {
      const r = await client.request<{ status?: { authenticated?: boolean; user?: UserInfo; error?: string } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/tokenreviews',
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } },
      );
      return { authenticated: r.status?.authenticated === true, user: r.status?.user, error: r.status?.error };
    },
    accessReview: async (user, path, verb) => {
      const r = await client.request<{ status?: { allowed?: boolean; reason?: string } }>(
        'POST',
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } },
          },
        },
      );
      return { allowed: r.status?.allowed === true, reason: r.status?.reason };
    },
  };
}

export interface AuthCacheTTL {
  /** How long an authenticated token is trusted without asking again (controller-runtime: 1 minute). */
  authenticatedMs: number;
  /** How long an allow is kept (5 minutes) and a deny (30 seconds). */
  allowedMs: number;
  deniedMs: number;
}

export const DEFAULT_AUTH_TTL: AuthCacheTTL = { authenticatedMs: 60_000, allowedMs: 300_000, deniedMs: 30_000 };

/** How many answers each cache keeps: far more than the scrapers of a cluster, far fewer than a flood. */
export const DEFAULT_AUTH_CACHE_ENTRIES = 4096;

/** The token out of an `Authorization: Bearer ...` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Delegated authentication and authorization for a non-resource URL, as Kubernetes components and
 * controller-runtime's secure metrics do: the bearer token is reviewed by the API server (TokenReview),
 * then the user's right to `<verb> <path>` (SubjectAccessReview; RBAC's nonResourceURLs). Answers are
 * cached briefly, keyed by a hash of the token (the token itself is neither kept nor logged), so that a
 * scrape every few seconds costs the API server almost nothing. Only answers are cached, never errors.
 */
export class DelegatingAuth {
  // Bounded, least recently used first out: a flood of distinct bad tokens costs O(1) per request and at
  // most `maxEntries` answers of memory, and pushes out only other recent answers.
  private readonly authn: TTLCache<{ user?: UserInfo }>;
  private readonly authz: TTLCache<boolean>;
  private readonly api: ReviewApi;
  private readonly ttl: AuthCacheTTL;

  constructor(api: ReviewApi, opts: { ttl?: AuthCacheTTL; now?: () => number; maxEntries?: number } = {}) {
    this.api = api;
    this.ttl = opts.ttl ?? DEFAULT_AUTH_TTL;
    this.authn = new TTLCache(opts.maxEntries ?? DEFAULT_AUTH_CACHE_ENTRIES, opts.now);
    this.authz = new TTLCache(opts.maxEntries ?? DEFAULT_AUTH_CACHE_ENTRIES, opts.now);
  }

  async check(authorization: string | undefined, path: string, method: string): Promise<AuthDecision> {
    const token = bearerToken(authorization);
    if (!token) return { ok: false, status: 401, message: 'Unauthorized: a bearer token is required' };
    const verb = method.toLowerCase();
    const key = createHash('sha256').update(token).digest('hex');
    let user: UserInfo | undefined;
    const cached = this.authn.fresh(key);
    if (cached) user = cached.user;
    else {
      const r = await this.api.tokenReview(token);
      user = r.authenticated ? r.user : undefined;
      // A rejected token is remembered as briefly as a deny: a scraper with a bad token is not a stampede.
      this.authn.put(key, { user }, user ? this.ttl.authenticatedMs : this.ttl.deniedMs);
    }
    if (!user) return { ok: false, status: 401, message: 'Unauthorized: the API server did not accept the token' };
    const zkey = JSON.stringify([user.username, user.uid, user.groups, user.extra, path, verb]);
    let allowed = this.authz.fresh(zkey);
    if (allowed === undefined) {
      allowed = (await this.api.accessReview(user, path, verb)).allowed;
      this.authz.put(zkey, allowed, allowed ? this.ttl.allowedMs : this.ttl.deniedMs);
    }
    if (!allowed) return { ok: false, status: 403, message: `Forbidden: user "${user.username}" may not ${verb} ${path}` };
    return { ok: true, user };
  }
}
