/**
 * The leaked pod VM collector's workload identity against the dev cluster's clouds, over HTTPS: osc's
 * clients trade a ServiceAccount token (a real RS256 JWT of a test issuer) for each cloud's short-lived
 * credentials (AWS STS AssumeRoleWithWebIdentity, Entra ID's client assertion, Google's STS exchange and
 * generateAccessToken), then list and delete pod VMs with them. Each simulated endpoint bites as the cloud
 * does: a token for the wrong audience, of a ServiceAccount the identity does not trust, expired, or signed
 * by another issuer; an identity without the list or the delete permission; expired temporary credentials.
 */
import assert from 'node:assert/strict';
import { createSign, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { STS_TOKEN_PATH } from '../../src/api/cloudcredential.ts';
import { CLUSTER_UID_TAG } from '../../src/api/podvm-leaks.ts';
import { Ec2Inventory } from '../../src/controllers/peerpods/cloudapi/aws.ts';
import { ArmInventory } from '../../src/controllers/peerpods/cloudapi/azure.ts';
import { GceInventory } from '../../src/controllers/peerpods/cloudapi/gcp.ts';
import { CloudAPIError } from '../../src/controllers/peerpods/cloudapi/http.ts';
import { openInventory } from '../../src/controllers/peerpods/cloudapi/index.ts';
import { parseExternalAccount } from '../../src/controllers/peerpods/cloudapi/token-exchange.ts';
import { ArmAPI } from '../../src/devcluster/cloudapi/arm.ts';
import { Ec2API } from '../../src/devcluster/cloudapi/ec2.ts';
import { GceAPI } from '../../src/devcluster/cloudapi/gce.ts';
import type { IssuerKeys } from '../../src/devcluster/cloudapi/sa-tokens.ts';
import { CloudAPIServer } from '../../src/devcluster/cloudapi/server.ts';
import { StsAPI } from '../../src/devcluster/cloudapi/sts.ts';
import { AwsAccount } from '../../src/devcluster/clouds/aws-account.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { COLLECTOR_AWS_ACTIONS } from '../../src/peerpods/clouds/aws/credentials.ts';
import { COLLECTOR_AZURE_PERMISSIONS } from '../../src/peerpods/clouds/azure/credentials.ts';
import { COLLECTOR_GCP_PERMISSIONS } from '../../src/peerpods/clouds/gcp/credentials.ts';
import { podVMStore } from '../support/podvm-store.ts';

const CLUSTER = '0d3c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';
const OPERATOR = 'system:serviceaccount:openshift-sandboxed-containers-operator:osc-controller-manager';
const OTHER = 'system:serviceaccount:openshift-sandboxed-containers-operator:osc-caa';
const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const client = {} as KubeClient;

/** A test issuer: its keys as a cloud reads them, and tokens it signs. */
function testIssuer() {
  const kid = randomBytes(8).toString('hex');
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keys: IssuerKeys = { issuer: ISSUER, keys: new Map<string, KeyObject>([[kid, pair.publicKey]]) };
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sign = (o: { sub?: string; aud?: string; expSeconds?: number; foreign?: boolean; iss?: string }) => {
    const now = Math.floor(Date.now() / 1000);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const head = b64({ alg: 'RS256', kid });
    const body = b64({
      iss: o.iss ?? ISSUER,
      sub: o.sub ?? OPERATOR,
      aud: [o.aud ?? 'openshift'],
      iat: now - 10,
      exp: now + (o.expSeconds ?? 3600),
    });
    const sig = createSign('RSA-SHA256')
      .update(`${head}.${body}`)
      .sign(o.foreign ? other.privateKey : pair.privateKey);
    return `${head}.${body}.${sig.toString('base64url')}`;
  };
  return { keys, sign };
}

const dir = mkdtempSync(join(tmpdir(), 'osc-wi-'));
let n = 0;
/** A token file as the kubelet writes it. */
const tokenFile = (jwt: string) => {
  const f = join(dir, `token-${n++}`);
  writeFileSync(f, jwt);
  return f;
};

async function refusal(p: Promise<unknown>): Promise<CloudAPIError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(e instanceof CloudAPIError, `refused in the cloud's words, got ${String(e)}`);
  return e;
}

