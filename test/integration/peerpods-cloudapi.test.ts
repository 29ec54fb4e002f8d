/**
 * Leaked pod VMs through the cloud's own API, on the dev cluster: osc's cloud clients (as `osc run` has
 * them, pointed at the simulated cloud's HTTPS endpoint) list and delete pod VMs with the adaptor's
 * credentials, and what the cloud refuses comes back as the cloud's error in the PodVMDeletionFailed
 * condition.
 *
 * AWS: the adaptor DaemonSet is given the cluster's tag in TAGS (besides peer-pods-cm's), so its VMs carry
 * it; a key whose IAM policy lacks ec2:TerminateInstances leaves a leaked VM in place with EC2's
 * UnauthorizedOperation in the condition, and a key that may delete, put in peer-pods-secret, deletes it.
 * Azure: a leaked VM goes through Resource Manager; a service principal whose role may create pod VMs but
 * not delete them is AuthorizationFailed (a Reader could not even create one: the adaptor's calls are checked too).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  OPERATOR_NAMESPACE,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../src/api/names.ts';
import { CLUSTER_UID_TAG, PODVM_DELETION_FAILED } from '../../src/api/podvm-leaks.ts';
import type { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ConfigMaps, DaemonSets, Namespaces, Nodes, type Pod, Pods, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import { PEER_PODS_AZURE_PERMISSIONS } from '../../src/peerpods/clouds/azure/credentials.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const APP = 'cloudapi-demo';

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: APP },
  spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
});

/** Secret, ConfigMap, KataConfig; then kata-remote and the workers' pod VM capacity, and the app namespace. */
async function install(dev: DevCluster, cm: Record<string, string>, secret: Record<string, string>): Promise<void> {
  const c = dev.client;
  await c.create(Secrets, { apiVersion: 'v1', kind: 'Secret', metadata: { name: PEER_PODS_SECRET, namespace: NS }, stringData: secret });
  await c.create(ConfigMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: PEER_PODS_CM, namespace: NS }, data: cm });
  await c.create(KataConfigs, {
    apiVersion: 'kataconfiguration.openshift.io/v1',
    kind: 'KataConfig',
    metadata: { name: 'example-kataconfig' },
    spec: { enablePeerPods: true },
  } as KataConfig);
  await waitFor(async () => (await c.find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS)) !== undefined, {
    timeoutMs: 300_000,
    message: 'kata-remote',
  });
  await waitFor(async () => (await c.list(Nodes)).items.filter((n) => n.status?.allocatable?.[PEER_POD_VM_RESOURCE]).length === 2, {
    timeoutMs: 120_000,
    message: 'both workers advertise kata.peerpods.io/vm',
  });
  await c.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP } });
  await waitForDefaultServiceAccount(c, APP);
}

/** A pod whose VM leaks: made while the adaptor is up, force-deleted while it is down. Answers the VM's ID. */
async function leak(dev: DevCluster, name: string): Promise<string> {
  const vms = dev.podVMs;
  if (!vms) throw new Error('no pod VMs');
  await dev.client.create(Pods, pod(name));
  const p = await waitFor(async () => {
    const found = await dev.client.get(Pods, name, APP);
    return vms.recorded(found.metadata.uid ?? '') ? found : undefined;
  });
  const id = vms.recorded(p.metadata.uid ?? '') ?? '';
  vms.setAdaptorDown(true);
  await dev.client.delete(Pods, name, { namespace: APP, gracePeriodSeconds: 0 });
  await waitFor(async () => (await dev.client.find(Pods, name, APP)) === undefined && vms.pods.get(`${APP}/${name}`) === undefined);
  vms.setAdaptorDown(false);
  return id;
}

/**
 * PodVMDeletionFailed once it names the VM `id`: a VM the adaptor itself could not terminate with the same
 * key (an earlier test's pod) may be named first.
 */
const condition = (dev: DevCluster, id: string) =>
  waitFor(
    async () =>
      (await dev.client.get(KataConfigs, 'example-kataconfig')).status?.conditions?.find(
        (x) => x.type === PODVM_DELETION_FAILED && x.status === 'True' && (x.message ?? '').includes(id),
      ),
    { timeoutMs: 60_000, message: `PodVMDeletionFailed naming ${id}` },
  );
const conditionGone = (dev: DevCluster) =>
  waitFor(
    async () =>
      (await dev.client.get(KataConfigs, 'example-kataconfig')).status?.conditions?.find((x) => x.type === PODVM_DELETION_FAILED) ===
      undefined,
    { message: 'the condition removed' },
  );

