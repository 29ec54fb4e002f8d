/**
 * The dev cluster's Azure tenant and Google Cloud project as judges of who may do what, through the calls
 * the simulated adaptor makes: the identities ccoctl makes for a Manual-mode cluster (a managed identity
 * with a federated credential; a service account the cluster's workload identity pool may impersonate), the
 * keys and service principals of the other modes, and each refusal the real clouds give. Each row bites.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AzureProviderSpec, CredentialsRequest, GCPProviderSpec } from '../../src/api/cloudcredential.ts';
import { STS_TOKEN_PATH } from '../../src/api/cloudcredential.ts';
import { CAA_SERVICE_ACCOUNT, PODVM_IMAGE_SERVICE_ACCOUNT } from '../../src/api/scc.ts';
import { azureAdaptorAuthority, gcpAdaptorAuthority } from '../../src/devcluster/clouds/adaptor-authority.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { ccoctlAzure, ccoctlGcp } from '../../src/devcluster/clouds/ccoctl.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { desiredCredentialsRequest } from '../../src/peerpods/credentials.ts';

const NS = 'openshift-sandboxed-containers-operator';
/** The simulators are not started here: no request reaches the Kubernetes client. */
const client = {} as KubeClient;
const request = (cloud: string) => desiredCredentialsRequest(NS, [CAA_SERVICE_ACCOUNT, PODVM_IMAGE_SERVICE_ACCOUNT], cloud);
/** A projected token of the adaptor's ServiceAccount (or another), with OpenShift's audience (or another). */
const token = (sa = CAA_SERVICE_ACCOUNT, audience = 'openshift') => ({ serviceAccount: `system:serviceaccount:${NS}:${sa}`, audience });

describe("Azure: who may do what (Entra ID's sign-in, Resource Manager's authorization)", () => {
  const azure = new SimulatedAzure({ client, infrastructureName: 'osc-dev-abcde' });
  const authority = azureAdaptorAuthority(azure);
  const data = ccoctlAzure(azure, request('azure') as CredentialsRequest<AzureProviderSpec>);
  const env = {
    AZURE_CLIENT_ID: data.azure_client_id ?? '',
    AZURE_TENANT_ID: data.azure_tenant_id ?? '',
    AZURE_FEDERATED_TOKEN_FILE: STS_TOKEN_PATH,
  };

  test("ccoctl's managed identity: the adaptor's token signs in and its custom role allows the request's actions, nothing more", () => {
    assert.equal(data.azure_federated_token_file, STS_TOKEN_PATH);
    assert.equal(authority.startup(env, { token: token() }), undefined);
    assert.equal(authority.create(env, { token: token() }, 'podvm-a-1'), undefined);
    assert.equal(authority.terminate(env, { token: token() }, 'podvm-a-1'), undefined);
    assert.equal(azure.tenant.allows(env.AZURE_CLIENT_ID, 'Microsoft.Compute/virtualMachines/write'), true);
    assert.equal(azure.tenant.allows(env.AZURE_CLIENT_ID, 'Microsoft.Authorization/roleAssignments/write'), false);
    assert.equal(azure.tenant.allows(env.AZURE_CLIENT_ID, 'Microsoft.Network/virtualNetworks/write'), false);
  });

  test('bites: a token of another ServiceAccount, or for another audience, has no federated credential (AADSTS70021)', () => {
    for (const t of [token('default'), token(CAA_SERVICE_ACCOUNT, 'sts.amazonaws.com')])
      assert.match(
        authority.create(env, { token: t }, 'podvm-b-1') ?? '',
        /^WorkloadIdentityCredential: authentication failed: AADSTS70021: /,
      );
  });

  test('bites: no token mounted, and a managed identity has no client secret (AADSTS7000215)', () => {
    assert.match(authority.startup(env, {}) ?? '', /^DefaultAzureCredential: failed to acquire a token/);
    const withSecret = { ...env, AZURE_CLIENT_SECRET: 'guessed' };
    assert.match(authority.startup(withSecret, {}) ?? '', /ClientSecretCredential: authentication failed: AADSTS7000215: /);
  });

  test("bites: a service principal's reset secret is refused; a Reader may read sizes but not create a VM (AuthorizationFailed)", () => {
    const sp = azure.createServicePrincipal('Reader');
    const spEnv = { AZURE_CLIENT_ID: sp.clientId, AZURE_CLIENT_SECRET: sp.clientSecret, AZURE_TENANT_ID: sp.tenantId };
    assert.equal(authority.startup(spEnv, {}), undefined);
    assert.match(
      authority.create(spEnv, {}, 'podvm-c-1') ?? '',
      /^PUT https:\/\/management\.azure\.com\/subscriptions\/.*\/virtualMachines\/podvm-c-1\nRESPONSE 403: 403 Forbidden\nERROR CODE: AuthorizationFailed\n.*'Microsoft\.Compute\/virtualMachines\/write'/,
    );
    azure.tenant.resetSecret(sp.clientId);
    assert.match(authority.startup(spEnv, {}) ?? '', /AADSTS7000215: Invalid client secret/);
    assert.match(
      authority.startup({ ...spEnv, AZURE_TENANT_ID: 'another-tenant' }, {}) ?? '',
      /AADSTS90002: Tenant 'another-tenant' not found/,
    );
  });
});

