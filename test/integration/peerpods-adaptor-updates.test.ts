/**
 * The cloud-api-adaptor's updates on the administrator's terms, on the dev cluster with its real DaemonSet
 * controller: edits the running adaptors do not read restart no adaptor pod (seen by the pods' UIDs, not
 * inferred); an edit they read rolls them (RollingUpdate) or, with caaUpdateStrategy OnDelete, leaves them
 * until deleted while the KataConfig says how many run an older configuration; the restart counter counts
 * the pods actually replaced; the cluster's TLS profile reaches the adaptor; and the pod webhook gives
 * kata-remote pods the default initdata when one is configured.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_POD_INITDATA_KEY, INITDATA_ANNOTATION } from '../../src/api/initdata.ts';
import { ADAPTOR_OUTDATED, type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  OPERATOR_NAMESPACE,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../src/api/names.ts';
import { APIServers } from '../../src/api/openshift.ts';
import { CAA_POD_SELECTOR } from '../../src/controllers/peerpods/adaptor.ts';
import {
  ConfigMaps,
  type DaemonSet,
  DaemonSets,
  Namespaces,
  Nodes,
  type Pod,
  Pods,
  RuntimeClasses,
  Secrets,
} from '../../src/kube/resources.ts';
import { encodeInitdata } from '../../src/peerpods/initdata.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount, waitForEvents } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const APP = 'adaptor-updates-demo';
const EXAMPLE = readFileSync(new URL('../fixtures/initdata/initdata.toml', import.meta.url), 'utf8');
const DEFAULT_INITDATA = encodeInitdata(EXAMPLE);

const data: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  PODVM_AMI_ID: 'ami-0123456789abcdef0',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PROXY_TIMEOUT: '5m',
  PEERPODS_LIMIT_PER_NODE: '10',
};

const KEY = { accessKeyId: 'AKIAOSCTESTKEY000003', secretAccessKey: 'osc/TestSecretAccessKey+UpdatesTest01' };

describe('adaptor updates: no needless restarts, caaUpdateStrategy, outdated pods in status', () => {
  // The AWS account knows the administrator's key the adaptors start and run pod VMs with.
  const cluster = useDevCluster({ workers: 2, platform: 'AWS', rebootMs: 300, awsUsers: [KEY] });
  let running: RunningOperator;
  const c = () => cluster.dev.client;
  const metrics = () => running.operator.manager.metrics.registry.metrics();
  const restarts = async () => Number(/^osc_peerpods_adaptor_restarts_total (\d+)$/m.exec(await metrics())?.[1]);
  const ds = () => c().get(DaemonSets, CAA_DAEMONSET, NS);
  const kc = () => c().get(KataConfigs, KC);
  const outdated = async () => (await kc()).status?.conditions?.find((x) => x.type === ADAPTOR_OUTDATED);
  const patchCm = (d: Record<string, string | null>, annotations?: Record<string, string>) =>
    c().patch(ConfigMaps, PEER_PODS_CM, { data: d, ...(annotations ? { metadata: { annotations } } : {}) }, { namespace: NS });
  /** The adaptor pods by node: name and UID (a restart is a new UID on the node). */
  const adaptorPods = async () =>
    Object.fromEntries(
      (await c().list(Pods, { namespace: NS, labelSelector: CAA_POD_SELECTOR })).items
        .filter((p) => !p.metadata.deletionTimestamp)
        .map((p) => [p.spec?.nodeName ?? '', { name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' }]),
    );
  const status = (d: DaemonSet) => d.status as { observedGeneration?: number; numberReady?: number; updatedNumberScheduled?: number };
  /** The DaemonSet controller has seen the latest spec and both adaptors run. */
  const settled = () =>
    waitFor(
      async () => {
        const d = await ds();
        const s = status(d);
        return s.observedGeneration === d.metadata.generation && s.numberReady === 2 && Object.keys(await adaptorPods()).length === 2
          ? d
          : undefined;
      },
      { timeoutMs: 120_000, message: 'the adaptor DaemonSet settled, an adaptor on each worker' },
    );
  const capacity = async () => (await c().get(Nodes, 'worker-0')).status?.capacity?.[PEER_POD_VM_RESOURCE];

  before(async () => {
    running = await startOperator(cluster.dev);
    await c().create(Secrets, {
      metadata: { name: PEER_PODS_SECRET, namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey },
    });
    await c().create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data });
    await c().create(KataConfigs, { metadata: { name: KC }, spec: { enablePeerPods: true } } as KataConfig);
    await waitFor(() => c().find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS), { timeoutMs: 300_000, message: 'kata-remote installed' });
    await settled();
  });
  after(() => running?.stop());

  test('a no-op edit and edits of keys the adaptor does not read restart no adaptor pod', async () => {
    const pods = await adaptorPods();
    const generation = (await ds()).metadata.generation;
    const counted = await restarts();
    // No change of data at all, then keys only osc (or the image job) reads.
    await patchCm({}, { 'example.com/touched': 'yes' });
    await patchCm({ AWS_VPC_ID: 'vpc-0ffffffffffffffff' });
    await patchCm({ [DEFAULT_POD_INITDATA_KEY]: DEFAULT_INITDATA });
    await patchCm({ PEERPODS_LIMIT_PER_NODE: '4' });
    // osc has reconciled the last edit (so all of them) once the nodes advertise the new limit.
    await waitFor(async () => (await capacity()) === '4', { message: 'the new limit reached the nodes' });
    const d = await settled();
    assert.equal(d.metadata.generation, generation, 'the DaemonSet was not changed');
    assert.deepEqual(await adaptorPods(), pods, 'the same adaptor pods run: none restarted');
    assert.equal(await restarts(), counted);
    assert.equal(await outdated(), undefined);
  });

  test('an edit the adaptor reads rolls its pods (RollingUpdate, the default), each replacement counted', async () => {
    const pods = await adaptorPods();
    const counted = await restarts();
    await patchCm({ PROXY_TIMEOUT: '6m' });
    await waitFor(
      async () => {
        const now = await adaptorPods();
        return Object.keys(now).length === 2 && Object.entries(now).every(([node, p]) => p.uid !== pods[node]?.uid);
      },
      { timeoutMs: 120_000, message: 'both adaptor pods replaced' },
    );
    await settled();
    await waitFor(async () => (await restarts()) === counted + 2, { message: 'two restarts counted' });
    await waitFor(async () => (await outdated()) === undefined, { message: 'no pod left on the older configuration' });
  });

  test('caaUpdateStrategy OnDelete: an edit restarts nothing, the KataConfig says how many pods are outdated, deleting them applies it', async () => {
    await c().create(ConfigMaps, { metadata: { name: 'osc-feature-gates', namespace: NS }, data: { caaUpdateStrategy: 'OnDelete' } });
    await waitFor(async () => ((await ds()).spec.updateStrategy as { type?: string } | undefined)?.type === 'OnDelete' || undefined, {
      message: 'the DaemonSet is OnDelete',
    });
    await settled();
    const pods = await adaptorPods();
    const counted = await restarts();
    const generation = (await ds()).metadata.generation ?? 0;

    await patchCm({ PROXY_TIMEOUT: '7m' });
    await waitFor(async () => ((await ds()).metadata.generation ?? 0) > generation || undefined, { message: 'the pod template changed' });
    const c2 = await waitFor(async () => ((await outdated())?.message?.startsWith('2 of 2') ? outdated() : undefined), {
      message: 'PeerPodsAdaptorOutdated: 2 of 2',
    });
    assert.equal(c2?.status, 'True');
    assert.equal(c2?.reason, 'AdaptorPodsPendingDeletion');
    assert.match(
      c2?.message ?? '',
      /^2 of 2 cloud-api-adaptor pods \(DaemonSet openshift-sandboxed-containers-operator\/osc-caa-ds\) run an older configuration; caaUpdateStrategy is OnDelete, so each keeps it until deleted: delete them to apply it/,
    );
    assert.deepEqual(await adaptorPods(), pods, 'no adaptor pod restarted by the edit');
    assert.equal(await restarts(), counted);
    const [event] = await waitForEvents(c(), 'default', (e) => e.reason === 'PeerPodsAdaptorOutdated', 'a PeerPodsAdaptorOutdated event');
    assert.equal(event?.note, c2?.message);

    // The administrator deletes one: it comes back with the new configuration, one left.
    await c().delete(Pods, pods['worker-0']?.name ?? '', { namespace: NS });
    await waitFor(async () => (await outdated())?.message?.startsWith('1 of 2') || undefined, {
      timeoutMs: 120_000,
      message: '1 of 2 outdated',
    });
    assert.equal((await adaptorPods())['worker-1']?.uid, pods['worker-1']?.uid, 'the other adaptor still runs untouched');
    await waitFor(async () => (await restarts()) === counted + 1, { message: 'one restart counted' });
    await c().delete(Pods, pods['worker-1']?.name ?? '', { namespace: NS });
    await waitFor(async () => (await outdated()) === undefined, { timeoutMs: 120_000, message: 'the condition gone once all run it' });
    await waitFor(async () => (await restarts()) === counted + 2, { message: 'two restarts counted' });
  });

  test("the cluster's TLS profile reaches the adaptor as TLS_MIN_VERSION and TLS_CIPHER_SUITES", async () => {
    const tlsEnv = async () =>
      Object.fromEntries(
        ((await ds()).spec.template.spec.containers as { env: { name: string; value?: string }[] }[])[0]?.env
          .filter((e) => e.name.startsWith('TLS_'))
          .map((e) => [e.name, e.value]) ?? [],
      );
    // No profile set: Intermediate, as OpenShift's components default to.
    assert.deepEqual(await tlsEnv(), {
      TLS_MIN_VERSION: 'VersionTLS12',
      TLS_CIPHER_SUITES:
        'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
    });
    await c().create(APIServers, {
      apiVersion: 'config.openshift.io/v1',
      kind: 'APIServer',
      metadata: { name: 'cluster' },
      spec: { tlsSecurityProfile: { type: 'Modern' } },
    });
    await waitFor(async () => (await tlsEnv()).TLS_MIN_VERSION === 'VersionTLS13' || undefined, {
      message: 'Modern reached the DaemonSet',
    });
    assert.deepEqual(await tlsEnv(), { TLS_MIN_VERSION: 'VersionTLS13' });
    // OnDelete still: the pods keep the profile they started with until deleted, and the status says so.
    await waitFor(async () => (await outdated())?.message?.startsWith('2 of 2') || undefined, { message: 'both adaptors outdated' });
  });

  test('the pod webhook gives kata-remote pods without initdata the default; a malformed default refuses them', async () => {
    await c().create(Namespaces, { metadata: { name: APP } });
    await waitForDefaultServiceAccount(c(), APP);
    const pod = (name: string, annotations?: Record<string, string>): Pod => ({
      metadata: { name, namespace: APP, ...(annotations ? { annotations } : {}) },
      spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
    });
    const plain = await c().create(Pods, pod('plain'));
    assert.equal(plain.metadata.annotations?.[INITDATA_ANNOTATION], DEFAULT_INITDATA, 'the default was injected');
    const own = encodeInitdata(EXAMPLE.replace('algorithm = "sha384"', 'algorithm = "sha256"'));
    const mine = await c().create(Pods, pod('mine', { [INITDATA_ANNOTATION]: own }));
    assert.equal(mine.metadata.annotations?.[INITDATA_ANNOTATION], own, 'its own initdata kept');

    // A malformed default: the configuration condition names it, restarts nothing, and pods that would get it are refused.
    const template = (await ds()).spec.template;
    await patchCm({ [DEFAULT_POD_INITDATA_KEY]: Buffer.from(EXAMPLE).toString('base64') });
    await waitFor(
      async () =>
        (await kc()).status?.conditions
          ?.find((x) => x.type === 'PeerPodsConfigValid' && x.status === 'False')
          ?.message?.includes(DEFAULT_POD_INITDATA_KEY) || undefined,
      { message: 'PeerPodsConfigValid names DEFAULT_POD_INITDATA' },
    );
    let attempt = 0;
    const refusal = await waitFor(
      async () => {
        const name = `refused-${attempt++}`;
        try {
          await c().create(Pods, pod(name));
        } catch (e) {
          return (e as Error).message;
        }
        await c().delete(Pods, name, { namespace: APP, gracePeriodSeconds: 0 });
        return undefined;
      },
      { message: 'the webhook refuses a pod without initdata' },
    );
    assert.match(
      refusal,
      /the default initdata to give it, DEFAULT_POD_INITDATA in ConfigMap peer-pods-cm, is malformed \(the initdata is base64 of text, not of gzip/,
    );
    assert.ok(
      (await c().create(Pods, pod('mine-too', { [INITDATA_ANNOTATION]: own }))).metadata.uid,
      'a pod with its own initdata is admitted',
    );
    assert.deepEqual((await ds()).spec.template, template, 'the bad edit changed nothing of the adaptor');
  });
  test('a caaUpdateStrategy osc cannot read keeps the strategy the DaemonSet has (a typo never rolls the adaptors)', async () => {
    await patchCm({ [DEFAULT_POD_INITDATA_KEY]: null });
    await waitFor(
      async () => (await kc()).status?.conditions?.find((x) => x.type === 'PeerPodsConfigValid')?.status === 'True' || undefined,
      {
        message: 'the configuration valid again',
      },
    );
    await c().patch(ConfigMaps, 'osc-feature-gates', { data: { caaUpdateStrategy: 'Ondelete' } }, { namespace: NS });
    // Reconciled after the typo once the new limit reaches the nodes.
    await patchCm({ PEERPODS_LIMIT_PER_NODE: '5' });
    await waitFor(async () => (await capacity()) === '5', { message: 'the new limit reached the nodes' });
    assert.equal(((await ds()).spec.updateStrategy as { type?: string }).type, 'OnDelete');
  });
});