describe('AWS: AssumeRoleWithWebIdentity, then EC2 with the session token', () => {
  const issuer = testIssuer();
  const account = new AwsAccount();
  const vms = podVMStore();
  const server = new CloudAPIServer();
  const sts = new StsAPI({ account, issuer: async () => issuer.keys });
  const collector = account.createRole(
    'osc-podvm-collector',
    [{ effect: 'Allow', action: [...COLLECTOR_AWS_ACTIONS], resource: '*' }],
    [OPERATOR],
  );
  const listOnly = account.createRole('osc-list-only', [{ effect: 'Allow', action: ['ec2:DescribeInstances'], resource: '*' }], [OPERATOR]);
  const deleteOnly = account.createRole(
    'osc-delete-only',
    [{ effect: 'Allow', action: ['ec2:TerminateInstances'], resource: '*' }],
    [OPERATOR],
  );
  const adaptorOnly = account.createRole('osc-adaptor', [{ effect: 'Allow', action: ['ec2:*'], resource: '*' }], [OTHER]);
  const inv = (roleArn: string, jwt: string) =>
    new Ec2Inventory({
      region: 'us-east-2',
      webIdentity: { roleArn, tokenFile: tokenFile(jwt) },
      endpoint: { url: server.url, ca: server.ca },
    });
  const add = (id: string) => {
    vms.vms.set(id, { id, name: `podvm-${id}`, createdAt: '2026-11-25T10:00:00.000Z', tags: { [CLUSTER_UID_TAG]: CLUSTER } });
    vms.regions.set(id, 'us-east-2');
  };

  before(async () => {
    server.handle(sts.handle);
    server.handle(new Ec2API({ account, vms }).handle);
    await server.start();
  });
  after(() => server.stop());

  test('the role that trusts the operator lists and terminates, signed with the temporary key and X-Amz-Security-Token', async () => {
    add('i-0aaaaaaaaaaaaaaa1');
    // Opened as the operator opens it from the collector's Secret.
    const opened = await openInventory(
      'aws',
      { AWS_REGION: 'us-east-2' },
      { AWS_ROLE_ARN: collector, AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile(issuer.sign({})) },
      { url: server.url, ca: server.ca },
    );
    assert.ok('inventory' in opened);
    assert.deepEqual(
      (await opened.inventory.list(CLUSTER)).map((v) => v.id),
      ['i-0aaaaaaaaaaaaaaa1'],
    );
    await opened.inventory.delete('i-0aaaaaaaaaaaaaaa1');
    assert.ok(!vms.vms.has('i-0aaaaaaaaaaaaaaa1'));
    assert.deepEqual([...(account.allowed.get(collector) ?? [])].sort(), [...COLLECTOR_AWS_ACTIONS].sort());
    // sts.amazonaws.com is the IAM OIDC provider's other client ID.
    assert.deepEqual(await inv(collector, issuer.sign({ aud: 'sts.amazonaws.com' })).list(CLUSTER), []);
    opened.inventory.close();
  });

  test('bites: wrong audience, untrusted ServiceAccount, expired token, another issuer', async () => {
    const cases: [string, string, string][] = [
      [collector, issuer.sign({ aud: 'api://AzureADTokenExchange' }), 'InvalidIdentityToken'],
      [collector, issuer.sign({ sub: OTHER }), 'AccessDenied'],
      [adaptorOnly, issuer.sign({}), 'AccessDenied'],
      [collector, issuer.sign({ expSeconds: -60 }), 'ExpiredTokenException'],
      [collector, issuer.sign({ foreign: true }), 'InvalidIdentityToken'],
      [collector, issuer.sign({ iss: 'https://elsewhere.example' }), 'InvalidIdentityToken'],
    ];
    for (const [role, jwt, code] of cases) assert.equal((await refusal(inv(role, jwt).list(CLUSTER))).code, code, code);
    assert.ok((sts.refusals.get('AccessDenied') ?? 0) >= 2);
  });

  test('bites: a role without TerminateInstances or without DescribeInstances; temporary credentials past their expiry', async () => {
    add('i-0bbbbbbbbbbbbbbb2');
    const e = await refusal(inv(listOnly, issuer.sign({})).delete('i-0bbbbbbbbbbbbbbb2'));
    assert.equal(e.code, 'UnauthorizedOperation');
    assert.match(e.message, /assumed-role\/osc-list-only\/osc-podvm-collector is not authorized to perform: ec2:TerminateInstances/);
    assert.ok(vms.vms.has('i-0bbbbbbbbbbbbbbb2'));
    assert.equal((await refusal(inv(deleteOnly, issuer.sign({})).list(CLUSTER))).code, 'UnauthorizedOperation', 'no list permission');
    const c = inv(collector, issuer.sign({}));
    assert.equal((await c.list(CLUSTER)).length, 1);
    const clock = account.now;
    account.now = () => clock() + 2 * 3_600_000;
    try {
      assert.equal((await refusal(c.list(CLUSTER))).code, 'RequestExpired');
    } finally {
      account.now = clock;
    }
  });
});

