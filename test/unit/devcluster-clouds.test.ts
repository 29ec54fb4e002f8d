/**
 * What the dev cluster's simulated Azure and Google Cloud refuse a pod VM image build with (their own API
 * errors), and what they accept: the account's values, credentials they issued, the job's parameters.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { azure } from '../../src/peerpods/clouds/azure/provider.ts';
import { gcp } from '../../src/peerpods/clouds/gcp/provider.ts';

/** The simulators are not started here: no request reaches the client. */
const client = {} as KubeClient;
const dir = mkdtempSync(join(tmpdir(), 'osc-clouds-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the simulated Azure', () => {
  const cloud = new SimulatedAzure({ client, infrastructureName: 'osc-dev-abcde' });
  const a = cloud.account;
  const sp = cloud.createServicePrincipal();
  const cm = {
    AZURE_SUBSCRIPTION_ID: a.subscriptionId,
    AZURE_RESOURCE_GROUP: a.resourceGroup,
    AZURE_REGION: a.region,
    AZURE_SUBNET_ID: a.subnetId,
    AZURE_NSG_ID: a.nsgId,
  };
  const secret = { AZURE_CLIENT_ID: sp.clientId, AZURE_CLIENT_SECRET: sp.clientSecret, AZURE_TENANT_ID: sp.tenantId };
  const env = { ...azure.image.creationEnv };

  test('its account is what the Infrastructure reports, and IDs osc accepts', () => {
    assert.deepEqual(cloud.infrastructureStatus(), {
      azure: { resourceGroupName: 'osc-dev-abcde-rg', networkResourceGroupName: 'osc-dev-abcde-rg', cloudName: 'AzurePublicCloud' },
    });
    assert.match(a.subnetId, /\/virtualNetworks\/osc-dev-abcde-vnet\/subnets\/osc-dev-abcde-worker-subnet$/);
    assert.equal(cloud.refusal(cm, secret, env), undefined);
  });

  const rows: [string, Record<string, string>, Record<string, string>, Record<string, string>, RegExp][] = [
    ['another tenant', cm, { ...secret, AZURE_TENANT_ID: '00000000-0000-0000-0000-000000000000' }, env, /^AADSTS90002: Tenant/],
    ['an application it never made', cm, { ...secret, AZURE_CLIENT_ID: '00000000-0000-0000-0000-000000000001' }, env, /^AADSTS700016: /],
    ['a wrong client secret', cm, { ...secret, AZURE_CLIENT_SECRET: 'nope' }, env, /^AADSTS7000215: Invalid client secret/],
    [
      'another subscription',
      { ...cm, AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000002' },
      secret,
      env,
      /^SubscriptionNotFound: /,
    ],
    [
      'a resource group it does not have',
      { ...cm, AZURE_RESOURCE_GROUP: 'other-rg' },
      secret,
      env,
      /^ResourceGroupNotFound: Resource group 'other-rg'/,
    ],
    [
      'a subnet it does not have',
      { ...cm, AZURE_SUBNET_ID: a.subnetId.replace('worker', 'master') },
      secret,
      env,
      /^InvalidResourceReference: /,
    ],
    ['no gallery parameter', cm, secret, { IMAGE_DEFINITION_NAME: 'podvm_image' }, /^InvalidParameter: IMAGE_GALLERY_NAME/],
  ];
  for (const [name, c, s, e, error] of rows) {
    test(`refuses ${name}`, () => assert.match(cloud.refusal(c, s, e) ?? '', error));
  }

  test("osc start hands out the account's values and a service principal it accepts, readable by the owner only", async () => {
    const lines = await cloud.handOut(dir);
    const path = join(dir, 'azure-service-principal.env');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const issued = Object.fromEntries(
      readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split('=') as [string, string]),
    );
    assert.equal(cloud.refusal(cm, issued, env), undefined);
    assert.ok(lines.some((l) => l.includes(`AZURE_SUBSCRIPTION_ID=${a.subscriptionId}`)));
    assert.ok(lines.some((l) => l.endsWith(`--from-env-file ${path}`)));
    assert.ok(!lines.join('\n').includes(issued.AZURE_CLIENT_SECRET ?? '-'), 'the secret stays in the file');
  });
});

describe('the simulated Google Cloud', () => {
  const cloud = new SimulatedGcp({ client, infrastructureName: 'osc-dev-abcde' });
  const key = cloud.createServiceAccountKey();
  const cm = { GCP_PROJECT_ID: cloud.account.projectId, GCP_ZONE: `${cloud.account.region}-b`, GCP_NETWORK: 'global/networks/default' };
  const env = { ...gcp.image.creationEnv };

  test('its project is what the Infrastructure reports, and its key files are ones osc accepts', () => {
    assert.deepEqual(cloud.infrastructureStatus(), { gcp: { projectID: 'osc-dev-abcde-project', region: 'us-central1' } });
    assert.equal(gcp.secret.checkValue?.('GCP_CREDENTIALS', key), undefined);
    assert.equal(cloud.refusal(cm, { GCP_CREDENTIALS: key }, env), undefined);
    assert.equal(cloud.refusal({ ...cm, GCP_NETWORK: 'default' }, { GCP_CREDENTIALS: key }, env), undefined);
  });

  const other = new SimulatedGcp({ client, infrastructureName: 'osc-dev-other' }).createServiceAccountKey();
  const rows: [string, Record<string, string>, string, Record<string, string>, RegExp][] = [
    ['a key that is not JSON', cm, 'AIza', env, /^google: error getting credentials using GCP_CREDENTIALS: /],
    ["a user's credentials", cm, JSON.stringify({ type: 'authorized_user' }), env, /unknown credential type/],
    ['a key another project issued', cm, other, env, /^oauth2: "invalid_grant"/],
    [
      'another project',
      { ...cm, GCP_PROJECT_ID: 'someone-else' },
      key,
      env,
      /^googleapi: Error 404: The resource 'projects\/someone-else' was not found/,
    ],
    ['an unknown zone', { ...cm, GCP_ZONE: 'mars-north1-a' }, key, env, /Unknown zone/],
    ['a network it does not have', { ...cm, GCP_NETWORK: 'global/networks/vpc-9' }, key, env, /networks\/vpc-9' was not found/],
    ['no image name prefix', cm, key, {}, /Invalid value for field 'resource.name'/],
  ];
  for (const [name, c, credentials, e, error] of rows) {
    test(`refuses ${name}`, () => assert.match(cloud.refusal(c, { GCP_CREDENTIALS: credentials }, e) ?? '', error));
  }

  test('osc start hands out the project and a key file it accepts, readable by the owner only', async () => {
    const lines = await cloud.handOut(dir);
    const path = join(dir, 'gcp-service-account-key.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(cloud.refusal(cm, { GCP_CREDENTIALS: readFileSync(path, 'utf8') }, env), undefined);
    assert.ok(lines.some((l) => l.includes(`GCP_PROJECT_ID=${cloud.account.projectId} GCP_ZONE=us-central1-a`)));
    assert.ok(lines.some((l) => l.endsWith(`--from-file GCP_CREDENTIALS=${path}`)));
  });
});