describe('AWS: leaked pod VMs through EC2, with the adaptor key and its IAM policy', () => {
  const cluster = useDevCluster({ workers: 2, platform: 'AWS', rebootMs: 300 });
  let running: RunningOperator;
  const dev = () => cluster.dev;

  before(async () => {
    running = await startOperator(dev(), { leakedVMs: { endpoint: dev().cloudAPI, graceMs: 1000, intervalMs: 500 } });
    // A key for pod VMs that may not terminate them (its policy lists what the adaptor needs, less that).
    const key = dev().awsAccount.createUser('podvms-no-terminate', [
      {
        effect: 'Allow',
        // What the adaptor calls when it starts (the image, the instance types) and to run a VM.
        action: ['ec2:RunInstances', 'ec2:CreateTags', 'ec2:DescribeInstances', 'ec2:DescribeImages', 'ec2:DescribeInstanceTypes'],
        resource: '*',
      },
    ]);
    await install(
      dev(),
      {
        CLOUD_PROVIDER: 'aws',
        PODVM_AMI_ID: 'ami-0123456789abcdef0',
        AWS_REGION: 'us-east-2',
        AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
        AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
        AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
        TAGS: 'team=payments,env=test',
      },
      { AWS_ACCESS_KEY_ID: key.accessKeyId, AWS_SECRET_ACCESS_KEY: key.secretAccessKey },
    );
  });
  after(() => running?.stop());

  test("the adaptor is given the cluster's tag besides peer-pods-cm's TAGS, and its VMs carry them", async () => {
    const uid = (await dev().client.get(Namespaces, 'kube-system')).metadata.uid ?? '';
    const ds = await waitFor(() => dev().client.find(DaemonSets, CAA_DAEMONSET, NS));
    const env = (ds.spec.template.spec.containers as { env?: { name: string; value?: string }[] }[])[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'TAGS')?.value, `team=payments,env=test,${CLUSTER_UID_TAG}=${uid}`);
    await dev().client.create(Pods, pod('tagged'));
    const vm = await waitFor(() => [...(dev().podVMs?.vms.values() ?? [])].find((v) => /^podvm-tagged-[0-9a-f]{8}$/.test(v.name)));
    assert.deepEqual(vm.tags, { Name: vm.name, team: 'payments', env: 'test', [CLUSTER_UID_TAG]: uid });
    await dev().client.delete(Pods, 'tagged', { namespace: APP, gracePeriodSeconds: 0 });
  });

  test("a key that may not terminate: EC2's UnauthorizedOperation is the condition; a key that may, and the VM goes", async () => {
    const vms = dev().podVMs;
    assert.ok(vms);
    const refusedBefore = dev().awsAccount.stats.refused;
    const id = await leak(dev(), 'leaky');
    const c = await condition(dev(), id);
    assert.match(
      c.message ?? '',
      new RegExp(
        `could not be deleted: (?:.*; )?${id} \\(UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/podvms-no-terminate is not authorized to perform: ec2:TerminateInstances on resource: arn:aws:ec2:us-east-2:123456789012:instance/${id}\\)`,
      ),
    );
    assert.ok(vms.vms.has(id), 'the VM stays');
    assert.ok(dev().awsAccount.stats.refused > refusedBefore, 'the account refused the call');
    // The administrator puts a key that may terminate instances into peer-pods-secret: tried again, deleted.
    const admin = dev().awsAccount.createUser('podvms-admin');
    await dev().client.patch(
      Secrets,
      PEER_PODS_SECRET,
      { stringData: { AWS_ACCESS_KEY_ID: admin.accessKeyId, AWS_SECRET_ACCESS_KEY: admin.secretAccessKey } },
      { namespace: NS },
    );
    await waitFor(() => !vms.vms.has(id), { timeoutMs: 60_000, message: 'the leaked VM deleted with the new key' });
    await conditionGone(dev());
  });
});

describe('Azure: leaked pod VMs through Resource Manager, with the service principal', () => {
  const cluster = useDevCluster({ workers: 2, platform: 'Azure', rebootMs: 300 });
  let running: RunningOperator;
  const dev = () => cluster.dev;
  const azure = () => dev().cloud as SimulatedAzure;

  before(async () => {
    running = await startOperator(dev(), { leakedVMs: { endpoint: dev().cloudAPI, graceMs: 1000, intervalMs: 500 } });
    const a = azure().account;
    // A principal for pod VMs that may not delete them: a custom role of the adaptor's actions less the deletes.
    const role = azure().tenant.createCustomRole(
      'podvms-no-delete',
      PEER_PODS_AZURE_PERMISSIONS.adaptor.filter((x) => !x.endsWith('/delete')),
    );
    const noDelete = azure().tenant.createServicePrincipal([role], 'podvms-no-delete');
    await install(
      dev(),
      {
        CLOUD_PROVIDER: 'azure',
        AZURE_SUBSCRIPTION_ID: a.subscriptionId,
        AZURE_REGION: a.region,
        AZURE_RESOURCE_GROUP: a.resourceGroup,
        AZURE_SUBNET_ID: a.subnetId,
        AZURE_NSG_ID: a.nsgId,
        AZURE_IMAGE_ID: `/subscriptions/${a.subscriptionId}/resourceGroups/${a.resourceGroup}/providers/Microsoft.Compute/galleries/podvms/images/podvm/versions/0.0.1`,
      },
      { AZURE_CLIENT_ID: noDelete.clientId, AZURE_CLIENT_SECRET: noDelete.clientSecret, AZURE_TENANT_ID: noDelete.tenantId },
    );
  });
  after(() => running?.stop());

  test("a principal that may not delete VMs is ARM's AuthorizationFailed in the condition; a Contributor's secret, and the VM goes", async () => {
    const vms = dev().podVMs;
    assert.ok(vms);
    const id = await leak(dev(), 'leaky');
    assert.match(
      id,
      /^\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/virtualMachines\/podvm-leaky-[0-9a-f]{8}$/,
    );
    const c = await condition(dev(), id);
    assert.match(
      c.message ?? '',
      /\(AuthorizationFailed: The client '[0-9a-f-]{36}' with object id '[0-9a-f-]{36}' does not have authorization to perform action 'Microsoft.Compute\/virtualMachines\/delete'/,
    );
    assert.ok(vms.vms.has(id), 'the VM stays');
    const sp = azure().createServicePrincipal();
    await dev().client.patch(
      Secrets,
      PEER_PODS_SECRET,
      { stringData: { AZURE_CLIENT_ID: sp.clientId, AZURE_CLIENT_SECRET: sp.clientSecret, AZURE_TENANT_ID: sp.tenantId } },
      { namespace: NS },
    );
    await waitFor(() => !vms.vms.has(id), { timeoutMs: 60_000, message: 'the leaked VM deleted with the Contributor' });
    await conditionGone(dev());
  });
});