describe('Azure: the client assertion to Entra ID, then Resource Manager', () => {
  const issuer = testIssuer();
  const azure = new SimulatedAzure({ client, infrastructureName: 'osc-dev-abcde' });
  const a = azure.account;
  const vms = podVMStore();
  const server = new CloudAPIServer();
  const role = azure.tenant.createCustomRole('collector', [...COLLECTOR_AZURE_PERMISSIONS]);
  const readOnly = azure.tenant.createCustomRole('reader-only', ['Microsoft.Compute/virtualMachines/read']);
  const identity = azure.tenant.createManagedIdentity('collector', [role], [OPERATOR]);
  const noDelete = azure.tenant.createManagedIdentity('no-delete', [readOnly], [OPERATOR]);
  const noList = azure.tenant.createManagedIdentity(
    'no-list',
    [azure.tenant.createCustomRole('delete-only', ['Microsoft.Compute/virtualMachines/delete'])],
    [OPERATOR],
  );
  const vmID = (name: string) =>
    `/subscriptions/${a.subscriptionId}/resourceGroups/${a.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${name}`;
  const add = (name: string) => {
    vms.vms.set(vmID(name), { id: vmID(name), name, createdAt: '2026-11-25T10:00:00Z', tags: { [CLUSTER_UID_TAG]: CLUSTER } });
    vms.regions.set(vmID(name), a.region);
  };
  const inv = (clientId: string, jwt: string) =>
    new ArmInventory({
      tenantId: a.tenantId,
      clientId,
      federatedTokenFile: tokenFile(jwt),
      subscriptionId: a.subscriptionId,
      resourceGroup: a.resourceGroup,
      endpoint: { url: server.url, ca: server.ca },
    });

  before(async () => {
    server.handle(new ArmAPI({ azure, vms, issuer: async () => issuer.keys }).handle);
    await server.start();
  });
  after(() => server.stop());

  test('the identity trusting the operator lists and deletes with its token as the client assertion', async () => {
    add('podvm-a-1a2b3c4d');
    const opened = await openInventory(
      'azure',
      { AZURE_SUBSCRIPTION_ID: a.subscriptionId, AZURE_RESOURCE_GROUP: a.resourceGroup },
      { AZURE_CLIENT_ID: identity, AZURE_TENANT_ID: a.tenantId, AZURE_FEDERATED_TOKEN_FILE: tokenFile(issuer.sign({})) },
      { url: server.url, ca: server.ca },
    );
    assert.ok('inventory' in opened);
    assert.deepEqual(
      (await opened.inventory.list(CLUSTER)).map((v) => v.name),
      ['podvm-a-1a2b3c4d'],
    );
    await opened.inventory.delete(vmID('podvm-a-1a2b3c4d'));
    assert.ok(!vms.vms.has(vmID('podvm-a-1a2b3c4d')));
    opened.inventory.close();
  });

  test('bites: wrong audience, untrusted ServiceAccount, expired token, another signer, no list or no delete permission', async () => {
    const cases: [string, string, RegExp][] = [
      [identity, issuer.sign({ aud: 'api://AzureADTokenExchange' }), /^invalid_client: AADSTS700212/],
      [identity, issuer.sign({ sub: OTHER }), /^invalid_request: AADSTS70021:/],
      [identity, issuer.sign({ expSeconds: -60 }), /^invalid_client: AADSTS700024/],
      [identity, issuer.sign({ foreign: true }), /^invalid_client: AADSTS700027/],
    ];
    for (const [id, jwt, re] of cases) assert.match((await refusal(inv(id, jwt).list(CLUSTER))).message, re);
    add('podvm-b-5e6f7a8b');
    const e = await refusal(inv(noDelete, issuer.sign({})).delete(vmID('podvm-b-5e6f7a8b')));
    assert.equal(e.code, 'AuthorizationFailed');
    assert.match(
      (await refusal(inv(noList, issuer.sign({})).list(CLUSTER))).message,
      /AuthorizationFailed: .*'Microsoft.Compute\/virtualMachines\/read'/,
    );
    assert.ok(vms.vms.has(vmID('podvm-b-5e6f7a8b')));
  });
});

