/**
 * The peer pods procedure on Google Cloud, replayed with a real kubectl against the dev cluster
 * (`osc start --cloud GCP`: the Infrastructure reports GCP, its project and region; the simulated Google
 * Cloud issues service account keys and builds and deletes the pod VM image).
 *
 * The steps, as the product documentation and the cloud-api-adaptor describe them: the project and region
 * from the Infrastructure, a zone of that region; a service account key in peer-pods-secret
 * (GCP_CREDENTIALS, from the key file); peer-pods-cm; the KataConfig with enablePeerPods; the image job
 * fills PODVM_IMAGE_NAME; a kata-remote workload; uninstall. The administrator first stores their own
 * application default credentials instead of the service account's key, and is told so.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import { DaemonSets, Jobs, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { type StatusView, useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const APP_NS = 'peerpods-gcp-demo';

const kataConfigYaml = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: example-kataconfig
spec:
  enablePeerPods: true
  logLevel: info
`;

const peerPodsCmYaml = (project: string, zone: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: openshift-sandboxed-containers-operator
data:
  CLOUD_PROVIDER: "gcp"
  VXLAN_PORT: "9000"
  PROXY_TIMEOUT: "5m"
  GCP_PROJECT_ID: "${project}"
  GCP_ZONE: "${zone}"
  GCP_NETWORK: "global/networks/default"
  GCP_MACHINE_TYPE: "e2-medium"
  PODVM_IMAGE_NAME: ""
  PEERPODS_LIMIT_PER_NODE: "10"
  ROOT_VOLUME_SIZE: "6"
  DISABLECVM: "true"
`;

const podYaml = (name: string, annotations?: Record<string, string>) =>
  [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${APP_NS}`,
    ...(annotations ? ['  annotations:', ...Object.entries(annotations).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)] : []),
    'spec:',
    '  runtimeClassName: kata-remote',
    '  containers:',
    '  - name: example-container',
    '    image: registry.access.redhat.com/ubi9/ubi:9.3',
    '    command: ["sleep", "36000"]',
    '',
  ].join('\n');

const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);
const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

describe('the peer pods procedure on Google Cloud, with kubectl', () => {
  const cluster = useDevCluster({ workers: 2, platform: 'GCP', rebootMs: 300 });
  const running = useOperator(cluster, KC);
  const dir = mkdtempSync(join(tmpdir(), 'osc-gcp-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const gcp = () => {
    const cloud = cluster.dev.cloud;
    assert.ok(cloud instanceof SimulatedGcp, 'osc start --cloud GCP simulates Google Cloud');
    return cloud;
  };
  let image = '';
  let keyFile = '';

  const kubectl = async (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });
  const ok = async (args: string[], input?: string) => {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const c = () => cluster.dev.client;
  const imageName = async () => (await ok(['get', 'configmap', '-n', NS, PEER_PODS_CM, '-o', 'jsonpath={.data.PODVM_IMAGE_NAME}'])).stdout;
  const secretFrom = async (path: string) => {
    const yaml = await ok([
      'create',
      'secret',
      'generic',
      'peer-pods-secret',
      '-n',
      NS,
      `--from-file=GCP_CREDENTIALS=${path}`,
      '--dry-run=client',
      '-o',
      'yaml',
    ]);
    await ok(['apply', '-f', '-'], yaml.stdout);
  };

  test("configure: the project and region from the cluster, the user's own credentials by mistake, peer-pods-cm.yaml", async () => {
    assert.equal((await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.type}'])).stdout, 'GCP');
    const project = (await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.gcp.projectID}'])).stdout;
    const region = (await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.gcp.region}'])).stdout;
    assert.equal(project, gcp().account.projectId);
    // ~/.config/gcloud/application_default_credentials.json: a user's credentials, not a service account's key.
    const adc = join(dir, 'application_default_credentials.json');
    writeFileSync(
      adc,
      `${JSON.stringify({ client_id: 'x.apps.googleusercontent.com', client_secret: 'd-FL95Q', refresh_token: '1//0g', type: 'authorized_user' })}\n`,
    );
    await secretFrom(adc);
    await ok(['apply', '-f', '-'], peerPodsCmYaml(project, `${region}-a`));
  });

  test('deploy: the KataConfig waits on the credentials and says what is wrong with them', async () => {
    await ok(['create', '-f', '-'], kataConfigYaml);
    await waitFor(() => cond(running.recorder.current, 'PeerPodsConfigValid')?.status === 'False', {
      timeoutMs: 120_000,
      message: 'the credentials reported',
    });
    assert.equal(
      cond(running.recorder.current, 'PeerPodsConfigValid')?.message,
      `Invalid peer pods configuration: GCP_CREDENTIALS in Secret peer-pods-secret has type "authorized_user", not "service_account" (is it a user's application default credentials?); store the key file of the service account (gcloud iam service-accounts keys create key.json --iam-account=<account>).`,
    );
    assert.equal(await c().find(DaemonSets, CAA_DAEMONSET, NS), undefined, 'no adaptor starts with bad credentials');
  });

  test("the service account's key: kata-remote installed, the image built, PODVM_IMAGE_NAME filled", async () => {
    keyFile = gcp().createServiceAccountKey();
    const path = join(dir, 'key.json');
    writeFileSync(path, keyFile);
    await secretFrom(path);
    await waitFor(() => settled(running.recorder.seen.at(-1)) && running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 180_000,
      message: 'kata-remote installed on both workers',
    });
    await waitFor(async () => /^podvm-image-[0-9a-f]{8}$/.test(await imageName()), {
      timeoutMs: 120_000,
      message: 'PODVM_IMAGE_NAME filled',
    });
    image = await imageName();
    assert.ok(gcp().images.has(image), 'the image exists in the simulated Google Cloud');
    await waitFor(() => cond(running.recorder.current, 'PodVMImageJobCompleted')?.status === 'True', { message: 'Completed condition' });
    assert.equal(
      cond(running.recorder.current, 'PodVMImageJobCompleted')?.message,
      `Job osc-podvm-image-creation created the pod VM image ${image}; PODVM_IMAGE_NAME in peer-pods-cm is set`,
    );
    await waitFor(async () => (await c().get(DaemonSets, CAA_DAEMONSET, NS)).status?.numberReady === 2, { message: 'the CAA on both' });
  });

  test('workload pods get the machine type; one outside the allowed list is refused', async () => {
    await ok(['create', 'namespace', APP_NS]);
    await ok(['wait', '--for=create', 'serviceaccount/default', '-n', APP_NS, '--timeout=60s']);
    await ok(['create', '-f', '-'], podYaml('example-pod'));
    const pod = await c().get(Pods, 'example-pod', APP_NS);
    assert.equal(pod.metadata.annotations?.['io.katacontainers.config.hypervisor.machine_type'], 'e2-medium');
    const refused = await kubectl(
      ['create', '-f', '-'],
      podYaml('big', { 'io.katacontainers.config.hypervisor.machine_type': 'n2-standard-8' }),
    );
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /machine type "n2-standard-8" .* is not allowed: the allowed machine types are e2-medium; .*add it to PODVM_INSTANCE_TYPES/,
    );
  });

  test('a zone that is a region is reported and restarts no adaptor', async () => {
    const before = (await c().get(DaemonSets, CAA_DAEMONSET, NS)).metadata.generation;
    const zone = (await ok(['get', 'configmap', '-n', NS, PEER_PODS_CM, '-o', 'jsonpath={.data.GCP_ZONE}'])).stdout;
    const region = zone.replace(/-[a-z]$/, '');
    await ok(['patch', 'configmap', PEER_PODS_CM, '-n', NS, '--type', 'merge', '-p', JSON.stringify({ data: { GCP_ZONE: region } })]);
    await waitFor(() => cond(running.recorder.current, 'PeerPodsConfigValid')?.status === 'False', { message: 'the edit reported' });
    assert.equal(
      cond(running.recorder.current, 'PeerPodsConfigValid')?.message,
      `Invalid peer pods configuration: GCP_ZONE is "${region}": it is a region, not a zone; set it to one of its zones, like ${region}-a.`,
    );
    assert.equal((await c().get(DaemonSets, CAA_DAEMONSET, NS)).metadata.generation, before, 'no adaptor restarted');
    await ok(['patch', 'configmap', PEER_PODS_CM, '-n', NS, '--type', 'merge', '-p', JSON.stringify({ data: { GCP_ZONE: zone } })]);
    await waitFor(() => cond(running.recorder.current, 'PeerPodsConfigValid')?.status === 'True', { message: 'the fix taken' });
  });

  test('uninstall: the pods, then the KataConfig; the image is deleted and PODVM_IMAGE_NAME emptied', async () => {
    await ok(['delete', 'pod', 'example-pod', '-n', APP_NS]);
    const deleted = await ok(['delete', 'kataconfig', KC, '--timeout=300s']);
    assert.match(deleted.stdout, /"example-kataconfig" deleted/);
    assert.equal(await imageName(), '');
    assert.equal(gcp().images.has(image), false, 'the image is gone from the simulated Google Cloud');
    assert.equal(await c().find(RuntimeClasses, 'kata-remote'), undefined);
    assert.deepEqual(
      (await c().list(Jobs, { namespace: NS })).items.map((j) => j.metadata.name),
      [],
    );
    assert.deepEqual((await c().list(KataConfigs)).items, []);
    const key = JSON.parse(keyFile) as { private_key: string };
    const dump = JSON.stringify(await c().list(Jobs, { namespace: NS })) + JSON.stringify(await c().list(DaemonSets, { namespace: NS }));
    assert.ok(!dump.includes(key.private_key.slice(30, 60)), 'the key never shows');
  });
});
