/**
 * osc's EC2 client against the dev cluster's EC2 endpoint, over HTTPS: the client lists and terminates the
 * cluster's pod VMs with SigV4-signed Query API calls, and the simulated endpoint bites as EC2 does (no
 * signature, a key the account does not know, a wrong secret, a stale clock, an action outside the key's
 * policy), each refusal reaching the client as EC2's code and message.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLUSTER_UID_TAG } from '../../src/api/podvm-leaks.ts';
import { Ec2Inventory } from '../../src/controllers/peerpods/cloudapi/aws.ts';
import { CloudAPIError, CloudHttp } from '../../src/controllers/peerpods/cloudapi/http.ts';
import { Ec2API } from '../../src/devcluster/cloudapi/ec2.ts';
import { CloudAPIServer } from '../../src/devcluster/cloudapi/server.ts';
import { AwsAccount } from '../../src/devcluster/clouds/aws-account.ts';
import { podVMStore } from '../support/podvm-store.ts';

const CLUSTER = '6f1c0d0e-2b9a-4c1e-8d7f-0a1b2c3d4e5f';
const REGION = 'us-east-2';

describe('EC2: the client and the simulated endpoint', () => {
  const account = new AwsAccount();
  const admin = account.createUser('admin');
  const readOnly = account.createUser('reader', [{ effect: 'Allow', action: ['ec2:Describe*'], resource: '*' }]);
  const store = podVMStore();
  const { vms, regions } = store;
  const server = new CloudAPIServer();
  let now = Date.now();
  const add = (id: string, name: string, cluster: string, region = REGION) => {
    vms.set(id, { id, name, createdAt: '2026-11-25T10:00:00.000Z', tags: { Name: name, [CLUSTER_UID_TAG]: cluster, team: 'a' } });
    regions.set(id, region);
  };
  const client = (key: { accessKeyId: string; secretAccessKey: string }, region = REGION) =>
    new Ec2Inventory({ region, ...key, endpoint: { url: server.url, ca: server.ca } });
  const refusal = async (p: Promise<unknown>): Promise<CloudAPIError> => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(e instanceof CloudAPIError, `refused with an EC2 error, got ${String(e)}`);
    return e;
  };

  before(async () => {
    server.handle(new Ec2API({ account, vms: store, now: () => now }).handle);
    await server.start();
  });
  after(() => server.stop());

  test("lists the cluster's live pod VMs, with their names, tags and launch times; terminates one", async () => {
    add('i-0a1b2c3d4e5f60001', 'podvm-web-1a2b3c4d', CLUSTER);
    add('i-0a1b2c3d4e5f60002', 'podvm-db-5e6f7a8b', CLUSTER);
    add('i-0a1b2c3d4e5f60003', 'podvm-other-9c0d1e2f', 'another-cluster');
    add('i-0a1b2c3d4e5f60004', 'podvm-elsewhere-00000000', CLUSTER, 'eu-west-1');
    const ec2 = client(admin);
    const listed = await ec2.list(CLUSTER);
    assert.deepEqual(listed.map((v) => v.id).sort(), ['i-0a1b2c3d4e5f60001', 'i-0a1b2c3d4e5f60002']);
    const web = listed.find((v) => v.id === 'i-0a1b2c3d4e5f60001');
    assert.deepEqual(web, {
      id: 'i-0a1b2c3d4e5f60001',
      name: 'podvm-web-1a2b3c4d',
      createdAt: '2026-11-25T10:00:00.000Z',
      tags: { Name: 'podvm-web-1a2b3c4d', [CLUSTER_UID_TAG]: CLUSTER, team: 'a' },
    });
    await ec2.delete('i-0a1b2c3d4e5f60001');
    assert.ok(!vms.has('i-0a1b2c3d4e5f60001'));
    // Terminated: no longer listed (EC2 still shows it as terminated, which the state filter leaves out).
    assert.deepEqual(
      (await ec2.list(CLUSTER)).map((v) => v.id),
      ['i-0a1b2c3d4e5f60002'],
    );
    // Terminating it again, or an instance EC2 never had, is done: it is gone.
    await ec2.delete('i-0a1b2c3d4e5f60001');
    await ec2.delete('i-0a1b2c3d4e5f6ffff');
    ec2.close();
  });

  test('pages through more instances than one answer holds', async () => {
    for (let i = 0; i < 1200; i++) add(`i-0b${String(i).padStart(15, '0')}`, `podvm-p${i}-00000000`, 'paged');
    const ec2 = client(admin);
    assert.equal((await ec2.list('paged')).length, 1200);
    ec2.close();
  });

  test('bites: an unsigned request', async () => {
    const http = new CloudHttp({ url: server.url, ca: server.ca });
    const res = await http.request(new URL(`${server.url}/`), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=DescribeInstances&Version=2016-11-15',
    });
    http.close();
    assert.equal(res.status, 401);
    assert.match(res.body, /<Code>MissingAuthenticationToken<\/Code>/);
  });

  test('bites: a key the account does not know is AuthFailure', async () => {
    const e = await refusal(client({ accessKeyId: 'AKIAUNKNOWNKEY000001', secretAccessKey: 'x'.repeat(40) }).list(CLUSTER));
    assert.equal(e.code, 'AuthFailure');
    assert.equal(e.status, 401);
    assert.equal(e.message, 'AuthFailure: AWS was not able to validate the provided access credentials');
  });

  test('bites: a known key with the wrong secret is SignatureDoesNotMatch', async () => {
    const e = await refusal(
      client({ accessKeyId: admin.accessKeyId, secretAccessKey: `${admin.secretAccessKey.slice(1)}x` }).list(CLUSTER),
    );
    assert.equal(e.code, 'SignatureDoesNotMatch');
    assert.equal(e.status, 403);
  });

  test('bites: a request signed too long ago is RequestExpired', async () => {
    now = Date.now() + 6 * 60_000;
    try {
      const e = await refusal(client(admin).list(CLUSTER));
      assert.equal(e.code, 'RequestExpired');
    } finally {
      now = Date.now();
    }
  });

  test("bites: an action outside the key's policy is UnauthorizedOperation, and the VM stays", async () => {
    add('i-0a1b2c3d4e5f60009', 'podvm-kept-11111111', CLUSTER);
    const ec2 = client(readOnly);
    assert.ok(
      (await ec2.list(CLUSTER)).some((v) => v.id === 'i-0a1b2c3d4e5f60009'),
      'the reader may list',
    );
    const e = await refusal(ec2.delete('i-0a1b2c3d4e5f60009'));
    assert.equal(e.code, 'UnauthorizedOperation');
    assert.equal(e.status, 403);
    assert.match(
      e.message,
      /user\/reader is not authorized to perform: ec2:TerminateInstances on resource: arn:aws:ec2:us-east-2:123456789012:instance\/i-0a1b2c3d4e5f60009/,
    );
    assert.ok(vms.has('i-0a1b2c3d4e5f60009'));
    // A deleted key is refused from then on.
    account.deleteUser('reader');
    assert.equal((await refusal(ec2.list(CLUSTER))).code, 'AuthFailure');
    ec2.close();
  });

  test('bites: an action EC2 does not have is InvalidAction', async () => {
    const ec2 = client(admin);
    const e = await refusal(ec2.call('LaunchRockets', {}));
    assert.equal(e.code, 'InvalidAction');
    ec2.close();
  });
});
