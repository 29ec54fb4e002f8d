/**
 * The cluster's ServiceAccount tokens as a cloud sees them: the OIDC issuer ccoctl registered with the cloud
 * (an IAM OIDC provider, an Entra ID federated credential's issuer, a workload identity pool provider)
 * publishes the cluster's signing keys; a cloud accepts a token signed by one of them, from that issuer, not
 * expired, for an audience it allows, and then trusts its subject (`system:serviceaccount:<ns>:<name>`) only
 * as far as the identity's own trust says. Here the issuer is the dev cluster's API server itself: its
 * discovery document and keys (`/.well-known/openid-configuration`, `/openid/v1/jwks`), read as ccoctl
 * copies them.
 */
import { createPublicKey, type JsonWebKey, type KeyObject, verify } from 'node:crypto';
import type { KubeClient } from '../../kube/client.ts';

/** What a valid token says. */
export interface VerifiedToken {
  issuer: string;
  subject: string;
  audiences: string[];
  expiresAt: number;
}

/** Why a token is refused: its form or signature, its issuer, its expiry. */
export type TokenRefusal = { refused: 'malformed' | 'signature' | 'issuer' | 'expired'; message: string };

/** The issuer and its public keys, by key ID. */
export interface IssuerKeys {
  issuer: string;
  keys: Map<string, KeyObject>;
}

/** The issuer's keys from the dev cluster's API server, read once (the dev cluster never rotates its signing key). */
export function clusterIssuer(client: KubeClient): () => Promise<IssuerKeys> {
  let cached: Promise<IssuerKeys> | undefined;
  return () => {
    cached ??= (async () => {
      const discovery = await client.request<{ issuer?: string }>('GET', '/.well-known/openid-configuration');
      const jwks = await client.request<{ keys?: (JsonWebKey & { kid?: string })[] }>('GET', '/openid/v1/jwks', {
        accept: 'application/jwk-set+json',
      });
      const keys = new Map<string, KeyObject>();
      for (const k of jwks.keys ?? []) keys.set(k.kid ?? '', createPublicKey({ key: k, format: 'jwk' }));
      return { issuer: discovery.issuer ?? '', keys };
    })().catch((e) => {
      cached = undefined;
      throw e;
    });
    return cached;
  };
}

/** Verifies a ServiceAccount token (RS256 or ES256) against the issuer's keys at `now` (ms). */
export function verifyToken(jwt: string, issuer: IssuerKeys, now: number): VerifiedToken | TokenRefusal {
  const [h = '', c = '', sig = ''] = jwt.split('.');
  let header: { alg?: string; kid?: string };
  let claims: { iss?: string; sub?: string; aud?: string | string[]; exp?: number; nbf?: number };
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString());
    claims = JSON.parse(Buffer.from(c, 'base64url').toString());
  } catch {
    return { refused: 'malformed', message: 'the token is not a JWT' };
  }
  const key = issuer.keys.get(header.kid ?? '');
  // RS256, or ES256 (what a cluster with an EC signing key issues; JWS carries its signature as r||s).
  const signed =
    !!key &&
    ((header.alg === 'RS256' && key.asymmetricKeyType === 'rsa') || (header.alg === 'ES256' && key.asymmetricKeyType === 'ec')) &&
    verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url'));
  if (!signed) return { refused: 'signature', message: 'the token is not signed by a key of the issuer' };
  if (claims.iss !== issuer.issuer) return { refused: 'issuer', message: `the token's issuer ${claims.iss} is not ${issuer.issuer}` };
  const expiresAt = (claims.exp ?? 0) * 1000;
  if (now >= expiresAt) return { refused: 'expired', message: `the token expired at ${new Date(expiresAt).toISOString()}` };
  return {
    issuer: claims.iss,
    subject: claims.sub ?? '',
    audiences: Array.isArray(claims.aud) ? claims.aud : claims.aud ? [claims.aud] : [],
    expiresAt,
  };
}
