/**
 * AWS STS's AssumeRoleWithWebIdentity as sts.<region>.amazonaws.com answers it (unsigned, the token is the
 * proof): a ServiceAccount token of the cluster's issuer (the IAM OIDC provider ccoctl made, whose client
 * IDs are `openshift` and `sts.amazonaws.com`), not expired, for a role whose trust policy names the token's
 * subject; temporary credentials for the role's policy, else STS's own errors (`InvalidIdentityToken`,
 * `ExpiredTokenException`, `AccessDenied`) in its XML.
 */
import { randomUUID } from 'node:crypto';
import { XMLBuilder } from 'fast-xml-parser';
import type { AwsAccount } from '../clouds/aws-account.ts';
import { type IssuerKeys, verifyToken } from './sa-tokens.ts';
import type { CloudReply, CloudRequest } from './server.ts';

/** The IAM OIDC provider's client IDs (audiences), as ccoctl aws create-identity-provider registers them. */
export const AWS_OIDC_AUDIENCES = ['openshift', 'sts.amazonaws.com'];
const XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';
const SESSION_MS = 3_600_000;

const builder = new XMLBuilder({ ignoreAttributes: false, suppressEmptyNode: true });
const xml = (doc: unknown) => `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build(doc)}`;

function stsError(status: number, code: string, message: string): CloudReply {
  return {
    status,
    contentType: 'text/xml',
    body: xml({
      ErrorResponse: { '@_xmlns': XMLNS, Error: { Type: 'Sender', Code: code, Message: message }, RequestId: randomUUID() },
    }),
  };
}

export class StsAPI {
  private readonly account: AwsAccount;
  private readonly issuer: () => Promise<IssuerKeys>;
  /** Exchanges answered and refused, by STS error code (tests prove each refusal). */
  readonly refusals = new Map<string, number>();

  constructor(opts: { account: AwsAccount; issuer: () => Promise<IssuerKeys> }) {
    this.account = opts.account;
    this.issuer = opts.issuer;
  }

  handle = async (req: CloudRequest): Promise<CloudReply | undefined> => {
    if (req.method !== 'POST' || req.url.split('?')[0] !== '/') return undefined;
    const form = new URLSearchParams(req.body);
    if (form.get('Action') !== 'AssumeRoleWithWebIdentity') return undefined;
    const refuse = (status: number, code: string, message: string) => {
      this.refusals.set(code, (this.refusals.get(code) ?? 0) + 1);
      return stsError(status, code, message);
    };
    const roleArn = form.get('RoleArn') ?? '';
    const session = form.get('RoleSessionName') ?? '';
    if (!roleArn || !session || !form.get('WebIdentityToken'))
      return refuse(400, 'MissingParameter', 'The request must contain RoleArn, RoleSessionName and WebIdentityToken');
    const now = this.account.now();
    const verdict = verifyToken(form.get('WebIdentityToken') ?? '', await this.issuer(), now);
    if ('refused' in verdict) {
      if (verdict.refused === 'expired')
        return refuse(
          400,
          'ExpiredTokenException',
          `Token expired: current date/time ${Math.floor(now / 1000)} must be before the expiration date/time ${verdict.message.replace(/^.* at /, '')}`,
        );
      if (verdict.refused === 'issuer')
        return refuse(400, 'InvalidIdentityToken', 'No OpenIDConnect provider found in your account for the token issuer');
      return refuse(400, 'InvalidIdentityToken', "Couldn't verify the token's signature with the identity provider's keys");
    }
    if (!verdict.audiences.some((a) => AWS_OIDC_AUDIENCES.includes(a)))
      return refuse(400, 'InvalidIdentityToken', 'Incorrect token audience');
    if (!this.account.roleTrusts(roleArn, verdict.subject))
      return refuse(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    const c = this.account.issueSession(roleArn, verdict.subject, SESSION_MS, session);
    const roleName = roleArn.slice(roleArn.lastIndexOf('/') + 1);
    return {
      status: 200,
      contentType: 'text/xml',
      body: xml({
        AssumeRoleWithWebIdentityResponse: {
          '@_xmlns': XMLNS,
          AssumeRoleWithWebIdentityResult: {
            SubjectFromWebIdentityToken: verdict.subject,
            Audience: verdict.audiences[0],
            AssumedRoleUser: {
              Arn: `arn:aws:sts::${this.account.accountId}:assumed-role/${roleName}/${session}`,
              AssumedRoleId: `AROA:${session}`,
            },
            Credentials: {
              AccessKeyId: c.accessKeyId,
              SecretAccessKey: c.secretAccessKey,
              SessionToken: c.sessionToken,
              Expiration: new Date(c.expiresAt).toISOString(),
            },
            Provider: verdict.issuer,
          },
          ResponseMetadata: { RequestId: randomUUID() },
        },
      }),
    };
  };
}
