/**
 * Confidential containers' bad input on a live dev cluster (OpenShift, TDX on worker-0 and worker-1 with two
 * key slots each, worker-2 plain), one operator for the whole table. Each row does one wrong thing (a gate
 * value of every wrong kind, a TEE label flipped on a node mid-rollout, a node losing its key-slot resource,
 * GPUs asked for where the GPU operator prepared none, gates edited during an install and during an
 * uninstall) and expects a clear condition or event naming what is wrong and the fix; after the fix the
 * cluster converges: installed on the three workers with kata and kata-cc (handler kata-tdx), the TDX
 * handler's MachineConfig rendered into the kata pool.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { confidentialTexts, NVIDIA_GPU_NODE_LABELS } from '../../src/api/confidential.ts';
import { FEATURE_GATES_CONFIGMAP, featureGateTexts, parseFeatureGates } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { CONFIDENTIAL_MACHINE_CONFIG, MCO_STATE, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { CPU_SECURITY_ANNOTATION, NodeFeatureRules, teeHardware, teeNodeFeatureRule } from '../../src/devcluster/nfd/rules.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { ConfigMaps, Events, Namespaces, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const APPS = 'confidential-apps';
const KC = 'example-kataconfig';
const KEYS = 'tdx.intel.com/keys';
const ON = { confidential: 'true' };
const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

const podOf = (name: string, runtimeClassName: string): Pod => ({
  metadata: { name, namespace: APPS },
  spec: { runtimeClassName, containers: [{ name: 'app', image: 'registry.access.redhat.com/ubi9/ubi-minimal' }] } as Pod['spec'],
});

/** The whole ConfigMap's data (and binaryData) replaced, as `kubectl apply` of an edited file would. */
async function setGates(client: KubeClient, data: Record<string, string>, binaryData: Record<string, string> = {}) {
  const cm = await client.get(ConfigMaps, FEATURE_GATES_CONFIGMAP, NS);
  await client.update(ConfigMaps, { ...cm, data, binaryData });
}

/** The wrong kinds of gate value: each must be reported (condition and event) with its key and allowed values. */
const badGates: { name: string; data: Record<string, string>; binaryData?: Record<string, string> }[] = [
  { name: 'a boolean in another case', data: { confidential: 'True' } },
  { name: 'yes for true', data: { confidential: 'yes' } },
  { name: 'a space around the value', data: { confidential: ' true' } },
  { name: 'an empty value', data: { confidential: '' } },
  { name: 'a number', data: { confidential: '1' } },
  { name: 'a mode in the wrong case', data: { ...ON, deploymentMode: 'daemonset' } },
  { name: 'a mode that does not exist', data: { ...ON, deploymentMode: 'DaemonSets' } },
  { name: 'an update strategy of another object', data: { ...ON, caaUpdateStrategy: 'Recreate' } },
  { name: 'a gate under binaryData', data: {}, binaryData: { confidential: Buffer.from('true').toString('base64') } },
];

