import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SCRUBBED, scrubLog } from '../../src/mustgather/scrub.ts';

describe('must-gather scrubs credentials from logs', () => {
  test('bearer tokens, keeping the scheme', () => {
    const out = scrubLog('GET /api/v1/nodes Authorization: Bearer sha256~AbC.d-e_f/g+h= 200\nauth="bearer abc123"');
    assert.equal(out, `GET /api/v1/nodes Authorization: Bearer ${SCRUBBED} 200\nauth="bearer ${SCRUBBED}"`);
  });

  test('JSON Web Tokens (ServiceAccount tokens) on their own', () => {
    const jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl_-x';
    assert.equal(scrubLog(`token from file: ${jwt} used`), `token from file: ${SCRUBBED} used`);
  });

  test('AWS access key ids and secret access keys', () => {
    const out = scrubLog('AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY');
    assert.equal(out, `AWS_ACCESS_KEY_ID=${SCRUBBED} aws_secret_access_key=${SCRUBBED}`);
    assert.equal(scrubLog('key ASIAY34FZKBOKMUTVV7A in use'), `key ${SCRUBBED} in use`);
  });

  test('passwords and other secrets in key=value, key: value and JSON', () => {
    assert.equal(scrubLog('connecting with password=hunter2 user=admin'), `connecting with password=${SCRUBBED} user=admin`);
    assert.equal(scrubLog('db_passwd: "s3cr3t" host: db'), `db_passwd: ${SCRUBBED} host: db`);
    assert.equal(scrubLog('{"level":30,"clientSecret":"x\\"y","msg":"ok"}'), `{"level":30,"clientSecret":"${SCRUBBED}","msg":"ok"}`);
    assert.equal(scrubLog("API_KEY='abc def'"), `API_KEY=${SCRUBBED}`);
    assert.equal(scrubLog('url?user=a&pwd=p4ss&x=1'), `url?user=a&pwd=${SCRUBBED}&x=1`);
  });

  test('PEM private keys, whole blocks', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----';
    assert.equal(
      scrubLog(`key:\n${pem}\nnext line`),
      `key:\n-----BEGIN RSA PRIVATE KEY----- ${SCRUBBED} -----END RSA PRIVATE KEY-----\nnext line`,
    );
    assert.equal(
      scrubLog('-----BEGIN PRIVATE KEY-----\ncut off at the tail'),
      `-----BEGIN PRIVATE KEY----- ${SCRUBBED} -----END PRIVATE KEY-----`,
    );
  });

  test('ordinary log lines are left alone', () => {
    const line =
      '{"level":30,"msg":"became leader","tokenreviews":3,"secretName":"peer-pods-secret"} secretName=peer-pods-secret tokenFile=/var/run/secrets/token';
    assert.equal(scrubLog(line), line);
  });
});