describe('Google Cloud: STS token exchange and generateAccessToken, then Compute Engine', () => {
  const issuer = testIssuer();
  const gcp = new SimulatedGcp({ client, infrastructureName: 'osc-dev-abcde' });
  const zone = `${gcp.account.region}-a`;
  const vms = podVMStore();
  const server = new CloudAPIServer();
  const roleName = gcp.iam.createCustomRole('collector', [...COLLECTOR_GCP_PERMISSIONS]);
  const email = gcp.iam.createServiceAccount('osc-collector', [roleName]);
  gcp.iam.allowImpersonation(email, [OPERATOR]);
  const listOnly = gcp.iam.createServiceAccount('osc-list-only', [gcp.iam.createCustomRole('list', ['compute.instances.list'])]);
  gcp.iam.allowImpersonation(listOnly, [OPERATOR]);
  const deleteOnly = gcp.iam.createServiceAccount('osc-delete-only', [gcp.iam.createCustomRole('delete', ['compute.instances.delete'])]);
  gcp.iam.allowImpersonation(deleteOnly, [OPERATOR]);
  const config = (account: string, audience = gcp.iam.poolAudience) =>
    JSON.stringify({
      type: 'external_account',
      audience,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: 'https://sts.googleapis.com/v1/token',
      service_account_impersonation_url: `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${account}:generateAccessToken`,
      credential_source: { file: STS_TOKEN_PATH, format: { type: 'text' } },
    });
  const inv = (jwt: string, account = email, audience?: string) => {
    const cfg = parseExternalAccount(config(account, audience));
    assert.ok(!('error' in cfg));
    return new GceInventory({
      external: { config: cfg, tokenFile: tokenFile(jwt) },
      project: gcp.account.projectId,
      zone,
      endpoint: { url: server.url, ca: server.ca },
    });
  };
  const add = (name: string) => {
    vms.vms.set(name, { id: name, name, createdAt: '2026-11-25T02:00:00.000-08:00', tags: { [CLUSTER_UID_TAG]: CLUSTER } });
    vms.regions.set(name, zone);
  };

  before(async () => {
    server.handle(new GceAPI({ gcp, vms, issuer: async () => issuer.keys }).handle);
    await server.start();
  });
  after(() => server.stop());

  test('the pool principal of the operator impersonates the service account, lists and deletes', async () => {
    add('podvm-a-1a2b3c4d');
    const opened = await openInventory(
      'gcp',
      { GCP_PROJECT_ID: gcp.account.projectId, GCP_ZONE: zone },
      { GCP_EXTERNAL_ACCOUNT: config(email), GCP_TOKEN_FILE: tokenFile(issuer.sign({})) },
      { url: server.url, ca: server.ca },
    );
    assert.ok('inventory' in opened);
    assert.deepEqual(
      (await opened.inventory.list(CLUSTER)).map((v) => v.name),
      ['podvm-a-1a2b3c4d'],
    );
    await opened.inventory.delete('podvm-a-1a2b3c4d');
    assert.ok(!vms.vms.has('podvm-a-1a2b3c4d'));
    assert.deepEqual([...(gcp.iam.allowed.get(email) ?? [])].sort(), [...COLLECTOR_GCP_PERMISSIONS].sort());
    opened.inventory.close();
  });

  test('bites: wrong token audience, wrong pool audience, untrusted ServiceAccount, expired, another signer, no list, no delete', async () => {
    const cases: [GceInventory, RegExp][] = [
      [inv(issuer.sign({ aud: 'sts.amazonaws.com' })), /^invalid_grant: The audience in ID Token \[sts.amazonaws.com\]/],
      [
        inv(issuer.sign({}), email, '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/x/providers/y'),
        /^invalid_target/,
      ],
      [inv(issuer.sign({ sub: OTHER })), /^PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied/],
      [inv(issuer.sign({ expSeconds: -60 })), /^invalid_grant: ID Token expired/],
      [inv(issuer.sign({ foreign: true })), /^invalid_grant: Invalid ID Token signature/],
    ];
    for (const [i, re] of cases) assert.match((await refusal(i.list(CLUSTER))).message, re);
    add('podvm-b-5e6f7a8b');
    const e = await refusal(inv(issuer.sign({}), listOnly).delete('podvm-b-5e6f7a8b'));
    assert.equal(e.code, 'forbidden');
    assert.match((await refusal(inv(issuer.sign({}), deleteOnly).list(CLUSTER))).message, /Required 'compute.instances.list' permission/);
    assert.ok(vms.vms.has('podvm-b-5e6f7a8b'));
  });
});
