/**
 * The pure parts of the collector's workload identity: when a credential is traded again (time an input),
 * each cloud's exchange request as its SDK sends it, and each answer read (credentials, expiry, errors).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CloudAPIError } from '../../src/controllers/peerpods/cloudapi/http.ts';
import { assumeRoleWithWebIdentityBody, parseAssumeRoleResponse } from '../../src/controllers/peerpods/cloudapi/sts.ts';
import {
  CLIENT_ASSERTION_TYPE,
  clientAssertionBody,
  generateAccessTokenBody,
  googleStsBody,
  needsRefresh,
  parseExternalAccount,
  parseGenerateAccessToken,
  parseOAuthToken,
  REFRESH_MARGIN_MS,
  subjectToken,
} from '../../src/controllers/peerpods/cloudapi/token-exchange.ts';

const res = (status: number, body: string) => ({ status, headers: {}, body });
const thrown = (f: () => unknown): CloudAPIError => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof CloudAPIError);
    return e;
  }
  assert.fail('not thrown');
};

describe('refresh before expiry', () => {
  const expiresAt = Date.parse('2026-11-26T18:00:00Z');
  for (const [now, want] of [
    ['2026-11-26T17:00:00Z', false],
    ['2026-11-26T17:54:59Z', false],
    ['2026-11-26T17:55:00Z', true],
    ['2026-11-26T18:30:00Z', true],
  ] as const) {
    test(`valid until 18:00, at ${now.slice(11, 19)}: ${want ? 'traded again' : 'kept'}`, () => {
      assert.equal(needsRefresh(expiresAt, Date.parse(now)), want);
    });
  }
  test('nothing yet, or an unreadable expiry: traded', () => {
    assert.equal(needsRefresh(undefined, 0), true);
    assert.equal(needsRefresh(Number.NaN, 0), true);
    assert.equal(REFRESH_MARGIN_MS, 300_000);
  });
});

describe('AWS STS AssumeRoleWithWebIdentity', () => {
  test('the request: action, version, role, session name and the token', () => {
    const q = new URLSearchParams(assumeRoleWithWebIdentityBody('arn:aws:iam::123456789012:role/r', 'osc-podvm-collector', 'ey.J.wt'));
    assert.deepEqual(Object.fromEntries(q), {
      Action: 'AssumeRoleWithWebIdentity',
      Version: '2011-06-15',
      RoleArn: 'arn:aws:iam::123456789012:role/r',
      RoleSessionName: 'osc-podvm-collector',
      WebIdentityToken: 'ey.J.wt',
    });
  });
  test('the answer: key, secret, session token and expiry', () => {
    const body = `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>
      <Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>s3cr3t</SecretAccessKey><SessionToken>tok+en/=</SessionToken>
      <Expiration>2026-11-26T18:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`;
    assert.deepEqual(parseAssumeRoleResponse(res(200, body)), {
      accessKeyId: 'ASIAEXAMPLE',
      secretAccessKey: 's3cr3t',
      sessionToken: 'tok+en/=',
      expiresAt: Date.parse('2026-11-26T18:00:00Z'),
    });
  });
  test("STS's errors, and an answer without credentials", () => {
    const e = thrown(() =>
      parseAssumeRoleResponse(
        res(
          403,
          '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>',
        ),
      ),
    );
    assert.equal(e.code, 'AccessDenied');
    assert.equal(e.message, 'AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity');
    assert.equal(thrown(() => parseAssumeRoleResponse(res(200, '<AssumeRoleWithWebIdentityResponse/>'))).code, 'invalid_response');
    assert.equal(thrown(() => parseAssumeRoleResponse(res(502, 'bad gateway'))).code, 'HTTP502');
  });
});

describe('Azure: client assertion', () => {
  test('the request: client credentials with the token as the assertion, no secret', () => {
    const q = Object.fromEntries(new URLSearchParams(clientAssertionBody('cid', 'ey.J.wt', 'https://management.azure.com/.default')));
    assert.deepEqual(q, {
      grant_type: 'client_credentials',
      client_id: 'cid',
      client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: 'ey.J.wt',
      scope: 'https://management.azure.com/.default',
    });
    assert.equal(CLIENT_ASSERTION_TYPE, 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
  });
  test('the answer read at now; Entra ID errors thrown', () => {
    assert.deepEqual(parseOAuthToken(res(200, '{"access_token":"abc","expires_in":"3599"}'), 1000), {
      token: 'abc',
      expiresAt: 1000 + 3_599_000,
    });
    const e = thrown(() =>
      parseOAuthToken(res(400, '{"error":"invalid_client","error_description":"AADSTS700212: No matching federated identity record"}'), 0),
    );
    assert.equal(e.code, 'invalid_client');
    assert.match(e.message, /AADSTS700212/);
    assert.equal(thrown(() => parseOAuthToken(res(200, '{}'), 0)).code, 'invalid_response');
  });
});

describe('Google Cloud: external_account, STS exchange, generateAccessToken', () => {
  const text = JSON.stringify({
    type: 'external_account',
    audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q',
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: 'https://sts.googleapis.com/v1/token',
    service_account_impersonation_url:
      'https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@p.iam.gserviceaccount.com:generateAccessToken',
    credential_source: { file: '/var/run/secrets/openshift/serviceaccount/token', format: { type: 'text' } },
  });
  test('the configuration ccoctl writes is read; a broken one says what is missing and to rerun ccoctl', () => {
    const cfg = parseExternalAccount(text);
    assert.ok(!('error' in cfg));
    assert.equal(cfg.credential_source.file, '/var/run/secrets/openshift/serviceaccount/token');
    assert.match(cfg.service_account_impersonation_url ?? '', /:generateAccessToken$/);
    const broken = parseExternalAccount(JSON.stringify({ type: 'external_account', token_url: 'x' }));
    assert.ok('error' in broken);
    assert.match(broken.error, /missing audience, subject_token_type, credential_source.file\); rerun ccoctl gcp create-service-accounts/);
    assert.ok('error' in parseExternalAccount('{'));
  });
  test('the subject token: the file as text (trimmed), or a JSON field', () => {
    const cfg = parseExternalAccount(text);
    assert.ok(!('error' in cfg));
    assert.equal(subjectToken(cfg, 'ey.J.wt\n'), 'ey.J.wt');
    const json = { ...cfg, credential_source: { file: '/f', format: { type: 'json', subject_token_field_name: 'id_token' } } };
    assert.equal(subjectToken(json, '{"id_token":"ey.J"}'), 'ey.J');
  });
  test('the STS request (RFC 8693) and the impersonation request', () => {
    const cfg = parseExternalAccount(text);
    assert.ok(!('error' in cfg));
    assert.deepEqual(Object.fromEntries(new URLSearchParams(googleStsBody(cfg, 'ey.J.wt'))), {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      audience: cfg.audience,
      scope: 'https://www.googleapis.com/auth/cloud-platform',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      subject_token: 'ey.J.wt',
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    });
    assert.deepEqual(JSON.parse(generateAccessTokenBody()), {
      scope: ['https://www.googleapis.com/auth/cloud-platform'],
      lifetime: '3600s',
    });
  });
  test('generateAccessToken: token and expireTime; PERMISSION_DENIED thrown', () => {
    assert.deepEqual(parseGenerateAccessToken(res(200, '{"accessToken":"ya29.x","expireTime":"2026-11-26T18:00:00Z"}')), {
      token: 'ya29.x',
      expiresAt: Date.parse('2026-11-26T18:00:00Z'),
    });
    const e = thrown(() =>
      parseGenerateAccessToken(
        res(
          403,
          '{"error":{"code":403,"message":"Permission \'iam.serviceAccounts.getAccessToken\' denied","status":"PERMISSION_DENIED"}}',
        ),
      ),
    );
    assert.equal(e.code, 'PERMISSION_DENIED');
    assert.equal(thrown(() => parseGenerateAccessToken(res(200, '{"accessToken":"x"}'))).code, 'invalid_response');
  });
});
