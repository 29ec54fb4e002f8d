/**
 * Confidential containers on plain Kubernetes, for Intel TDX and AMD SEV-SNP: the dev cluster's TEE node
 * labelled and given its key slot by Node Feature Discovery (the add-on there, reading the documented
 * NodeFeatureRule), kata-deploy installing the TEE shim beside the default one, kata-cc with kata-deploy's
 * TEE handler and the slot overhead, the scheduler keeping its pods to the TEE kata node and to its slots,
 * and the gate turned off taking the class and the shim away once the pods are gone. On the TDX cluster a
 * GPU node the NVIDIA GPU operator prepared gets kata-nvidia-gpu and kata-deploy's GPU shim, which stay.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_CLASS_CLEANUP_FINALIZER, type TeeKind, teePlatform } from '../../src/api/confidential.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { NodeFeatureRules } from '../../src/devcluster/nfd/rules.ts';
import { ConfigMaps, DaemonSets, Events, Namespaces, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { INSTALLER_NAME, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import { type RunningOperator, StatusRecorder, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const NS = 'confidential-apps';

const podOf = (name: string): Pod => ({
  metadata: { name, namespace: NS },
  spec: { runtimeClassName: 'kata-cc', containers: [{ name: 'c', image: 'registry.example/app:1' }] } as Pod['spec'],
});

const table: { kind: TeeKind; shim: string; gpuNodes: string[] }[] = [
  { kind: 'tdx', shim: 'qemu-tdx', gpuNodes: ['worker-1'] },
  { kind: 'snp', shim: 'qemu-snp', gpuNodes: [] },
];

for (const t of table) {
  const tee = teePlatform(t.kind);
  const slots = tee.keySlots ?? '';
  const gpu = t.gpuNodes.length > 0;
  describe(`confidential containers on plain Kubernetes (kata-deploy), ${tee.title}`, () => {
    const cluster = useDevCluster({
      distribution: 'kubernetes',
      workers: 2,
      masters: 1,
      kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 1000 },
      // worker-0 has the TEE with one key slot; NFD (the add-on) labels it from the documented rule.
      hardware: { tee: { kind: t.kind, nodes: ['worker-0'], keySlots: 1 }, gpuNodes: t.gpuNodes },
    });
    // The shims kata-deploy is to install: the default, the GPU operator's where a GPU node is, the TEE's.
    const withGpu = gpu ? ['qemu-nvidia-gpu'] : [];
    let op: RunningOperator;
    let rec: StatusRecorder;
    before(async () => {
      const { client } = cluster.dev;
      // What NFD's TEE rule gives worker-0: its label, and one key slot (capacity, and the kubelet's copy).
      const w0 = await waitFor(
        async () => {
          const n = await client.get(Nodes, 'worker-0');
          return n.status?.allocatable?.[slots] === '1' ? n : undefined;
        },
        { timeoutMs: 60_000, message: `worker-0 advertising its ${slots}` },
      );
      assert.equal(w0.metadata.labels?.[tee.label], 'true');
      assert.equal((await client.get(Nodes, 'worker-1')).metadata.labels?.[tee.label], undefined);
      assert.equal((await client.list(NodeFeatureRules)).items.length, 1, "the TEE's NodeFeatureRule");
      await client.create(Namespaces, { metadata: { name: NS } });
      await client.create(ConfigMaps, {
        metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
        data: { confidential: 'true' },
      });
      op = await startOperator(cluster.dev, { platformOptions: { settings: { kubernetes: { installDeadlineMs: 60_000 } } } });
      rec = new StatusRecorder(client, KC);
      await rec.synced();
    });
    after(async () => {
      await rec?.stop();
      await op?.stop();
    });
    const settled = () => {
      const c = rec.current?.status?.conditions?.find((x) => x.type === 'InProgress');
      return c?.status === 'False' && c.reason === '';
    };
    const shims = async () => {
      const ds = await cluster.dev.client.get(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE);
      const env = (ds.spec.template.spec as { containers: { env?: { name: string; value?: string }[] }[] }).containers[0]?.env ?? [];
      return env.find((e) => e.name === 'SHIMS_X86_64')?.value;
    };

    test(`kata-deploy installs the ${t.shim} shim too; kata-cc has its handler, the slot overhead, the TEE kata nodes`, async () => {
      const { client } = cluster.dev;
      await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
      await waitFor(() => settled() && rec.current?.status?.runtimeClasses?.includes('kata-cc'), {
        timeoutMs: 180_000,
        message: 'installed with kata-cc',
      });
      assert.equal(await shims(), ['qemu', ...withGpu, t.shim].join(' '));
      const rc = await client.get(RuntimeClasses, 'kata-cc');
      assert.equal(rc.handler, `kata-${t.shim}`);
      assert.deepEqual(rc.overhead?.podFixed, { cpu: '250m', memory: '350Mi', [slots]: '1' });
      assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_RUNTIME_LABEL]: 'true', [tee.label]: 'true' });
      assert.ok(rc.metadata.finalizers?.includes(RUNTIME_CLASS_CLEANUP_FINALIZER));
      if (gpu) {
        const g = await client.get(RuntimeClasses, 'kata-nvidia-gpu');
        assert.equal(g.handler, 'kata-qemu-nvidia-gpu');
        assert.deepEqual(g.overhead?.podFixed, { cpu: '1', memory: '4Gi' });
        assert.equal(g.scheduling?.nodeSelector?.['nvidia.com/gpu.present'], 'true');
        assert.equal(g.scheduling?.nodeSelector?.[KATA_RUNTIME_LABEL], 'true');
      } else assert.equal(await client.find(RuntimeClasses, 'kata-nvidia-gpu'), undefined, 'no GPU node, no GPU class');
    });

    test('the scheduler: the first kata-cc pod on the TEE node, the second Pending for want of its one key slot', async () => {
      const { client } = cluster.dev;
      await client.create(Pods, podOf('cc-0'));
      const first = await waitFor(
        async () => {
          const p = await client.get(Pods, 'cc-0', NS);
          return p.status?.phase === 'Running' ? p : undefined;
        },
        { timeoutMs: 60_000, message: 'cc-0 running' },
      );
      assert.equal((first.spec as { nodeName?: string }).nodeName, 'worker-0');
      await client.create(Pods, podOf('cc-1'));
      const refused = await waitFor(
        async () => {
          const p = await client.get(Pods, 'cc-1', NS);
          const c = (p.status?.conditions as { type: string; status: string; message?: string }[] | undefined)?.find(
            (x) => x.type === 'PodScheduled',
          );
          return c?.status === 'False' ? c : undefined;
        },
        { timeoutMs: 60_000, message: 'cc-1 refused by the scheduler' },
      );
      assert.match(refused.message ?? '', new RegExp(`Insufficient ${slots.replace(/[./]/g, (c) => `\\${c}`)}`));
    });

    test('the gate turned off: kata-cc and the TEE shim stay while the pods run, and go once they are gone', async () => {
      const { client } = cluster.dev;
      await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'false' } }, { namespace: OPERATOR_NAMESPACE });
      // Seen twice: the pass that first saw the gate off has applied its platform plan since.
      await waitFor(
        async () =>
          (await client.list(Events, { namespace: 'default' })).items.find(
            (e) =>
              e.reason === 'RuntimeClassInUse' &&
              e.note?.startsWith('RuntimeClass kata-cc is no longer wanted') &&
              (e.series?.count ?? 1) >= 2,
          ),
        { timeoutMs: 90_000, message: 'the RuntimeClassInUse event, twice' },
      );
      assert.ok(await client.find(RuntimeClasses, 'kata-cc'), 'kata-cc kept for its pods');
      assert.equal(await shims(), ['qemu', ...withGpu, t.shim].join(' '), 'the nodes keep the handler the kept class needs');
      for (const p of ['cc-0', 'cc-1']) await client.delete(Pods, p, { namespace: NS });
      await waitFor(async () => !(await client.find(RuntimeClasses, 'kata-cc')), { timeoutMs: 120_000, message: 'kata-cc removed' });
      const left = ['qemu', ...withGpu].join(' ');
      await waitFor(async () => settled() && (await shims()) === left, { timeoutMs: 180_000, message: `kata-deploy back to ${left}` });
      assert.deepEqual([...(rec.current?.status?.runtimeClasses ?? [])].sort(), ['kata', ...(gpu ? ['kata-nvidia-gpu'] : [])]);
    });
  });
}