describe("Google Cloud: who may do what (OAuth2, STS and IAM Credentials, Compute Engine's IAM)", () => {
  const gcp = new SimulatedGcp({ client, infrastructureName: 'osc-dev-abcde' });
  const authority = gcpAdaptorAuthority(gcp);
  const config = ccoctlGcp(gcp, request('gcp') as CredentialsRequest<GCPProviderSpec>)['service_account.json'] ?? '';
  const env = {
    GCP_PROJECT_ID: gcp.account.projectId,
    GCP_ZONE: `${gcp.account.region}-a`,
    GCP_MACHINE_TYPE: 'e2-medium',
    GOOGLE_APPLICATION_CREDENTIALS: '/var/run/secrets/cloud-credentials/service_account.json',
  };
  const email = /serviceAccounts\/([^:]+):generateAccessToken/.exec(config)?.[1] ?? '';

  test("ccoctl's configuration: the pool trades the adaptor's token for the service account's, whose custom role is the request's", () => {
    const doc = JSON.parse(config) as { type: string; credential_source: { file: string } };
    assert.equal(doc.type, 'external_account');
    assert.equal(doc.credential_source.file, STS_TOKEN_PATH);
    const files = { applicationCredentials: config, token: token() };
    assert.equal(authority.startup(env, files), undefined);
    assert.equal(authority.create(env, files, 'podvm-a-1'), undefined);
    assert.equal(authority.terminate(env, files, 'podvm-a-1'), undefined);
    assert.equal(gcp.iam.allows(email, 'compute.instances.create'), true);
    assert.equal(gcp.iam.allows(email, 'compute.firewalls.create'), false);
    assert.equal(gcp.iam.allows(email, 'resourcemanager.projects.setIamPolicy'), false);
  });

  test('bites: a token of a ServiceAccount the pool may not impersonate with, one for another audience, none at all', () => {
    const files = (t?: ReturnType<typeof token>) => ({ applicationCredentials: config, ...(t ? { token: t } : {}) });
    assert.match(
      authority.create(env, files(token('default')), 'p') ?? '',
      /^impersonate: status code 403: .*iam\.serviceAccounts\.getAccessToken/,
    );
    assert.match(
      authority.create(env, files(token(CAA_SERVICE_ACCOUNT, 'other')), 'p') ?? '',
      /"invalid_grant".*does not match the expected audience/,
    );
    assert.match(
      authority.create(env, files(), 'p') ?? '',
      /failed to read the subject token from "\/var\/run\/secrets\/openshift\/serviceaccount\/token"/,
    );
  });

  test("bites: a configuration naming another pool is invalid_target; nothing to sign in with is ADC's error", () => {
    const other = config.replace(gcp.iam.poolAudience, gcp.iam.poolAudience.replace(gcp.iam.pool, 'another-pool'));
    assert.match(authority.create(env, { applicationCredentials: other, token: token() }, 'p') ?? '', /"invalid_target"/);
    assert.match(
      authority.startup({ GCP_PROJECT_ID: env.GCP_PROJECT_ID, GCP_ZONE: env.GCP_ZONE }, {}) ?? '',
      /could not find default credentials/,
    );
  });

  test('bites: a deleted key, or a key file whose private key is not the one issued, is invalid_grant; a viewer may not create', () => {
    const viewer = gcp.createServiceAccountKey('roles/viewer');
    const keyEnv = (k: string) => ({ ...env, GOOGLE_APPLICATION_CREDENTIALS: '', GCP_CREDENTIALS: k });
    assert.equal(authority.startup(keyEnv(viewer), {}), undefined);
    assert.match(
      authority.create(keyEnv(viewer), {}, 'podvm-v-1') ?? '',
      /^googleapi: Error 403: Required 'compute\.instances\.create' permission for 'projects\/.*\/instances\/podvm-v-1', forbidden$/,
    );
    const parsed = JSON.parse(viewer) as { private_key: string; client_email: string };
    const forged = JSON.stringify({
      ...parsed,
      private_key: (JSON.parse(gcp.createServiceAccountKey()) as { private_key: string }).private_key,
    });
    assert.match(authority.startup(keyEnv(forged), {}) ?? '', /invalid_grant/);
    gcp.iam.deleteKey(parsed.client_email);
    assert.match(authority.startup(keyEnv(viewer), {}) ?? '', /oauth2: "invalid_grant" "Invalid JWT Signature\."/);
  });
});
