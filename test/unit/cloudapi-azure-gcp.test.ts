/**
 * osc's Azure and Google Cloud clients against the dev cluster's endpoints, over HTTPS: each lists the
 * cluster's pod VMs and deletes one with a token it got the cloud's way (Entra ID client credentials; a
 * JWT signed with the service account key), and each simulated endpoint bites as the cloud does (an unknown
 * application or key, a wrong secret or signature, a token it never issued, a role that may not delete),
 * the refusal reaching the client in the cloud's words.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLUSTER_UID_TAG } from '../../src/api/podvm-leaks.ts';
import { ArmInventory } from '../../src/controllers/peerpods/cloudapi/azure.ts';
import { GceInventory, type ServiceAccountKey } from '../../src/controllers/peerpods/cloudapi/gcp.ts';
import { CloudAPIError, CloudHttp } from '../../src/controllers/peerpods/cloudapi/http.ts';
import { openInventory } from '../../src/controllers/peerpods/cloudapi/index.ts';
import { ArmAPI } from '../../src/devcluster/cloudapi/arm.ts';
import { GceAPI } from '../../src/devcluster/cloudapi/gce.ts';
import { CloudAPIServer } from '../../src/devcluster/cloudapi/server.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { podVMStore } from '../support/podvm-store.ts';

const CLUSTER = '0d3c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';
/** The simulators are not started here: no request reaches the Kubernetes client. */
const client = {} as KubeClient;

async function refusal(p: Promise<unknown>): Promise<CloudAPIError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(e instanceof CloudAPIError, `refused in the cloud's words, got ${String(e)}`);
  return e;
}

