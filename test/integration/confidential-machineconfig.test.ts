/**
 * Confidential containers' node configuration on OpenShift: turning the confidential gate on writes the
 * TEE handler's MachineConfig for the kata pool, the simulated Machine Config Operator renders it and
 * reboots the kata nodes into it one at a time, and only then is kata-cc made; turning the gate off while a
 * kata-cc pod runs removes nothing (class, MachineConfig, node configuration) until the pod is gone, and
 * then the nodes roll back, again one at a time.
 *
 * Every node, RuntimeClass and MachineConfig change is recorded from watches; on this API server
 * resourceVersions are etcd revisions, one order across kinds, so "after" is measured by them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FEATURE_GATES_CONFIGMAP } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { CONFIDENTIAL_MACHINE_CONFIG, MC_ROLE_LABEL, MCO_CURRENT_CONFIG, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { type MachineConfig, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import {
  ConfigMaps,
  Events,
  Namespaces,
  type Node,
  Nodes,
  type Pod,
  Pods,
  type RuntimeClass,
  RuntimeClasses,
} from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { crioDropInPath, kataConfigPath } from '../../src/platform/openshift/confidential.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { nodeUnavailable } from '../support/observe.ts';
import { type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = 'confidential-apps';
const KC = 'example-kataconfig';
const WORKERS = ['worker-0', 'worker-1', 'worker-2'];
const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';
const rvOf = (o: KubeObject) => Number(o.metadata.resourceVersion);

interface Seen<T> {
  type: 'add' | 'update' | 'delete';
  rv: number;
  obj: T;
}

function record<T extends KubeObject>(inf: Informer<T>, into: Seen<T>[], after?: () => void): void {
  inf.addEventHandler({
    add: (o) => {
      into.push({ type: 'add', rv: rvOf(o), obj: o });
      after?.();
    },
    update: (_, o) => {
      into.push({ type: 'update', rv: rvOf(o), obj: o });
      after?.();
    },
    delete: (o) => {
      into.push({ type: 'delete', rv: rvOf(o), obj: o });
      after?.();
    },
  });
}

describe('confidential containers on OpenShift: the TEE handler rolled out through the kata pool', () => {
  const cluster = useDevCluster({
    workers: 3,
    rebootMs: 300,
    hardware: { tee: { kind: 'tdx', nodes: ['worker-0', 'worker-1'], keySlots: 2 } },
  });
  let op: RunningOperator | undefined;
  let rec: StatusRecorder;
  const stop = new AbortController();
  let nodes: Informer<Node>;
  const nodeEvents: Seen<Node>[] = [];
  const classEvents: Seen<RuntimeClass>[] = [];
  const mcEvents: Seen<MachineConfig>[] = [];
  /** The kata nodes out of service after each node event, in watch order. */
  const unavailable: { rv: number; count: number }[] = [];

  before(async () => {
    const { client } = cluster.dev;
    await client.create(Namespaces, { metadata: { name: NS } });
    nodes = new Informer(client, Nodes);
    const classes = new Informer(client, RuntimeClasses);
    const mcs = new Informer(client, MachineConfigs, { fieldSelector: `metadata.name=${CONFIDENTIAL_MACHINE_CONFIG}` });
    record(nodes, nodeEvents, () =>
      unavailable.push({
        rv: nodeEvents.at(-1)?.rv ?? 0,
        count: WORKERS.filter((w) => {
          const n = nodes.get(w);
          return n && nodeUnavailable(n);
        }).length,
      }),
    );
    record(classes, classEvents);
    record(mcs, mcEvents);
    for (const inf of [nodes, classes, mcs] as Informer<KubeObject>[]) void inf.run(stop.signal);
    await Promise.all([nodes.waitForSync(), classes.waitForSync(), mcs.waitForSync()]);
    rec = new StatusRecorder(client, KC);
    await rec.synced();
    // No periodic recheck to lean on: the last kata-cc pod's deletion itself must let the class go.
    op = await startOperator(cluster.dev, { kataConfig: { blockedRecheckMs: 600_000 } });
  });
  after(async () => {
    stop.abort();
    await op?.stop();
    await rec.stop();
  });

  const kataPool = () => cluster.dev.client.get(MachineConfigPools, 'kata-oc');
  const sources = (p: MachineConfigPool) => (p.spec.configuration?.source ?? []).map((s) => s.name);
  /** The revision at which each worker first ran the pool's target `config` after `since`. */
  const doneAt = (config: string, since: number) =>
    WORKERS.map(
      (w) =>
        nodeEvents.find((e) => e.rv > since && e.obj.metadata.name === w && e.obj.metadata.annotations?.[MCO_CURRENT_CONFIG] === config)
          ?.rv,
    );
  /** Each worker rebooted (went NotReady) after `since`. */
  const rebootedSince = (since: number) =>
    WORKERS.filter((w) =>
      nodeEvents.some(
        (e) => e.rv > since && e.obj.metadata.name === w && e.obj.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True',
      ),
    );

  test('without the gate: kata alone, and no confidential MachineConfig', async () => {
    const { client } = cluster.dev;
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
    await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 180_000, message: 'installed' });
    assert.deepEqual(rec.seen.at(-1)?.runtimeClasses, ['kata']);
    assert.equal(await client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG), undefined);
    assert.ok(!sources(await kataPool()).includes(CONFIDENTIAL_MACHINE_CONFIG));
  });

  test('the gate on: the TDX handler MachineConfig is rendered into the kata pool, the nodes reboot one at a time, kata-cc comes after', async () => {
    const { client } = cluster.dev;
    const before = (await kataPool()).spec.configuration?.name ?? '';
    const mark = Math.max(...nodeEvents.map((e) => e.rv), 0);
    const seenBefore = rec.seen.length;
    const t0 = performance.now();
    await client.create(ConfigMaps, {
      metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
      data: { confidential: 'true' },
    });
    const mc = await waitFor(() => client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG), {
      timeoutMs: 60_000,
      message: 'the confidential MachineConfig',
    });
    assert.equal(mc.metadata.labels?.[MC_ROLE_LABEL], 'kata-oc');
    const paths = ((mc.spec.config as { storage?: { files?: { path: string }[] } }).storage?.files ?? []).map((f) => f.path).sort();
    assert.deepEqual(paths, [crioDropInPath('kata-tdx'), kataConfigPath('kata-tdx')].sort());

    const tMc = performance.now();
    await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.runtimeClasses?.includes('kata-cc'), {
      timeoutMs: 240_000,
      message: 'installed again, with kata-cc',
    });
    // Figures for docs/confidential-containers.md (not asserted: speed targets live in bench/).
    console.log(
      `# gate on: MachineConfig after ${Math.round(tMc - t0)} ms, kata-cc after ${Math.round(performance.now() - t0)} ms (${WORKERS.length} kata nodes, 300 ms reboots)`,
    );
    const pool = await kataPool();
    const target = pool.spec.configuration?.name ?? '';
    assert.notEqual(target, before, 'a new rendered configuration');
    assert.ok(sources(pool).includes(CONFIDENTIAL_MACHINE_CONFIG), 'rendered from the confidential MachineConfig');
    // Every kata node rebooted into it, never two at once.
    assert.deepEqual(rebootedSince(mark), WORKERS);
    const rolling = unavailable.filter((u) => u.rv > mark);
    assert.ok(rolling.some((u) => u.count === 1));
    assert.equal(Math.max(...rolling.map((u) => u.count)), 1, 'one node at a time');
    // The status said so while the nodes rolled, and kata-cc was made once the last one ran the new target.
    assert.ok(
      rec.seen.slice(seenBefore).some((v) => v.inProgress?.status === 'True' && v.inProgress.reason === 'Updating'),
      'Updating while the nodes roll',
    );
    const done = doneAt(target, mark);
    assert.ok(
      done.every((rv) => rv !== undefined),
      `every worker on ${target}`,
    );
    const made = classEvents.find((e) => e.type === 'add' && e.obj.metadata.name === 'kata-cc');
    assert.ok(made, 'kata-cc made');
    assert.ok(made.rv > Math.max(...(done as number[])), 'kata-cc only after the last node runs the handler');
    assert.equal((await client.get(RuntimeClasses, 'kata-cc')).handler, 'kata-tdx');
  });

  test('the gate off while a kata-cc pod runs: nothing is removed until the pod is gone, then the nodes roll back one at a time', async () => {
    const { client } = cluster.dev;
    const pod: Pod = {
      metadata: { name: 'confidential', namespace: NS },
      spec: {
        runtimeClassName: 'kata-cc',
        containers: [{ name: 'app', image: 'registry.access.redhat.com/ubi9/ubi-minimal' }],
      } as Pod['spec'],
    };
    await client.create(Pods, pod);
    await waitFor(async () => (await client.get(Pods, 'confidential', NS)).status?.phase === 'Running', {
      timeoutMs: 60_000,
      message: 'the kata-cc pod running',
    });
    // The Machine Config Operator's last writes of the rollout are in: nothing else wakes the operator now.
    await waitFor(
      async () => {
        const p = await kataPool();
        return p.status?.configuration?.name === p.spec.configuration?.name && p.status?.updatedMachineCount === WORKERS.length;
      },
      { timeoutMs: 60_000, message: 'the kata pool settled' },
    );
    const withTee = (await kataPool()).spec.configuration?.name ?? '';
    await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'false' } }, { namespace: OPERATOR_NAMESPACE });
    // A pass has seen the gate off; a second one (woken by a label on the KataConfig) shows that the first
    // made all its writes, and that nothing was removed.
    const inUse = async () =>
      (await client.list(Events, { namespace: 'default' })).items.find(
        (e) => e.reason === 'RuntimeClassInUse' && e.note?.startsWith('RuntimeClass kata-cc is no longer wanted'),
      );
    await waitFor(inUse, { timeoutMs: 90_000, message: 'the RuntimeClassInUse event' });
    const count = async () => (await inUse())?.series?.count ?? 1;
    // Passes woken before now may still come: one woken now, after them, says so again last.
    const before = await count();
    await client.patch(KataConfigs, KC, { metadata: { labels: { 'osc.test/nudge': '1' } } });
    await waitFor(async () => (await count()) > before, { timeoutMs: 90_000, message: 'the event again' });
    const kept = await client.get(RuntimeClasses, 'kata-cc');
    assert.equal(kept.metadata.deletionTimestamp, undefined, 'kata-cc kept');
    assert.ok(await client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG), 'the handler MachineConfig kept');
    assert.equal((await kataPool()).spec.configuration?.name, withTee, 'the pool target unchanged: no node rolls');
    assert.equal(mcEvents.filter((e) => e.type === 'delete').length, 0);

    const mark = Math.max(...nodeEvents.map((e) => e.rv), 0);
    const t0 = performance.now();
    await client.delete(Pods, 'confidential', { namespace: NS });
    await waitFor(async () => !(await client.find(MachineConfigs, CONFIDENTIAL_MACHINE_CONFIG)), {
      timeoutMs: 120_000,
      message: 'the handler MachineConfig deleted',
    });
    await waitFor(
      async () => {
        const p = await kataPool();
        return (
          settled(rec.seen.at(-1)) &&
          !sources(p).includes(CONFIDENTIAL_MACHINE_CONFIG) &&
          p.status?.configuration?.name === p.spec.configuration?.name
        );
      },
      { timeoutMs: 240_000, message: 'the nodes back on the pool target without the handler' },
    );
    console.log(`# gate off: the pod deleted, nodes back without the handler after ${Math.round(performance.now() - t0)} ms`);
    assert.deepEqual(rec.seen.at(-1)?.runtimeClasses, ['kata']);
    const classGone = classEvents.find((e) => e.type === 'delete' && e.obj.metadata.name === 'kata-cc');
    const mcGone = mcEvents.find((e) => e.type === 'delete');
    assert.ok(classGone && mcGone && classGone.rv < mcGone.rv, 'the class goes first, then its handler');
    assert.deepEqual(rebootedSince(mark), WORKERS, 'every kata node rolled back');
    assert.equal(Math.max(...unavailable.filter((u) => u.rv > mark).map((u) => u.count)), 1, 'one node at a time');
  });
});
