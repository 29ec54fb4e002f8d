/**
 * AWS STS AssumeRoleWithWebIdentity, the pure parts (./token-exchange.ts has the others): the request, and
 * the answer read (temporary credentials with their expiry, or STS's error).
 */
import { XMLParser } from 'fast-xml-parser';
import { CloudAPIError, type CloudResponse } from './http.ts';
import type { SessionCredentials } from './token-exchange.ts';

export const STS_API_VERSION = '2011-06-15';

/** The STS endpoint of a region (regional endpoints, as ccoctl's credentials file asks with sts_regional_endpoints). */
export const stsURL = (region: string): string => `https://sts.${region}.amazonaws.com/`;

/** The form body of AssumeRoleWithWebIdentity. */
export function assumeRoleWithWebIdentityBody(roleArn: string, sessionName: string, token: string): string {
  return new URLSearchParams({
    Action: 'AssumeRoleWithWebIdentity',
    Version: STS_API_VERSION,
    RoleArn: roleArn,
    RoleSessionName: sessionName,
    WebIdentityToken: token,
  }).toString();
}

const xml = new XMLParser({ ignoreAttributes: true, parseTagValue: false });
type Doc = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** STS's answer: the credentials, or its error (`<ErrorResponse><Error><Code>`) thrown. */
export function parseAssumeRoleResponse(res: CloudResponse): SessionCredentials {
  let doc: Doc;
  try {
    doc = xml.parse(res.body) as Doc;
  } catch {
    throw new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
  }
  const err = ((doc.ErrorResponse as Doc | undefined)?.Error ?? undefined) as Doc | undefined;
  if (res.status !== 200 || err) {
    if (err) throw new CloudAPIError(str(err.Code), str(err.Message), res.status);
    throw new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
  }
  const c = (((doc.AssumeRoleWithWebIdentityResponse as Doc | undefined)?.AssumeRoleWithWebIdentityResult as Doc | undefined)
    ?.Credentials ?? {}) as Doc;
  const out = {
    accessKeyId: str(c.AccessKeyId),
    secretAccessKey: str(c.SecretAccessKey),
    sessionToken: str(c.SessionToken),
    expiresAt: Date.parse(str(c.Expiration)),
  };
  if (!out.accessKeyId || !out.secretAccessKey || !out.sessionToken || Number.isNaN(out.expiresAt))
    throw new CloudAPIError('invalid_response', 'the AssumeRoleWithWebIdentity response holds no complete credentials', res.status);
  return out;
}