describe('confidential containers: bad input on a live cluster, each ending in a clear condition and a converged cluster', () => {
  const cluster = useDevCluster({
    workers: 3,
    rebootMs: 300,
    hardware: { tee: { kind: 'tdx', nodes: ['worker-0', 'worker-1'], keySlots: 2 } },
  });
  let op: RunningOperator | undefined;
  let rec: StatusRecorder;
  const last = () => rec.seen.at(-1);
  before(async () => {
    const { client } = cluster.dev;
    await client.create(Namespaces, { metadata: { name: APPS } });
    await client.create(ConfigMaps, { metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: NS }, data: ON });
    rec = new StatusRecorder(client, KC);
    await rec.synced();
    op = await startOperator(cluster.dev);
  });
  after(async () => {
    await op?.stop();
    await rec.stop();
  });

  const events = async (reason: string) =>
    (await cluster.dev.client.list(Events, { namespace: 'default' })).items.filter((e) => e.reason === reason && e.regarding?.name === KC);
  const eventWith = (reason: string, note: string, message: string) =>
    waitFor(async () => (await events(reason)).find((e) => e.note === note), { timeoutMs: 60_000, message });
  const kataPool = () => cluster.dev.client.get(MachineConfigPools, 'kata-oc');
  const poolUpdated = async () => {
    const p = await kataPool();
    return p.status?.configuration?.name === p.spec.configuration?.name && p.status?.updatedMachineCount === 3;
  };
  /** Installed on the three workers with kata and kata-cc (kata-tdx), the handler's MachineConfig rendered. */
  const converged = async (message: string) => {
    const { client } = cluster.dev;
    await waitFor(
      async () =>
        settled(last()) &&
        JSON.stringify([...(last()?.runtimeClasses ?? [])].sort()) === JSON.stringify(['kata', 'kata-cc']) &&
        (await poolUpdated()),
      { timeoutMs: 240_000, message },
    );
    assert.equal(last()?.kataNodes?.readyNodeCount, 3);
    assert.equal((await client.get(RuntimeClasses, 'kata-cc')).handler, 'kata-tdx');
    const sources = ((await kataPool()).spec.configuration?.source ?? []).map((s) => s.name);
    assert.ok(sources.includes(CONFIDENTIAL_MACHINE_CONFIG), 'the TDX handler rendered into the kata pool');
  };
  const someNodeWorking = async () =>
    (await cluster.dev.client.list(Nodes)).items.some((n) => n.metadata.annotations?.[MCO_STATE] === 'Working');

  test('[install] a gate edited during the install: Failed naming it while the nodes keep rolling; fixed, the install converges', async () => {
    const { client } = cluster.dev;
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
    await waitFor(async () => last()?.inProgress?.reason === 'Installing' && (await someNodeWorking()), {
      timeoutMs: 120_000,
      message: 'the install under way',
    });
    await setGates(client, { confidential: 'on' });
    const [problem] = parseFeatureGates({ confidential: 'on' }).problems;
    assert.ok(problem);
    const expected = featureGateTexts.invalid(NS, problem);
    await waitFor(() => last()?.inProgress?.message === expected, { timeoutMs: 60_000, message: 'Failed naming the gate' });
    assert.deepEqual([last()?.inProgress?.status, last()?.inProgress?.reason], ['True', 'Failed']);
    await eventWith('FeatureGateInvalid', expected, 'the FeatureGateInvalid event');
    // The rest of the install goes on: every node reaches the kata pool's target under the Failed condition.
    await waitFor(poolUpdated, { timeoutMs: 240_000, message: 'the nodes rolled while the gate was wrong' });
    assert.equal(last()?.inProgress?.reason, 'Failed');
    await setGates(client, ON);
    await converged('installed with kata-cc once fixed');
  });

  for (const g of badGates)
    test(`[gate value] ${g.name}: Failed and a FeatureGateInvalid event naming the key and its values; kata-cc kept; fixed, settled`, async () => {
      const { client } = cluster.dev;
      const kept = await client.get(RuntimeClasses, 'kata-cc');
      await setGates(client, g.data, g.binaryData);
      const [problem] = parseFeatureGates(g.data, g.binaryData).problems;
      assert.ok(problem, 'a wrong value');
      const expected = featureGateTexts.invalid(NS, problem);
      assert.ok(expected.includes(`"${problem.key}"`) && expected.includes(problem.allowed.join(', ')), 'the text names key and values');
      await waitFor(() => last()?.inProgress?.message === expected, { timeoutMs: 60_000, message: `Failed: ${expected}` });
      assert.deepEqual([last()?.inProgress?.status, last()?.inProgress?.reason], ['True', 'Failed']);
      const ev = await eventWith('FeatureGateInvalid', expected, 'the FeatureGateInvalid event');
      assert.equal(ev.type, 'Warning');
      assert.equal((await client.get(RuntimeClasses, 'kata-cc')).metadata.uid, kept.metadata.uid, 'kata-cc neither removed nor remade');
      assert.ok(await client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG), 'the handler stays on the nodes');
      await setGates(client, ON);
      await converged('settled again');
    });

  test('[gate key] a key osc does not know: a FeatureGateUnknown event naming it and the known keys; nothing else changes', async () => {
    const { client } = cluster.dev;
    await setGates(client, { ...ON, confidentail: 'true' });
    const ev = await eventWith('FeatureGateUnknown', featureGateTexts.unknown(NS, ['confidentail']), 'the FeatureGateUnknown event');
    assert.match(ev.note ?? '', /known: confidential, deploymentMode, caaUpdateStrategy/);
    assert.ok(settled(last()), 'no failure: other tools may keep their settings there');
    await setGates(client, ON);
    await converged('settled');
  });

  test('[gate mode] deploymentMode for the other platform while running: a FeatureGateMode warning; the install stays', async () => {
    const { client } = cluster.dev;
    await setGates(client, { ...ON, deploymentMode: 'DaemonSet' });
    const ev = await eventWith('FeatureGateMode', featureGateTexts.modeMismatch('DaemonSet', 'openshift'), 'the FeatureGateMode event');
    assert.equal(ev.type, 'Warning');
    assert.ok(settled(last()));
    await setGates(client, ON);
    await converged('settled');
  });

  test('[TEE nodes] a TEE label flipped on a node mid-rollout: Failed naming both TEEs and nodes, kata-cc kept; flipped back, converged', async () => {
    const { client } = cluster.dev;
    const kept = await client.get(RuntimeClasses, 'kata-cc');
    await client.create(NodeFeatureRules, teeNodeFeatureRule('snp'));
    // A rollout under way: CRI-O's log level changes on every kata node, one at a time.
    await client.patch(KataConfigs, KC, { spec: { logLevel: 'debug' } });
    await waitFor(someNodeWorking, { timeoutMs: 60_000, message: 'the rollout under way' });
    await client.patch(Nodes, 'worker-1', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: teeHardware('snp', 2) } } });
    await waitFor(() => last()?.inProgress?.message.startsWith('multiple TEE platforms detected; only one per cluster supported'), {
      timeoutMs: 60_000,
      message: 'the multiple-TEE refusal',
    });
    assert.equal(last()?.inProgress?.reason, 'Failed');
    assert.match(last()?.inProgress?.message ?? '', /\(Intel TDX on worker-0; AMD SEV-SNP on worker-1\): narrow kataConfigPoolSelector/);
    assert.equal((await client.get(RuntimeClasses, 'kata-cc')).metadata.uid, kept.metadata.uid, 'kata-cc kept while refused');
    await client.patch(Nodes, 'worker-1', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: teeHardware('tdx', 2) } } });
    await client.delete(NodeFeatureRules, 'snp-node-feature-rule');
    await client.patch(KataConfigs, KC, { spec: { logLevel: 'info' } });
    await converged('converged after the flip back');
    assert.equal((await client.get(RuntimeClasses, 'kata-cc')).metadata.uid, kept.metadata.uid, 'the same kata-cc throughout');
  });

  test('[key slots] a TEE node losing its key-slot resource: a Confidential warning naming it; the scheduler keeps pods off it', async () => {
    const { client } = cluster.dev;
    // Its firmware now reports TDX without a key count: NFD keeps the label and stops advertising the slots.
    await client.patch(Nodes, 'worker-1', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: 'tdx.enabled=true' } } });
    await waitFor(async () => (await client.get(Nodes, 'worker-1')).status?.allocatable?.[KEYS] === undefined, {
      timeoutMs: 60_000,
      message: 'worker-1 without key slots',
    });
    await eventWith('Confidential', confidentialTexts.noKeySlots(['worker-1'], KEYS), 'the warning naming worker-1');
    assert.ok(settled(last()), 'a warning, not a failure: worker-0 still runs kata-cc pods');
    for (let i = 0; i < 3; i++) await client.create(Pods, podOf(`cc-${i}`, 'kata-cc'));
    await waitFor(
      async () => {
        const pods = (await client.list(Pods, { namespace: APPS })).items;
        return pods.filter((p) => p.status?.phase === 'Running').length === 2 ? pods : undefined;
      },
      { timeoutMs: 60_000, message: "two pods on worker-0's two slots" },
    );
    const pods = (await client.list(Pods, { namespace: APPS })).items;
    assert.deepEqual(pods.map((p) => (p.spec as { nodeName?: string }).nodeName ?? 'Pending').sort(), ['Pending', 'worker-0', 'worker-0']);
    for (const p of pods) await client.delete(Pods, p.metadata.name ?? '', { namespace: APPS });
    await client.patch(Nodes, 'worker-1', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: teeHardware('tdx', 2) } } });
    await waitFor(async () => (await client.get(Nodes, 'worker-1')).status?.allocatable?.[KEYS] === '2', {
      timeoutMs: 60_000,
      message: 'the slots back',
    });
    await waitFor(async () => (await client.list(Pods, { namespace: APPS })).items.length === 0, {
      timeoutMs: 60_000,
      message: 'pods gone',
    });
    await converged('converged');
  });

  test('[GPU] GPUs asked for where the GPU operator prepared none: a warning naming the node and the labels, no GPU class; prepared, the class; gone, withdrawn', async () => {
    const { client } = cluster.dev;
    await client.patch(Nodes, 'worker-2', { metadata: { labels: { 'nvidia.com/gpu.workload.config': 'vm-passthrough' } } });
    await eventWith('Confidential', confidentialTexts.noGpuNodes(['worker-2']), 'the noGpuNodes warning');
    assert.ok(settled(last()));
    assert.equal(await client.find(RuntimeClasses, 'kata-nvidia-gpu'), undefined, 'no GPU class without prepared nodes');
    // The GPU operator prepares it.
    await client.patch(Nodes, 'worker-2', { metadata: { labels: { ...NVIDIA_GPU_NODE_LABELS } } });
    await waitFor(() => settled(last()) && last()?.runtimeClasses?.includes('kata-nvidia-gpu'), {
      timeoutMs: 60_000,
      message: 'kata-nvidia-gpu offered',
    });
    // The GPU goes (its labels with it): the class is withdrawn, and said so.
    const off = Object.fromEntries(Object.keys(NVIDIA_GPU_NODE_LABELS).map((k) => [k, null]));
    await client.patch(Nodes, 'worker-2', { metadata: { labels: off } });
    await eventWith('Confidential', confidentialTexts.gpuClassWithdrawn('kata-nvidia-gpu'), 'the class withdrawn');
    await waitFor(async () => !(await client.find(RuntimeClasses, 'kata-nvidia-gpu')), {
      timeoutMs: 60_000,
      message: 'the GPU class gone',
    });
    await client.patch(Nodes, 'worker-2', { metadata: { labels: { 'nvidia.com/gpu.workload.config': null } } });
    await converged('converged');
  });

  test('[uninstall] gates edited during an uninstall change nothing of it; the next KataConfig reports them', async () => {
    const { client } = cluster.dev;
    await client.create(Pods, podOf('confidential', 'kata-cc'));
    await client.create(Pods, podOf('sandboxed', 'kata'));
    await waitFor(async () => (await client.list(Pods, { namespace: APPS })).items.every((p) => p.status?.phase === 'Running'), {
      timeoutMs: 60_000,
      message: 'both pods running',
    });
    await client.delete(KataConfigs, KC);
    await waitFor(() => last()?.inProgress?.reason === 'BlockedByExistingKataPods', { timeoutMs: 60_000, message: 'blocked' });
    const bad = { confidential: 'false', deploymentMode: 'nope' };
    await setGates(client, bad);
    const invalidBefore = (await events('FeatureGateInvalid')).length;
    // A pass after the edit: the kata pod's deletion wakes the blocked uninstall, whose message then names one pod.
    await client.delete(Pods, 'sandboxed', { namespace: APPS });
    await waitFor(
      () => last()?.inProgress?.reason === 'BlockedByExistingKataPods' && !/sandboxed/.test(last()?.inProgress?.message ?? ''),
      {
        timeoutMs: 60_000,
        message: 'blocked by the kata-cc pod alone',
      },
    );
    assert.match(last()?.inProgress?.message ?? '', /"kata-cc" RuntimeClass/);
    assert.equal((await events('FeatureGateInvalid')).length, invalidBefore, 'the uninstall does not read the gates');
    assert.ok(await client.find(RuntimeClasses, 'kata-cc'), 'confidential=false does not take kata-cc away under a blocked uninstall');
    await client.delete(Pods, 'confidential', { namespace: APPS });
    await waitFor(async () => !(await client.find(KataConfigs, KC)), { timeoutMs: 240_000, message: 'uninstalled' });
    for (const rc of ['kata', 'kata-cc'])
      await waitFor(async () => !(await client.find(RuntimeClasses, rc)), { timeoutMs: 60_000, message: `${rc} gone` });
    assert.equal(await client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG), undefined, 'the handler MachineConfig gone');

    // The next KataConfig reads them: the bad mode is reported before anything else is done.
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
    const [problem] = parseFeatureGates(bad).problems;
    assert.ok(problem);
    await waitFor(() => last()?.inProgress?.message === featureGateTexts.invalid(NS, problem), {
      timeoutMs: 60_000,
      message: 'Failed naming deploymentMode',
    });
    await setGates(client, ON);
    await converged('installed again');
  });
});
