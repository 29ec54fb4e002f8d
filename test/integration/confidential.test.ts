import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { confidentialTexts, RUNTIME_CLASS_CLEANUP_FINALIZER, type TeeKind, teePlatform } from '../../src/api/confidential.ts';
import { renderConfidential } from '../../src/api/confidential-summary.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { KATA_NODE_ROLE_LABEL, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { readConfidential } from '../../src/cli/commands/confidential-status.ts';
import { setClusterVersion } from '../../src/devcluster/hardware.ts';
import { CPU_SECURITY_ANNOTATION, NodeFeatureRules, teeHardware, teeNodeFeatureRule } from '../../src/devcluster/nfd/rules.ts';
import { ConfigMaps, Events, Namespaces, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Confidential containers on the dev cluster: the confidential gate on with TEE nodes (the simulated NFD
 * labelling them and advertising their key slots from the documented NodeFeatureRule), kata-cc made with
 * the key-slot overhead, the real kube-scheduler placing its pods only on TEE kata nodes and refusing the
 * one beyond the slots, and the gate turned off removing kata-cc only once its pods are gone.
 */

const NS = 'confidential-apps';
const KC = 'example-kataconfig';
const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

const podOf = (name: string, runtimeClassName: string): Pod => ({
  metadata: { name, namespace: NS },
  spec: { runtimeClassName, containers: [{ name: 'app', image: 'registry.access.redhat.com/ubi9/ubi-minimal' }] } as Pod['spec'],
});

// On the TDX cluster worker-2 also has a GPU the NVIDIA GPU operator prepared: kata-nvidia-gpu goes there.
const table: { kind: TeeKind; handler: string; slots: string; gpuNodes: string[] }[] = [
  { kind: 'tdx', handler: 'kata-tdx', slots: 'tdx.intel.com/keys', gpuNodes: ['worker-2'] },
  { kind: 'snp', handler: 'kata-snp', slots: 'sev-snp.amd.com/esids', gpuNodes: [] },
];

for (const t of table) {
  describe(`confidential containers on ${teePlatform(t.kind).title} nodes`, () => {
    // worker-0 and worker-1 have the TEE with 2 key slots each; worker-2 has none.
    const cluster = useDevCluster({
      workers: 3,
      rebootMs: 300,
      hardware: { tee: { kind: t.kind, nodes: ['worker-0', 'worker-1'], keySlots: 2 }, gpuNodes: t.gpuNodes },
    });
    let op: RunningOperator | undefined;
    let rec: StatusRecorder;
    const gpu = t.gpuNodes.length ? ['kata-nvidia-gpu'] : [];
    before(async () => {
      const { client } = cluster.dev;
      await client.create(Namespaces, { metadata: { name: NS } });
      rec = new StatusRecorder(client, KC);
      await rec.synced();
      op = await startOperator(cluster.dev);
    });
    after(async () => {
      await op?.stop();
      await rec.stop();
    });

    test('NFD advertises the key slots from the NodeFeatureRule; kata-cc is made with the slot overhead on the TEE kata nodes', async () => {
      const { client } = cluster.dev;
      const w0 = await waitFor(
        async () => {
          const n = await client.get(Nodes, 'worker-0');
          return n.status?.allocatable?.[t.slots] === '2' ? n : undefined;
        },
        { timeoutMs: 60_000, message: `worker-0 advertising 2 ${t.slots}` },
      );
      assert.equal(w0.metadata.labels?.[teePlatform(t.kind).label], 'true');
      assert.equal(w0.status?.capacity?.[t.slots], '2');
      const w2 = await client.get(Nodes, 'worker-2');
      assert.equal(w2.metadata.labels?.[teePlatform(t.kind).label], undefined);

      await client.create(ConfigMaps, {
        metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
        data: { confidential: 'true' },
      });
      await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.runtimeClasses?.includes('kata-cc'), {
        timeoutMs: 180_000,
        message: 'installed with kata-cc',
      });
      assert.deepEqual([...(rec.seen.at(-1)?.runtimeClasses ?? [])].sort(), ['kata', 'kata-cc', ...gpu]);
      if (gpu.length) {
        const g = await client.get(RuntimeClasses, 'kata-nvidia-gpu');
        // 4096Mi as the API server writes it back.
        assert.deepEqual(g.overhead?.podFixed, { cpu: '1', memory: '4Gi' });
        assert.equal(g.scheduling?.nodeSelector?.['nvidia.com/gpu.present'], 'true');
        assert.equal(g.scheduling?.nodeSelector?.[KATA_NODE_ROLE_LABEL], '');
      } else {
        assert.equal(await client.find(RuntimeClasses, 'kata-nvidia-gpu'), undefined, 'no GPU node, no GPU class');
      }
      const rc = await client.get(RuntimeClasses, 'kata-cc');
      assert.equal(rc.handler, t.handler);
      assert.deepEqual(rc.overhead?.podFixed, { cpu: '250m', memory: '350Mi', [t.slots]: '1' });
      assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_NODE_ROLE_LABEL]: '', [teePlatform(t.kind).label]: 'true' });
      assert.ok(rc.metadata.finalizers?.includes(RUNTIME_CLASS_CLEANUP_FINALIZER), 'kata-cc carries the cleanup finalizer');
      const kata = await client.get(RuntimeClasses, 'kata');
      assert.ok(kata.metadata.finalizers?.includes(RUNTIME_CLASS_CLEANUP_FINALIZER), 'so does kata');
    });

    test('the scheduler places kata-cc pods on TEE kata nodes only, and the fifth stays Pending for want of a key slot', async () => {
      const { client } = cluster.dev;
      for (let i = 0; i < 4; i++) await client.create(Pods, podOf(`cc-${i}`, 'kata-cc'));
      const placed = await waitFor(
        async () => {
          const pods = (await client.list(Pods, { namespace: NS })).items;
          return pods.length === 4 && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
        },
        { timeoutMs: 120_000, message: 'four kata-cc pods running' },
      );
      const nodes = placed.map((p) => (p.spec as { nodeName?: string }).nodeName).sort();
      assert.deepEqual(nodes, ['worker-0', 'worker-0', 'worker-1', 'worker-1'], 'two per TEE node, none on worker-2');
      // The overhead the RuntimeClass admission put on each pod is what the scheduler counted.
      assert.deepEqual((placed[0]?.spec as { overhead?: Record<string, string> } | undefined)?.overhead, {
        cpu: '250m',
        memory: '350Mi',
        [t.slots]: '1',
      });

      await client.create(Pods, podOf('cc-4', 'kata-cc'));
      const refused = await waitFor(
        async () => {
          const p = await client.get(Pods, 'cc-4', NS);
          const c = (p.status?.conditions as { type: string; status: string; reason?: string; message?: string }[] | undefined)?.find(
            (x) => x.type === 'PodScheduled',
          );
          return c?.status === 'False' ? c : undefined;
        },
        { timeoutMs: 60_000, message: 'the fifth kata-cc pod refused by the scheduler' },
      );
      assert.equal(refused.reason, 'Unschedulable');
      assert.match(refused.message ?? '', new RegExp(`Insufficient ${t.slots.replace(/\./g, '\\.')}`));
      assert.equal((await client.get(Pods, 'cc-4', NS)).status?.phase, 'Pending');

      // osc status: every slot of both TEE nodes in use.
      const summary = await readConfidential(client, (await client.list(Nodes)).items);
      assert.equal(summary.tee, t.kind);
      assert.deepEqual(summary.keySlots, [
        { node: 'worker-0', resource: t.slots, allocatable: 2, used: 2 },
        { node: 'worker-1', resource: t.slots, allocatable: 2, used: 2 },
      ]);
      assert.match(renderConfidential(summary), /worker-0 {2}2 used, 0 free of 2/);
    });

    test('the gate turned off: kata-cc stays while its pods run, and goes once they are gone', async () => {
      const { client } = cluster.dev;
      await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'false' } }, { namespace: OPERATOR_NAMESPACE });
      // The operator says why the class stays (an event on the KataConfig) ...
      await waitFor(
        async () =>
          (await client.list(Events, { namespace: 'default' })).items.find(
            (e) => e.reason === 'RuntimeClassInUse' && e.note?.startsWith('RuntimeClass kata-cc is no longer wanted but 5 pods'),
          ),
        { timeoutMs: 60_000, message: 'the RuntimeClassInUse event' },
      );
      // ... and it is still there, not being deleted.
      const kept = await client.get(RuntimeClasses, 'kata-cc');
      assert.equal(kept.metadata.deletionTimestamp, undefined);
      assert.ok(rec.seen.at(-1)?.runtimeClasses?.includes('kata-cc'));

      for (const p of (await client.list(Pods, { namespace: NS })).items)
        await client.delete(Pods, p.metadata.name ?? '', { namespace: NS });
      await waitFor(async () => !(await client.find(RuntimeClasses, 'kata-cc')), { timeoutMs: 120_000, message: 'kata-cc removed' });
      await waitFor(
        () =>
          settled(rec.seen.at(-1)) &&
          JSON.stringify([...(rec.seen.at(-1)?.runtimeClasses ?? [])].sort()) === JSON.stringify(['kata', ...gpu]),
        { timeoutMs: 60_000, message: 'status lists kata (and the GPU class) only' },
      );
      assert.ok(await client.find(RuntimeClasses, 'kata'), 'kata stays');
    });

    if (t.kind === 'tdx') {
      test("an administrator's delete of kata-cc waits for its pods (the cleanup finalizer); then the operator makes it again", async () => {
        const { client } = cluster.dev;
        await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'true' } }, { namespace: OPERATOR_NAMESPACE });
        const first = await waitFor(() => client.find(RuntimeClasses, 'kata-cc'), { timeoutMs: 60_000, message: 'kata-cc again' });
        await client.create(Pods, podOf('held', 'kata-cc'));
        await waitFor(async () => (await client.get(Pods, 'held', NS)).status?.phase === 'Running', {
          timeoutMs: 60_000,
          message: 'pod running',
        });
        await client.delete(RuntimeClasses, 'kata-cc');
        await waitFor(
          async () =>
            (await client.list(Events, { namespace: 'default' })).items.find(
              (e) => e.reason === 'WaitingForPods' && e.regarding?.name === 'kata-cc',
            ),
          { timeoutMs: 60_000, message: 'the finalizer holding kata-cc' },
        );
        const held = await client.get(RuntimeClasses, 'kata-cc');
        assert.ok(held.metadata.deletionTimestamp, 'being deleted');
        assert.equal(held.metadata.uid, first.metadata.uid, 'the same class, kept');

        await client.delete(Pods, 'held', { namespace: NS });
        const again = await waitFor(
          async () => {
            const rc = await client.find(RuntimeClasses, 'kata-cc');
            return rc && rc.metadata.uid !== first.metadata.uid ? rc : undefined;
          },
          { timeoutMs: 120_000, message: 'kata-cc released, then made again' },
        );
        assert.equal(again.handler, 'kata-tdx');
      });

      test('refusals: a second TEE kind, a bad gate value, an OpenShift release below the minimum; each cleared converges', async () => {
        const { client } = cluster.dev;
        const last = () => rec.seen.at(-1)?.inProgress;
        // worker-2's firmware turns on SEV-SNP, and the administrator adds NFD's rule for it: two TEE kinds
        // among the selected nodes.
        await client.create(NodeFeatureRules, teeNodeFeatureRule('snp'));
        await client.patch(Nodes, 'worker-2', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: teeHardware('snp', 2) } } });
        await waitFor(() => last()?.message.startsWith('multiple TEE platforms detected; only one per cluster supported'), {
          timeoutMs: 60_000,
          message: 'the multiple-TEE refusal',
        });
        assert.equal(last()?.reason, 'Failed');
        assert.match(last()?.message ?? '', /Intel TDX on worker-0, worker-1; AMD SEV-SNP on worker-2/);
        await client.patch(Nodes, 'worker-2', { metadata: { annotations: { [CPU_SECURITY_ANNOTATION]: null } } });
        await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 60_000, message: 'settled again' });

        await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'yes' } }, { namespace: OPERATOR_NAMESPACE });
        await waitFor(() => last()?.message.includes('feature gate "confidential"'), {
          timeoutMs: 60_000,
          message: 'the bad-gate refusal',
        });
        assert.equal(last()?.reason, 'Failed');
        assert.match(last()?.message ?? '', /is "yes": it must be one of true, false/);
        assert.ok(await client.find(RuntimeClasses, 'kata-cc'), 'kata-cc neither made nor removed on a value osc cannot read');
        await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'true' } }, { namespace: OPERATOR_NAMESPACE });
        await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 60_000, message: 'settled after the fix' });

        await setClusterVersion(client, '4.16.20');
        await waitFor(() => last()?.reason === 'UnsupportedOCPVersion', { timeoutMs: 60_000, message: 'UnsupportedOCPVersion' });
        assert.equal(last()?.status, 'False');
        assert.equal(last()?.message, confidentialTexts.unsupportedVersion('4.16.20', '4.18.38'));
        await setClusterVersion(client, '4.21.9');
        await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 60_000, message: 'settled after the upgrade' });
      });
    }

    test('uninstall: blocked while a kata-cc pod runs, then every class goes, its finalizer released', async () => {
      const { client } = cluster.dev;
      await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'true' } }, { namespace: OPERATOR_NAMESPACE });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.runtimeClasses?.includes('kata-cc'), {
        timeoutMs: 120_000,
        message: 'kata-cc offered',
      });
      // The API server's RuntimeClass admission reads its own cache of classes: a class just made again (the
      // refusals before took it away) may not be there yet, and the pod is refused until it is.
      await waitFor(
        () =>
          client.create(Pods, podOf('last', 'kata-cc')).catch((e: Error) => {
            if (/RuntimeClass "kata-cc" not found/.test(e.message)) return undefined;
            throw e;
          }),
        { timeoutMs: 60_000, message: 'the pod admitted' },
      );
      await waitFor(async () => (await client.get(Pods, 'last', NS)).status?.phase === 'Running', {
        timeoutMs: 60_000,
        message: 'pod running',
      });
      await client.delete(KataConfigs, KC);
      await waitFor(() => rec.seen.at(-1)?.inProgress?.reason === 'BlockedByExistingKataPods', { timeoutMs: 60_000, message: 'blocked' });
      assert.match(rec.seen.at(-1)?.inProgress?.message ?? '', /"kata-cc" RuntimeClass/);
      await client.delete(Pods, 'last', { namespace: NS });
      await waitFor(async () => !(await client.find(KataConfigs, KC)), { timeoutMs: 240_000, message: 'uninstalled' });
      for (const rc of ['kata', 'kata-cc', 'kata-nvidia-gpu'])
        await waitFor(async () => !(await client.find(RuntimeClasses, rc)), { timeoutMs: 60_000, message: `${rc} gone` });
    });

    if (t.kind === 'tdx') {
      test('deploymentMode at start: DaemonSet runs the kata-deploy platform on OpenShift, MachineConfig the MCO one', async () => {
        const { client } = cluster.dev;
        const modeAtStart = async (mode: string) => {
          await op?.stop();
          await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { deploymentMode: mode } }, { namespace: OPERATOR_NAMESPACE });
          op = await startOperator(cluster.dev);
          return op.operator.platform.name;
        };
        assert.equal(await modeAtStart('DaemonSet'), 'kubernetes');
        assert.equal(await modeAtStart('MachineConfig'), 'openshift');
        assert.equal(await modeAtStart('DaemonSetFallback'), 'openshift');
        // A value osc cannot read leaves the choice to discovery (the KataConfig's condition names it).
        assert.equal(await modeAtStart('Daemonset'), 'openshift');
      });
    }
  });
}
