/**
 * Where the leaked pod VM collector's credentials come from (pure): peer-pods-secret; else its own Secret
 * (ccoctl's workload identity: the operator's token file beside it; or keys); else the adaptor's long-lived
 * cco-secret; and the adaptor's workload identity, which does not trust the operator, named as such with the
 * ccoctl step that fixes it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { awsCredentialsFile, awsStsCredentialsFile } from '../../src/api/cloudcredential.ts';
import { listFailedConditionMessage } from '../../src/api/podvm-leaks.ts';
import type { Secret } from '../../src/kube/resources.ts';
import { collectorCredentials } from '../../src/peerpods/collector-credentials.ts';

const NS = 'openshift-sandboxed-containers-operator';
const secret = (name: string, stringData: Record<string, string>): Secret => ({ metadata: { name, namespace: NS }, stringData });
const ROLE = 'arn:aws:iam::123456789012:role/osc-collector';
const TENANT = '0d3c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';
const CLIENT = '1d3c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';
const external = JSON.stringify({
  type: 'external_account',
  audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q',
  subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
  token_url: 'https://sts.googleapis.com/v1/token',
  credential_source: { file: '/var/run/secrets/openshift/serviceaccount/token' },
});

describe('the collector signs in with', () => {
  test("AWS: its own role (ccoctl's credentials file) with the operator's token file", () => {
    const got = collectorCredentials({
      collectorSecret: secret('podvm-collector-cco-secret', { credentials: awsStsCredentialsFile(ROLE) }),
      ccoSecret: secret('cco-secret', { credentials: awsStsCredentialsFile('arn:aws:iam::123456789012:role/adaptor') }),
      cloud: 'aws',
      tokenFile: '/tmp/token',
    });
    assert.deepEqual(got, { creds: { AWS_ROLE_ARN: ROLE, AWS_WEB_IDENTITY_TOKEN_FILE: '/tmp/token' }, from: 'podvm-collector-cco-secret' });
  });

  test("Azure: its own managed identity; the default token file is the operator pod's mount", () => {
    const got = collectorCredentials({
      collectorSecret: secret('podvm-collector-cco-secret', {
        azure_client_id: CLIENT,
        azure_tenant_id: TENANT,
        azure_federated_token_file: '/var/run/secrets/openshift/serviceaccount/token',
      }),
      cloud: 'azure',
    });
    assert.deepEqual(got, {
      creds: {
        AZURE_CLIENT_ID: CLIENT,
        AZURE_TENANT_ID: TENANT,
        AZURE_FEDERATED_TOKEN_FILE: '/var/run/secrets/openshift/serviceaccount/token',
      },
      from: 'podvm-collector-cco-secret',
    });
  });

  test('Google Cloud: its own external_account configuration', () => {
    const got = collectorCredentials({
      collectorSecret: secret('podvm-collector-cco-secret', { 'service_account.json': external }),
      cloud: 'gcp',
      tokenFile: '/tmp/token',
    });
    assert.ok('creds' in got);
    assert.equal(got.creds.GCP_EXTERNAL_ACCOUNT, external);
    assert.equal(got.creds.GCP_TOKEN_FILE, '/tmp/token');
  });

  test("peer-pods-secret first; the adaptor's minted keys while the collector has no Secret", () => {
    const admin = collectorCredentials({
      adminSecret: secret('peer-pods-secret', { AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's' }),
      collectorSecret: secret('podvm-collector-cco-secret', { credentials: awsStsCredentialsFile(ROLE) }),
      cloud: 'aws',
    });
    assert.deepEqual(admin, { creds: { AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's' }, from: 'peer-pods-secret' });
    const minted = collectorCredentials({
      ccoSecret: secret('cco-secret', {
        aws_access_key_id: 'AKIA2',
        aws_secret_access_key: 's',
        credentials: awsCredentialsFile('AKIA2', 's'),
      }),
      cloud: 'aws',
    });
    assert.deepEqual(minted, { creds: { AWS_ACCESS_KEY_ID: 'AKIA2', AWS_SECRET_ACCESS_KEY: 's' }, from: 'cco-secret' });
  });

  test("the adaptor's workload identity alone: unavailable, naming the collector's request and ccoctl", () => {
    const got = collectorCredentials({
      ccoSecret: secret('cco-secret', { azure_client_id: CLIENT, azure_tenant_id: TENANT, azure_federated_token_file: '/var/run/t' }),
      cloud: 'azure',
    });
    assert.ok('unavailable' in got);
    assert.match(
      got.unavailable,
      /trusts the adaptor's ServiceAccounts only: run ccoctl azure create-managed-identities with CredentialsRequest openshift-sandboxed-containers-azure-podvm-collector .* apply the Secret podvm-collector-cco-secret/,
    );
  });

  test('a collector Secret of no form the cloud knows, or a broken one, says so', () => {
    const none = collectorCredentials({ collectorSecret: secret('podvm-collector-cco-secret', { other: 'x' }), cloud: 'aws' });
    assert.ok('unavailable' in none);
    assert.match(none.unavailable, /Secret podvm-collector-cco-secret holds neither/);
    const broken = collectorCredentials({
      collectorSecret: secret('podvm-collector-cco-secret', {
        azure_client_id: 'nope',
        azure_tenant_id: TENANT,
        azure_federated_token_file: '/t',
      }),
      cloud: 'azure',
    });
    assert.ok('unavailable' in broken);
    assert.match(broken.unavailable, /azure_client_id is not a UUID/);
  });
});

describe('the condition when the cloud refuses the list: the fix by the kind of refusal', () => {
  const rows: [string, RegExp][] = [
    [
      'AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity',
      /rerun ccoctl with the collector's CredentialsRequest .*osc-controller-manager/,
    ],
    ["invalid_client: AADSTS700212: No matching federated identity record found for presented assertion audience 'x'.", /rerun ccoctl/],
    ["PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied", /rerun ccoctl/],
    ['UnauthorizedOperation: You are not authorized to perform this operation.', /give the identity permission to list and delete pod VMs/],
    ["forbidden: Required 'compute.instances.list' permission", /give the identity permission/],
    ['connect ECONNREFUSED 10.0.0.1:443', /check that the cloud's API is reachable/],
  ];
  for (const [error, fix] of rows) {
    test(error.slice(0, 60), () => {
      const m = listFailedConditionMessage(error, 'podvm-collector-cco-secret');
      assert.match(m, /^osc cannot list the cluster's pod VMs with the credentials of podvm-collector-cco-secret/);
      assert.ok(m.includes(error));
      assert.match(m, fix);
    });
  }
});
