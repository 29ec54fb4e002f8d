/**
 * The peer pods procedure on Microsoft Azure, replayed with a real kubectl against the dev cluster
 * (`osc start --cloud Azure`: the Infrastructure reports Azure and its resource group, the simulated Azure
 * answers what az would and builds and deletes the pod VM image in a compute gallery).
 *
 * The steps are the product documentation's for Azure: look up the resource group from the Infrastructure
 * and the region, subnet, network security group and subscription with az; make a service principal and
 * put it in peer-pods-secret; create peer-pods-cm; create the KataConfig with enablePeerPods; the image job
 * fills AZURE_IMAGE_ID; run a kata-remote workload; uninstall. Along the way, what the cloud refuses (a
 * wrong client secret) and what osc refuses (a size list without the default) are shown as an
 * administrator meets them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, OPERATOR_NAMESPACE, PEER_PODS_CM, PODVM_IMAGE_CREATION_JOB } from '../../src/api/names.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { DaemonSets, Jobs, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { type StatusView, useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const APP_NS = 'peerpods-azure-demo';

const kataConfigYaml = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: example-kataconfig
spec:
  enablePeerPods: true
  logLevel: info
`;

/** The documented peer-pods-cm.yaml for Azure, with the looked-up values filled in and AZURE_IMAGE_ID left to the operator. */
const peerPodsCmYaml = (v: Record<string, string>) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: openshift-sandboxed-containers-operator
data:
  CLOUD_PROVIDER: "azure"
  VXLAN_PORT: "9000"
  AZURE_INSTANCE_SIZES: "Standard_B2als_v2,Standard_D2as_v5,Standard_D4as_v5,Standard_D2ads_v5"
  AZURE_INSTANCE_SIZE: "Standard_B2als_v2"
  AZURE_RESOURCE_GROUP: "${v.rg}"
  AZURE_REGION: "${v.region}"
  AZURE_SUBNET_ID: "${v.subnet}"
  AZURE_NSG_ID: "${v.nsg}"
  PROXY_TIMEOUT: "5m"
  AZURE_IMAGE_ID: ""
  AZURE_SUBSCRIPTION_ID: "${v.subscription}"
  DISABLECVM: "true"
  PEERPODS_LIMIT_PER_NODE: "10"
  TAGS: "key1=value1,key2=value2"
  ROOT_VOLUME_SIZE: "6"
`;

const podYaml = (name: string, opts: { annotations?: Record<string, string>; resources?: string } = {}) =>
  [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${APP_NS}`,
    ...(opts.annotations ? ['  annotations:', ...Object.entries(opts.annotations).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)] : []),
    'spec:',
    '  runtimeClassName: kata-remote',
    '  containers:',
    '  - name: example-container',
    '    image: registry.access.redhat.com/ubi9/ubi:9.3',
    '    command: ["sleep", "36000"]',
    ...(opts.resources ? [`    resources:\n${opts.resources}`] : []),
    '',
  ].join('\n');

const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);
const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';
const GALLERY_IMAGE =
  /^\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/galleries\/[^/]+\/images\/[^/]+\/versions\/\d+\.\d+\.\d+$/;

