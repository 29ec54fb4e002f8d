/**
 * Workload identity for osc's cloud clients, the pure parts: the operator's projected ServiceAccount token
 * (a JWT the kubelet renews in a file) traded for a cloud's short-lived credentials, as each cloud's SDK
 * trades it.
 *
 * - AWS: STS AssumeRoleWithWebIdentity (unsigned; the role ARN, a session name and the token) answers an
 *   access key, its secret and a session token, valid until `Expiration`.
 * - Azure: Entra ID's token endpoint, client credentials with the token as the client assertion
 *   (`urn:ietf:params:oauth:client-assertion-type:jwt-bearer`), answers an ARM access token.
 * - Google Cloud: the STS token exchange of the external_account configuration (its `audience`, the token
 *   as the subject token) answers a federated token; with `service_account_impersonation_url`, IAM
 *   Credentials' generateAccessToken trades that for the service account's access token.
 *
 * (AWS's STS answers XML: ./sts.ts, loaded with the AWS client only.)
 *
 * Every credential is refreshed a margin before it expires (`needsRefresh`, time an input), reading the
 * token file again each time: the kubelet replaces it well before it expires.
 */
import { CloudAPIError, type CloudResponse } from './http.ts';

/** How long before expiry a credential is traded again (the SDKs use 5 minutes, the kubelet renews the token at 80%). */
export const REFRESH_MARGIN_MS = 5 * 60_000;

/** Whether a credential valid until `expiresAt` (ms) must be traded again at `now` (ms). */
export function needsRefresh(expiresAt: number | undefined, now: number, marginMs = REFRESH_MARGIN_MS): boolean {
  return expiresAt === undefined || !Number.isFinite(expiresAt) || now >= expiresAt - marginMs;
}

/** A bearer token and when it expires (ms since the epoch). */
export interface AccessToken {
  token: string;
  expiresAt: number;
}

/** Temporary AWS credentials. */
export interface SessionCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiresAt: number;
}

// ---- Azure (Entra ID)

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** The form body of a client-credentials token request signed in with a federated token. */
export function clientAssertionBody(clientId: string, token: string, scope: string): string {
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: clientId,
    client_assertion_type: CLIENT_ASSERTION_TYPE,
    client_assertion: token,
    scope,
  }).toString();
}

/** An OAuth2 token response (`access_token`, `expires_in` seconds) read at `now`; errors thrown as `{error, error_description}`. */
export function parseOAuthToken(res: CloudResponse, now: number): AccessToken {
  let body: { access_token?: string; expires_in?: number | string; error?: unknown; error_description?: string };
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
  }
  if (res.status !== 200 || !body.access_token) {
    if (typeof body.error === 'string') throw new CloudAPIError(body.error, body.error_description ?? '', res.status);
    const e = body.error as { code?: number | string; message?: string; status?: string } | undefined;
    if (e && typeof e === 'object') throw new CloudAPIError(String(e.status ?? e.code ?? res.status), e.message ?? '', res.status);
    throw new CloudAPIError('invalid_response', 'the token response holds no access_token', res.status);
  }
  return { token: body.access_token, expiresAt: now + Number(body.expires_in ?? 0) * 1000 };
}

// ---- Google Cloud

/** The fields of an external_account configuration (what ccoctl gcp create-service-accounts writes) the client uses. */
export interface ExternalAccount {
  audience: string;
  subject_token_type: string;
  token_url: string;
  service_account_impersonation_url?: string;
  credential_source: { file: string; format?: { type?: string; subject_token_field_name?: string } };
}

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const GOOGLE_STS_URL = 'https://sts.googleapis.com/v1/token';

/** The configuration, or why it is not one (ending with the fix). */
export function parseExternalAccount(text: string): ExternalAccount | { error: string } {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { error: 'the external_account configuration is not JSON; rerun ccoctl gcp create-service-accounts' };
  }
  const source = doc.credential_source as { file?: unknown; format?: { type?: string; subject_token_field_name?: string } } | undefined;
  const missing = ['audience', 'subject_token_type', 'token_url'].filter((f) => typeof doc[f] !== 'string' || doc[f] === '');
  if (typeof source?.file !== 'string') missing.push('credential_source.file');
  if (doc.type !== 'external_account' || missing.length)
    return {
      error: `not an external_account configuration (missing ${missing.join(', ') || 'type'}); rerun ccoctl gcp create-service-accounts`,
    };
  const impersonation = doc.service_account_impersonation_url;
  return {
    audience: String(doc.audience),
    subject_token_type: String(doc.subject_token_type),
    token_url: String(doc.token_url),
    ...(typeof impersonation === 'string' && impersonation ? { service_account_impersonation_url: impersonation } : {}),
    credential_source: { file: String(source?.file), ...(source?.format ? { format: source.format } : {}) },
  };
}

/** The subject token from the file's text, as credential_source.format says (text, or a JSON field). */
export function subjectToken(cfg: ExternalAccount, fileText: string): string {
  const format = cfg.credential_source.format;
  if (format?.type === 'json') {
    const field = format.subject_token_field_name ?? '';
    const v = (JSON.parse(fileText) as Record<string, unknown>)[field];
    if (typeof v !== 'string') throw new Error(`the token file holds no ${field}`);
    return v;
  }
  return fileText.trim();
}

/** The form body of Google's STS token exchange (RFC 8693). */
export function googleStsBody(cfg: ExternalAccount, token: string): string {
  return new URLSearchParams({
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    audience: cfg.audience,
    scope: CLOUD_PLATFORM_SCOPE,
    requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    subject_token: token,
    subject_token_type: cfg.subject_token_type,
  }).toString();
}

/** The JSON body of IAM Credentials' generateAccessToken. */
export function generateAccessTokenBody(lifetimeSeconds = 3600): string {
  return JSON.stringify({ scope: [CLOUD_PLATFORM_SCOPE], lifetime: `${lifetimeSeconds}s` });
}

/** generateAccessToken's answer (`accessToken`, `expireTime`), or Google's error thrown. */
export function parseGenerateAccessToken(res: CloudResponse): AccessToken {
  let body: { accessToken?: string; expireTime?: string; error?: { code?: number; message?: string; status?: string } };
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
  }
  if (res.status !== 200 || !body.accessToken) {
    if (body.error)
      throw new CloudAPIError(body.error.status ?? String(body.error.code ?? res.status), body.error.message ?? '', res.status);
    throw new CloudAPIError('invalid_response', 'the generateAccessToken response holds no accessToken', res.status);
  }
  const expiresAt = Date.parse(body.expireTime ?? '');
  if (Number.isNaN(expiresAt))
    throw new CloudAPIError('invalid_response', 'the generateAccessToken response holds no expireTime', res.status);
  return { token: body.accessToken, expiresAt };
}
