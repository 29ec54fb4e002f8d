/**
 * Confidential containers on plain Kubernetes: the confidential gate on with a TDX node (labelled and given
 * its key slots as Node Feature Discovery, an add-on there, would), kata-deploy installing the TEE shim
 * beside the default one, kata-cc with kata-deploy's TDX handler and the slot overhead, the scheduler
 * keeping its pods to the TDX kata node and to its slots, and the gate turned off taking the class and the
 * shim away once the pods are gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../src/api/confidential.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { ConfigMaps, DaemonSets, Events, Namespaces, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { INSTALLER_NAME, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import { type RunningOperator, StatusRecorder, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const NS = 'confidential-apps';
const TDX = 'intel.feature.node.kubernetes.io/tdx';
const KEYS = 'tdx.intel.com/keys';

const podOf = (name: string): Pod => ({
  metadata: { name, namespace: NS },
  spec: { runtimeClassName: 'kata-cc', containers: [{ name: 'c', image: 'registry.example/app:1' }] } as Pod['spec'],
});

describe('confidential containers on plain Kubernetes (kata-deploy)', () => {
  const cluster = useDevCluster({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 1000 },
  });
  let op: RunningOperator;
  let rec: StatusRecorder;
  before(async () => {
    const { client } = cluster.dev;
    // What NFD's TDX rule gives worker-0: its label, and one key slot (capacity, and the kubelet's copy).
    await client.patch(Nodes, 'worker-0', { metadata: { labels: { [TDX]: 'true' } } });
    await client.patch(Nodes, 'worker-0', { status: { capacity: { [KEYS]: '1' } } }, { subresource: 'status' });
    await client.patch(Nodes, 'worker-0', { status: { allocatable: { [KEYS]: '1' } } }, { subresource: 'status' });
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

  test("kata-deploy installs the TDX shim too; kata-cc has kata-deploy's TDX handler, the slot overhead, the TDX kata nodes", async () => {
    const { client } = cluster.dev;
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
    await waitFor(() => settled() && rec.current?.status?.runtimeClasses?.includes('kata-cc'), {
      timeoutMs: 180_000,
      message: 'installed with kata-cc',
    });
    assert.equal(await shims(), 'qemu qemu-tdx');
    const rc = await client.get(RuntimeClasses, 'kata-cc');
    assert.equal(rc.handler, 'kata-qemu-tdx');
    assert.deepEqual(rc.overhead?.podFixed, { cpu: '250m', memory: '350Mi', [KEYS]: '1' });
    assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_RUNTIME_LABEL]: 'true', [TDX]: 'true' });
    assert.ok(rc.metadata.finalizers?.includes(RUNTIME_CLASS_CLEANUP_FINALIZER));
  });

  test('the scheduler: the first kata-cc pod on the TDX node, the second Pending for want of its one key slot', async () => {
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
    assert.match(refused.message ?? '', /Insufficient tdx\.intel\.com\/keys/);
  });

  test('the gate turned off: kata-cc and the TDX shim stay while the pods run, and go once they are gone', async () => {
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
    assert.equal(await shims(), 'qemu qemu-tdx', 'the nodes keep the handler the kept class needs');
    for (const p of ['cc-0', 'cc-1']) await client.delete(Pods, p, { namespace: NS });
    await waitFor(async () => !(await client.find(RuntimeClasses, 'kata-cc')), { timeoutMs: 120_000, message: 'kata-cc removed' });
    await waitFor(async () => settled() && (await shims()) === 'qemu', { timeoutMs: 180_000, message: 'kata-deploy back to qemu alone' });
    assert.deepEqual(rec.current?.status?.runtimeClasses, ['kata']);
  });
});