describe('the documented peer pods procedure on Azure, with kubectl', () => {
  const cluster = useDevCluster({ workers: 2, platform: 'Azure', rebootMs: 300 });
  const running = useOperator(cluster, KC);
  const azure = () => {
    const cloud = cluster.dev.cloud;
    assert.ok(cloud instanceof SimulatedAzure, 'osc start --cloud Azure simulates Azure');
    return cloud;
  };
  let image = '';
  let principal = { clientId: '', clientSecret: '', tenantId: '' };

  const kubectl = async (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });
  const ok = async (args: string[], input?: string) => {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const c = () => cluster.dev.client;
  const imageId = async () => (await ok(['get', 'configmap', '-n', NS, PEER_PODS_CM, '-o', 'jsonpath={.data.AZURE_IMAGE_ID}'])).stdout;
  const secretArgs = (sp: { clientId: string; clientSecret: string; tenantId: string }) => [
    'create',
    'secret',
    'generic',
    'peer-pods-secret',
    '-n',
    NS,
    '--from-literal',
    `AZURE_CLIENT_ID=${sp.clientId}`,
    '--from-literal',
    `AZURE_CLIENT_SECRET=${sp.clientSecret}`,
    '--from-literal',
    `AZURE_TENANT_ID=${sp.tenantId}`,
  ];

  test('configure: the values from the cluster and from az, a service principal in peer-pods-secret, peer-pods-cm.yaml', async () => {
    const platform = (await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.type}'])).stdout;
    assert.equal(platform, 'Azure');
    const rg = (await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.azure.resourceGroupName}'])).stdout;
    const account = azure().account;
    assert.equal(rg, account.resourceGroup);
    // az group show / az network vnet subnet list / az network nsg list / az account list, as the simulated account answers them.
    const values = { rg, region: account.region, subnet: account.subnetId, nsg: account.nsgId, subscription: account.subscriptionId };
    // az ad sp create-for-rbac: the first attempt stores a mistyped client secret.
    principal = azure().createServicePrincipal();
    await ok(secretArgs({ ...principal, clientSecret: `${principal.clientSecret}x` }));
    const created = await ok(['apply', '-f', '-'], peerPodsCmYaml(values));
    assert.match(created.stdout, /configmap\/peer-pods-cm created/);
  });

  test('deploy: the KataConfig installs kata-remote; the cloud refuses the image build with the wrong client secret', async () => {
    await ok(['create', '-f', '-'], kataConfigYaml);
    await waitFor(() => settled(running.recorder.seen.at(-1)) && running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 180_000,
      message: 'kata-remote installed on both workers',
    });
    assert.equal(cond(running.recorder.current, 'PeerPodsConfigValid')?.status, 'True');
    await waitFor(() => cond(running.recorder.current, 'PodVMImageJobFailed')?.status === 'True', {
      timeoutMs: 120_000,
      message: 'the image job failed',
    });
    assert.match(
      cond(running.recorder.current, 'PodVMImageJobFailed')?.message ?? '',
      /Job osc-podvm-image-creation failed .*; fix the cause, then edit peer-pods-cm or delete the job .* or set AZURE_IMAGE_ID to an existing image$/,
    );
    const logs = (await c().list(Pods, { namespace: NS, labelSelector: `job-name=${PODVM_IMAGE_CREATION_JOB}` })).items;
    type Terminated = { containerStatuses?: { state?: { terminated?: { message?: string } } }[] };
    const said = logs.map((p) => (p.status as Terminated | undefined)?.containerStatuses?.[0]?.state?.terminated?.message ?? '');
    assert.ok(
      said.some((m) => /^AADSTS7000215: Invalid client secret provided/.test(m)),
      `the job's pods say what Azure said: ${said.join(' | ')}`,
    );
    assert.equal(await imageId(), '');
    assert.equal(azure().images.size, 0);
  });

  test('fixing the Secret builds the image in the gallery and fills AZURE_IMAGE_ID', async () => {
    const yaml = await ok([...secretArgs(principal), '--dry-run=client', '-o', 'yaml']);
    await ok(['apply', '-f', '-'], yaml.stdout);
    await waitFor(async () => GALLERY_IMAGE.test(await imageId()), { timeoutMs: 120_000, message: 'AZURE_IMAGE_ID filled in' });
    image = await imageId();
    const { account } = azure();
    assert.ok(image.startsWith(`/subscriptions/${account.subscriptionId}/resourceGroups/${account.resourceGroup}/`), image);
    assert.ok(azure().images.has(image), 'the image exists in the simulated Azure');
    // The job's parameters put it in the gallery and definition osc names.
    assert.match(image, /\/galleries\/podvm_gallery\/images\/podvm_image\/versions\/0\.0\.1$/);
    await waitFor(() => cond(running.recorder.current, 'PodVMImageJobCompleted')?.status === 'True', { message: 'Completed condition' });
    assert.equal(
      cond(running.recorder.current, 'PodVMImageJobCompleted')?.message,
      `Job osc-podvm-image-creation created the pod VM image ${image}; AZURE_IMAGE_ID in peer-pods-cm is set`,
    );
    assert.equal(cond(running.recorder.current, 'PodVMImageJobFailed')?.status, 'False');
    await waitFor(async () => (await c().get(DaemonSets, CAA_DAEMONSET, NS)).status?.numberReady === 2, { message: 'the CAA on both' });
  });

  test('workload pods get an Azure VM size: best fit, the default, a refusal naming AZURE_INSTANCE_SIZES', async () => {
    await ok(['create', 'namespace', APP_NS]);
    await ok(['wait', '--for=create', 'serviceaccount/default', '-n', APP_NS, '--timeout=60s']);
    await ok(['create', '-f', '-'], podYaml('sized-pod', { resources: '      limits:\n        cpu: "2"\n        memory: 6Gi' }));
    await ok(['create', '-f', '-'], podYaml('default-pod'));
    const machineType = async (name: string) =>
      (await c().get(Pods, name, APP_NS)).metadata.annotations?.['io.katacontainers.config.hypervisor.machine_type'];
    assert.equal(await machineType('sized-pod'), 'Standard_D2as_v5');
    assert.equal(await machineType('default-pod'), 'Standard_B2als_v2');
    const refused = await kubectl(
      ['create', '-f', '-'],
      podYaml('unlisted', { annotations: { 'io.katacontainers.config.hypervisor.machine_type': 'Standard_D8as_v5' } }),
    );
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /VM size "Standard_D8as_v5" \(annotation io.katacontainers.config.hypervisor.machine_type\) is not allowed: the allowed sizes are Standard_B2als_v2, Standard_D2as_v5, Standard_D4as_v5, Standard_D2ads_v5; .*add it to AZURE_INSTANCE_SIZES/,
    );
  });

  test('a bad edit is reported with its fix and restarts no adaptor; the fix is taken', async () => {
    const before = (await c().get(DaemonSets, CAA_DAEMONSET, NS)).metadata.generation;
    await ok([
      'patch',
      'configmap',
      PEER_PODS_CM,
      '-n',
      NS,
      '--type',
      'merge',
      '-p',
      '{"data":{"AZURE_INSTANCE_SIZES":"Standard_D2as_v5,Standard_D4as_v5"}}',
    ]);
    await waitFor(() => cond(running.recorder.current, 'PeerPodsConfigValid')?.status === 'False', { message: 'the edit reported' });
    assert.equal(
      cond(running.recorder.current, 'PeerPodsConfigValid')?.message,
      'Invalid peer pods configuration: AZURE_INSTANCE_SIZES is "Standard_D2as_v5,Standard_D4as_v5": it leaves out the default VM size Standard_B2als_v2 (AZURE_INSTANCE_SIZE); add Standard_B2als_v2 to the list, or set AZURE_INSTANCE_SIZE to one of the listed VM sizes.',
    );
    assert.equal((await c().get(DaemonSets, CAA_DAEMONSET, NS)).metadata.generation, before, 'no adaptor restarted');
    await ok([
      'patch',
      'configmap',
      PEER_PODS_CM,
      '-n',
      NS,
      '--type',
      'merge',
      '-p',
      '{"data":{"AZURE_INSTANCE_SIZE":"Standard_D2as_v5"}}',
    ]);
    await waitFor(() => cond(running.recorder.current, 'PeerPodsConfigValid')?.status === 'True', { message: 'the fix taken' });
    assert.equal(await imageId(), image, 'the image is kept across configuration edits');
  });

  test('uninstall: delete the workload pods, then the KataConfig; the image is deleted from the gallery', async () => {
    const pods = JSON.parse((await ok(['get', 'pods', '-A', '-o', 'json'])).stdout) as {
      items: { metadata: { name: string; namespace: string }; spec?: { runtimeClassName?: string } }[];
    };
    const remote = pods.items.filter((p) => p.spec?.runtimeClassName === 'kata-remote');
    assert.deepEqual(remote.map((p) => p.metadata.name).sort(), ['default-pod', 'sized-pod']);
    for (const p of remote) await ok(['delete', 'pod', p.metadata.name, '-n', p.metadata.namespace]);
    const deleted = await ok(['delete', 'kataconfig', KC, '--timeout=300s']);
    assert.match(deleted.stdout, /"example-kataconfig" deleted/);
    assert.equal(await imageId(), '');
    assert.equal(azure().images.has(image), false, 'the image is gone from the simulated Azure');
    assert.equal(azure().stats.deletions, 1);
    assert.equal(await c().find(DaemonSets, CAA_DAEMONSET, NS), undefined);
    assert.equal(await c().find(RuntimeClasses, 'kata-remote'), undefined);
    assert.deepEqual(
      (await c().list(Jobs, { namespace: NS })).items.map((j) => j.metadata.name),
      [],
    );
    assert.deepEqual((await c().list(KataConfigs)).items, []);
    // The credentials never show in what osc writes.
    const dump = JSON.stringify(await c().list(DaemonSets, { namespace: NS })) + JSON.stringify(await c().list(Jobs, { namespace: NS }));
    assert.ok(!dump.includes(principal.clientSecret));
  });
});