describe('Azure: the client and the simulated Entra ID and Resource Manager', () => {
  const azure = new SimulatedAzure({ client, infrastructureName: 'osc-dev-abcde' });
  const a = azure.account;
  const vms = podVMStore();
  const server = new CloudAPIServer();
  const contributor = azure.createServicePrincipal();
  const reader = azure.createServicePrincipal('Reader');
  const vmID = (name: string, rg = a.resourceGroup) =>
    `/subscriptions/${a.subscriptionId}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachines/${name}`;
  const add = (name: string, cluster: string, rg?: string) => {
    const id = vmID(name, rg);
    vms.vms.set(id, { id, name, createdAt: '2026-11-25T10:00:00.0000000+00:00', tags: { [CLUSTER_UID_TAG]: cluster } });
    vms.regions.set(id, a.region);
  };
  const inventory = (sp: { clientId: string; clientSecret: string; tenantId: string }) =>
    new ArmInventory({
      ...sp,
      subscriptionId: a.subscriptionId,
      resourceGroup: a.resourceGroup,
      endpoint: { url: server.url, ca: server.ca },
    });

  before(async () => {
    server.handle(new ArmAPI({ azure, vms }).handle);
    await server.start();
  });
  after(() => server.stop());

  test("lists the resource group's VMs tagged with the cluster, through pages, and deletes one", async () => {
    add('podvm-web-1a2b3c4d', CLUSTER);
    add('podvm-other-5e6f7a8b', 'another-cluster');
    add('podvm-elsewhere-9c0d1e2f', CLUSTER, 'another-rg');
    for (let i = 0; i < 150; i++) add(`podvm-p${i}-00000000`, 'paged');
    const arm = inventory(contributor);
    assert.equal((await arm.list('paged')).length, 150);
    assert.deepEqual(await arm.list(CLUSTER), [
      {
        id: vmID('podvm-web-1a2b3c4d'),
        name: 'podvm-web-1a2b3c4d',
        createdAt: '2026-11-25T10:00:00.0000000+00:00',
        tags: { [CLUSTER_UID_TAG]: CLUSTER },
      },
    ]);
    await arm.delete(vmID('podvm-web-1a2b3c4d'));
    assert.deepEqual(await arm.list(CLUSTER), []);
    // Deleting what is gone is done (ARM answers 204).
    await arm.delete(vmID('podvm-web-1a2b3c4d'));
    arm.close();
  });

  test('bites: an application the directory does not have, a wrong secret, another tenant', async () => {
    const unknown = await refusal(inventory({ ...contributor, clientId: '00000000-0000-4000-8000-000000000000' }).list(CLUSTER));
    assert.equal(unknown.code, 'unauthorized_client');
    assert.match(unknown.message, /AADSTS700016: Application with identifier '00000000-0000-4000-8000-000000000000' was not found/);
    const wrong = await refusal(inventory({ ...contributor, clientSecret: 'not-the-secret' }).list(CLUSTER));
    assert.equal(wrong.code, 'invalid_client');
    assert.equal(wrong.status, 401);
    assert.match(wrong.message, /AADSTS7000215/);
    const tenant = await refusal(inventory({ ...contributor, tenantId: '11111111-1111-4111-8111-111111111111' }).list(CLUSTER));
    assert.match(tenant.message, /AADSTS90002: Tenant '11111111-1111-4111-8111-111111111111' not found/);
  });

  test('bites: Resource Manager without a token, or with one Entra ID never issued', async () => {
    const http = new CloudHttp({ url: server.url, ca: server.ca });
    const path = `${server.url}/subscriptions/${a.subscriptionId}/resourceGroups/${a.resourceGroup}/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01`;
    const none = await http.request(new URL(path), { method: 'GET', headers: {} });
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.body).error.code, 'AuthenticationFailed');
    const forged = await http.request(new URL(path), { method: 'GET', headers: { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' } });
    assert.equal(forged.status, 401);
    assert.equal(JSON.parse(forged.body).error.code, 'InvalidAuthenticationToken');
    http.close();
  });

  test('bites: a Reader may list but not delete (AuthorizationFailed), and the VM stays', async () => {
    add('podvm-kept-11111111', CLUSTER);
    const arm = inventory(reader);
    assert.equal((await arm.list(CLUSTER)).length, 1);
    const e = await refusal(arm.delete(vmID('podvm-kept-11111111')));
    assert.equal(e.code, 'AuthorizationFailed');
    assert.equal(e.status, 403);
    assert.match(e.message, /does not have authorization to perform action 'Microsoft.Compute\/virtualMachines\/delete'/);
    assert.ok(vms.vms.has(vmID('podvm-kept-11111111')));
    arm.close();
  });

  test('bites: a subscription or resource group the account does not have', async () => {
    const other = new ArmInventory({
      ...contributor,
      subscriptionId: a.subscriptionId,
      resourceGroup: 'nope',
      endpoint: { url: server.url, ca: server.ca },
    });
    assert.equal((await refusal(other.list(CLUSTER))).code, 'ResourceGroupNotFound');
  });
});

describe('Google Cloud: the client and the simulated OAuth2 and Compute Engine', () => {
  const gcp = new SimulatedGcp({ client, infrastructureName: 'osc-dev-abcde' });
  const zone = `${gcp.account.region}-a`;
  const vms = podVMStore();
  const server = new CloudAPIServer();
  const editor = JSON.parse(gcp.createServiceAccountKey()) as ServiceAccountKey & { project_id: string };
  const viewer = JSON.parse(gcp.createServiceAccountKey('roles/viewer')) as ServiceAccountKey;
  const add = (name: string, labels: Record<string, string>, where = zone) => {
    vms.vms.set(name, { id: name, name, createdAt: '2026-11-25T02:00:00.000-08:00', tags: labels });
    vms.regions.set(name, where);
  };
  const inventory = (key: ServiceAccountKey, project = gcp.account.projectId) =>
    new GceInventory({ key, project, zone, endpoint: { url: server.url, ca: server.ca } });

  before(async () => {
    server.handle(new GceAPI({ gcp, vms }).handle);
    await server.start();
  });
  after(() => server.stop());

  test("lists the zone's instances labelled with the cluster, through pages, and deletes one", async () => {
    add('podvm-web-1a2b3c4d', { [CLUSTER_UID_TAG]: CLUSTER });
    add('podvm-other-5e6f7a8b', { [CLUSTER_UID_TAG]: 'another-cluster' });
    // What the adaptor makes on Google Cloud: no labels (its TAGS are bound resource manager tags).
    add('podvm-unlabelled-9c0d1e2f', {});
    add('podvm-elsewhere-00000000', { [CLUSTER_UID_TAG]: CLUSTER }, `${gcp.account.region}-b`);
    for (let i = 0; i < 520; i++) add(`podvm-p${i}-00000000`, { [CLUSTER_UID_TAG]: 'paged' });
    // Opened as the operator opens it, from peer-pods-cm and peer-pods-secret's key file.
    const opened = await openInventory(
      'gcp',
      { GCP_PROJECT_ID: gcp.account.projectId, GCP_ZONE: zone },
      { GCP_CREDENTIALS: JSON.stringify(editor) },
      { url: server.url, ca: server.ca },
    );
    assert.ok('inventory' in opened);
    const gce = opened.inventory;
    assert.equal((await gce.list('paged')).length, 520);
    assert.deepEqual(await gce.list(CLUSTER), [
      {
        id: 'podvm-web-1a2b3c4d',
        name: 'podvm-web-1a2b3c4d',
        createdAt: '2026-11-25T02:00:00.000-08:00',
        tags: { [CLUSTER_UID_TAG]: CLUSTER },
      },
    ]);
    await gce.delete('podvm-web-1a2b3c4d');
    assert.deepEqual(await gce.list(CLUSTER), []);
    await gce.delete('podvm-web-1a2b3c4d');
    gce.close();
  });

  test('bites: a key the project never issued, or a JWT signed with another key, is invalid_grant', async () => {
    const stranger = JSON.parse(
      new SimulatedGcp({ client, infrastructureName: 'osc-dev-other' }).createServiceAccountKey(),
    ) as ServiceAccountKey;
    const e = await refusal(inventory(stranger).list(CLUSTER));
    assert.equal(e.code, 'invalid_grant');
    assert.equal(e.message, 'invalid_grant: Invalid JWT Signature.');
    // The project's key ID, another key's signature.
    const forged = await refusal(inventory({ ...editor, private_key: stranger.private_key }).list(CLUSTER));
    assert.equal(forged.message, 'invalid_grant: Invalid JWT Signature.');
    // A deleted key is refused from then on.
    const deleted = JSON.parse(gcp.createServiceAccountKey()) as ServiceAccountKey;
    gcp.deleteServiceAccountKey(deleted.private_key_id);
    assert.equal((await refusal(inventory(deleted).list(CLUSTER))).code, 'invalid_grant');
  });

  test('bites: Compute Engine without a token, or with one never issued', async () => {
    const http = new CloudHttp({ url: server.url, ca: server.ca });
    const path = `${server.url}/compute/v1/projects/${gcp.account.projectId}/zones/${zone}/instances`;
    const none = await http.request(new URL(path), { method: 'GET', headers: {} });
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.body).error.status, 'UNAUTHENTICATED');
    const forged = await http.request(new URL(path), { method: 'GET', headers: { authorization: 'Bearer ya29.forged' } });
    assert.equal(forged.status, 401);
    http.close();
  });

  test('bites: a viewer may list but not delete (compute.instances.delete), and the VM stays', async () => {
    add('podvm-kept-11111111', { [CLUSTER_UID_TAG]: CLUSTER });
    const gce = inventory(viewer);
    assert.equal((await gce.list(CLUSTER)).length, 1);
    const e = await refusal(gce.delete('podvm-kept-11111111'));
    assert.equal(e.code, 'forbidden');
    assert.equal(e.status, 403);
    assert.match(
      e.message,
      /Required 'compute.instances.delete' permission for 'projects\/osc-dev-abcde-project\/zones\/us-central1-a\/instances\/podvm-kept-11111111'/,
    );
    assert.ok(vms.vms.has('podvm-kept-11111111'));
    gce.close();
  });

  test('bites: a project the account does not have is notFound', async () => {
    const e = await refusal(inventory(editor, 'someone-elses-project').list(CLUSTER));
    assert.equal(e.code, 'notFound');
    assert.equal(e.status, 404);
  });
});
