/**
 * The simulated OpenShift cluster against a real kube-apiserver: CRDs and printer columns, nodes, pools,
 * rendering, rolling updates honouring maxUnavailable with the pool status right at every step, custom
 * pools, ContainerRuntimeConfigs, failure injection, NFD, adding and removing nodes.
 * One dev cluster (3 workers, 1 master, 300ms reboots) serves every test of this file, in order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  KATA_NODE_ROLE_LABEL,
  MC_ROLE_LABEL,
  MCO_CURRENT_CONFIG,
  MCO_DESIRED_CONFIG,
  MCO_REASON,
  MCO_STATE,
  NFD_KATA_LABEL,
  OPERATOR_NAMESPACE,
  POOL_LABEL_PREFIX,
} from '../../src/api/names.ts';
import {
  type ContainerRuntimeConfig,
  ContainerRuntimeConfigs,
  Infrastructures,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
} from '../../src/api/openshift.ts';
import { DevCluster, FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { Namespaces, type Node, Nodes } from '../../src/kube/resources.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';
import { nodeUnavailable, PoolHistory, type PoolSummary, summarizePool } from '../support/observe.ts';
import { waitFor } from '../support/wait.ts';

const log = process.env.OSC_TEST_LOG ? createLogger({ level: 'debug', destination: process.stderr }) : silentLogger();
const WORKERS = ['worker-0', 'worker-1', 'worker-2'];

let dc: DevCluster;
const stop = new AbortController();
const history = new PoolHistory();
let pools: Informer<MachineConfigPool>;
let nodes: Informer<Node>;
/** The most worker nodes seen unavailable at once since the last reset, from every node event. */
let maxUnavailableNodes = 0;
let nodeWasNotReady = new Set<string>();

function trackNodes(): void {
  const workers = nodes.list().filter((n) => n.metadata.name?.startsWith('worker-'));
  maxUnavailableNodes = Math.max(maxUnavailableNodes, workers.filter(nodeUnavailable).length);
  for (const n of workers)
    if (n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') nodeWasNotReady.add(n.metadata.name ?? '');
}

function resetTracking(): number {
  maxUnavailableNodes = 0;
  nodeWasNotReady = new Set();
  return history.mark();
}

const pool = (name: string) => pools.get(name);
const node = (name: string) => nodes.get(name);
const ann = (name: string, key: string) => node(name)?.metadata.annotations?.[key];

function poolSettled(name: string, previousTarget?: string): MachineConfigPool | undefined {
  const p = pool(name);
  const s = p?.status;
  if (!p || !s || !p.spec.configuration?.name || p.spec.configuration.name === previousTarget) return undefined;
  const updated = s.conditions?.find((c) => c.type === 'Updated')?.status === 'True';
  return updated && s.observedGeneration === p.metadata.generation && s.configuration?.name === p.spec.configuration.name ? p : undefined;
}

function workerMC(name: string, role: string, path: string, extra: Partial<MachineConfig['spec']> = {}): MachineConfig {
  return {
    metadata: { name, labels: { [MC_ROLE_LABEL]: role } },
    spec: {
      config: {
        ignition: { version: '3.2.0' },
        storage: { files: [{ path, mode: 420, contents: { source: 'data:,hello' } }] },
      },
      ...extra,
    },
  };
}

/** Invariants every recorded pool status must satisfy, whatever the step. */
function assertConsistent(s: PoolSummary, maxUnavailable: number): void {
  const at = JSON.stringify(s);
  assert.ok((s.unavailableMachineCount ?? 0) <= maxUnavailable, `more than ${maxUnavailable} unavailable: ${at}`);
  assert.ok((s.updatedMachineCount ?? 0) <= (s.machineCount ?? 0), `updated > machines: ${at}`);
  assert.ok((s.readyMachineCount ?? 0) <= (s.updatedMachineCount ?? 0), `ready > updated: ${at}`);
  const allDone = s.updatedMachineCount === s.machineCount && s.readyMachineCount === s.machineCount && s.unavailableMachineCount === 0;
  if (s.observedGeneration === s.generation) {
    assert.equal(s.updated, allDone ? 'True' : 'False', `Updated must say whether all machines are done: ${at}`);
    assert.equal(s.updating, allDone ? 'False' : 'True', `Updating must be the opposite of Updated: ${at}`);
  }
  assert.equal(s.degraded, (s.degradedMachineCount ?? 0) > 0 ? 'True' : 'False', `Degraded must follow degraded machines: ${at}`);
}

/** The statuses of one rollout: from the render of a new target until Updated on it. */
function rolloutStatuses(mark: number, name: string, newTarget: string): PoolSummary[] {
  const all = history.since(mark, name).filter((s) => s.target === newTarget && s.observedGeneration === s.generation);
  assert.ok(all.length > 0, `no status recorded for ${name} on ${newTarget}`);
  return all;
}

before(async () => {
  dc = await DevCluster.start({
    workers: 3,
    masters: 1,
    rebootMs: 300,
    pickupDelayMs: 100,
    virtualizationCapable: ['worker-0', 'worker-1'],
    log,
  });
  pools = new Informer(dc.client, MachineConfigPools, { log });
  nodes = new Informer(dc.client, Nodes, { log });
  pools.addEventHandler({ add: (p) => history.record(p), update: (_, p) => history.record(p) });
  nodes.addEventHandler({ add: trackNodes, update: trackNodes, delete: trackNodes });
  void pools.run(stop.signal);
  void nodes.run(stop.signal);
  await Promise.all([pools.waitForSync(), nodes.waitForSync()]);
});

after(async () => {
  stop.abort();
  await dc?.stop();
});

describe('dev cluster', () => {
  test('starts with masters, Ready workers, the master and worker pools Updated, and the cluster objects', async () => {
    const names = nodes
      .list()
      .map((n) => n.metadata.name)
      .sort();
    assert.deepEqual(names, ['master-0', ...WORKERS]);
    for (const n of nodes.list()) {
      const labels = n.metadata.labels ?? {};
      assert.equal(labels['kubernetes.io/os'], 'linux');
      assert.equal(labels['kubernetes.io/hostname'], n.metadata.name);
      assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      assert.ok(n.status?.capacity?.cpu && n.status.capacity.memory && n.status.capacity.pods);
      assert.ok(!n.spec?.unschedulable);
    }
    assert.equal(node('master-0')?.metadata.labels?.['node-role.kubernetes.io/master'], '');
    assert.equal(node('master-0')?.metadata.labels?.['node-role.kubernetes.io/control-plane'], '');
    assert.equal(node('master-0')?.metadata.labels?.['node-role.kubernetes.io/worker'], undefined);
    for (const w of WORKERS) {
      assert.equal(node(w)?.metadata.labels?.['node-role.kubernetes.io/worker'], '');
      assert.equal(node(w)?.spec?.taints, undefined, `${w} has no taints once Ready`);
    }
    assert.deepEqual(node('master-0')?.spec?.taints, [{ key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' }]);

    // NFD labelled exactly the virtualization-capable nodes.
    assert.equal(node('worker-0')?.metadata.labels?.[NFD_KATA_LABEL], 'true');
    assert.equal(node('worker-1')?.metadata.labels?.[NFD_KATA_LABEL], 'true');
    assert.equal(node('worker-2')?.metadata.labels?.[NFD_KATA_LABEL], undefined);
    assert.equal(node('master-0')?.metadata.labels?.[NFD_KATA_LABEL], undefined);

    for (const [name, count] of [
      ['master', 1],
      ['worker', 3],
    ] as const) {
      const p = pool(name);
      assert.ok(p, `pool ${name}`);
      assert.equal(p.metadata.labels?.[`${POOL_LABEL_PREFIX}${name}`], '');
      const target = p.spec.configuration?.name ?? '';
      assert.match(target, new RegExp(`^rendered-${name}-[0-9a-f]{32}$`));
      const s = summarizePool(p);
      assert.deepEqual(
        [s.config, s.updated, s.updating, s.degraded, s.machineCount, s.readyMachineCount, s.updatedMachineCount, s.degradedMachineCount],
        [target, 'True', 'False', 'False', count, count, count, 0],
      );
      const rendered = await dc.client.get(MachineConfigs, target);
      assert.equal(rendered.metadata.ownerReferences?.[0]?.kind, 'MachineConfigPool');
      assert.equal(rendered.metadata.ownerReferences?.[0]?.name, name);
      assert.deepEqual(
        p.spec.configuration?.source?.map((r) => r.name),
        [`00-${name}`, `01-${name}-container-runtime`, `01-${name}-kubelet`, `99-${name}-generated-registries`, `99-${name}-ssh`],
      );
      for (const n of dc.mco.nodesOf(name)) {
        assert.equal(ann(n, MCO_CURRENT_CONFIG), target);
        assert.equal(ann(n, MCO_DESIRED_CONFIG), target);
        assert.equal(ann(n, MCO_STATE), 'Done');
      }
    }
    assert.notEqual(pool('master')?.spec.configuration?.name?.slice(-32), pool('worker')?.spec.configuration?.name?.slice(-32));

    const infra = await dc.client.get(Infrastructures, 'cluster');
    assert.equal(infra.status?.platform, 'None');
    assert.equal(infra.status?.platformStatus?.type, 'None');
    for (const ns of [OPERATOR_NAMESPACE, 'openshift-machine-config-operator']) assert.ok(await dc.client.find(Namespaces, ns));
  });

  test('kubectl shows the printer columns of the real CRDs', async () => {
    const mcp = await dc.controlPlane.kubectl(['get', 'mcp']);
    assert.equal(mcp.code, 0, mcp.stderr);
    const [header, ...rows] = mcp.stdout.trim().split('\n');
    assert.deepEqual(header?.trim().split(/\s+/), [
      'NAME',
      'CONFIG',
      'UPDATED',
      'UPDATING',
      'DEGRADED',
      'MACHINECOUNT',
      'READYMACHINECOUNT',
      'UPDATEDMACHINECOUNT',
      'DEGRADEDMACHINECOUNT',
      'AGE',
    ]);
    const worker = rows.map((r) => r.trim().split(/\s+/)).find((r) => r[0] === 'worker');
    assert.deepEqual(worker?.slice(0, 9), [
      'worker',
      pool('worker')?.status?.configuration?.name,
      'True',
      'False',
      'False',
      '3',
      '3',
      '3',
      '0',
    ]);

    const mc = await dc.controlPlane.kubectl(['get', 'mc', '00-worker']);
    assert.equal(mc.code, 0, mc.stderr);
    assert.deepEqual(mc.stdout.split('\n')[0]?.trim().split(/\s+/), ['NAME', 'GENERATEDBYCONTROLLER', 'IGNITIONVERSION', 'AGE']);
    for (const kind of ['ctrcfg', 'containerruntimeconfigs', 'kubeletconfigs', 'infrastructures.config.openshift.io']) {
      const r = await dc.controlPlane.kubectl(['get', kind]);
      assert.equal(r.code, 0, `${kind}: ${r.stderr}`);
    }
  });

  test('a new MachineConfig rolls out one node at a time, the pool status right at every step', async () => {
    const before = pool('worker')?.spec.configuration?.name;
    const masterBefore = pool('master')?.spec.configuration?.name;
    const mark = resetTracking();
    await dc.client.create(MachineConfigs, workerMC('50-test-rollout-a', 'worker', '/etc/osc-test/a'));
    const settled = await waitFor(() => poolSettled('worker', before), { message: 'the worker pool to roll out the new config' });
    const target = settled.spec.configuration?.name ?? '';

    const statuses = rolloutStatuses(mark, 'worker', target);
    for (const s of statuses) {
      assertConsistent(s, 1);
      assert.equal(s.machineCount, 3);
      assert.equal(s.degradedMachineCount, 0);
    }
    // Updated only at the end; until then the status still names the old configuration.
    const last = statuses.at(-1) as PoolSummary;
    assert.equal(last.updated, 'True');
    assert.equal(last.config, target);
    for (const s of statuses.slice(0, -1)) {
      assert.equal(s.updated, 'False', JSON.stringify(s));
      assert.equal(s.updating, 'True');
      assert.equal(s.config, before);
    }
    // The pool reports Updating before any node is handed the config; then one node at a time: the
    // updated count climbs 0, 1, 2, 3 with one node unavailable until the end.
    const steps = statuses.map((s) => [s.updatedMachineCount, s.unavailableMachineCount]);
    assert.deepEqual(steps, [
      [0, 0],
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 0],
    ]);
    assert.equal(maxUnavailableNodes, 1, 'never more than one worker node unavailable');
    assert.deepEqual([...nodeWasNotReady].sort(), WORKERS, 'every worker rebooted (NotReady)');

    for (const w of WORKERS) {
      const n = node(w);
      assert.equal(ann(w, MCO_CURRENT_CONFIG), target);
      assert.equal(ann(w, MCO_DESIRED_CONFIG), target);
      assert.equal(ann(w, MCO_STATE), 'Done');
      assert.equal(ann(w, MCO_REASON), '');
      assert.ok(!n?.spec?.unschedulable);
      assert.equal(n?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      // The node lifecycle controller lifts the reboot's taints on its next pass over the nodes.
      await waitFor(() => node(w)?.spec?.taints === undefined, { message: `${w} without taints after its reboot` });
    }
    // The reboot's taints are the node lifecycle controller's (the simulator writes none): it lifts them
    // once the node is Ready and uncordoned again.
    await waitFor(() => WORKERS.every((w) => !node(w)?.spec?.taints?.length), {
      message: 'the node lifecycle controller to lift the reboot taints',
    });
    const rendered = await dc.client.get(MachineConfigs, target);
    const files = (rendered.spec.config as { storage?: { files?: { path: string }[] } }).storage?.files?.map((f) => f.path);
    assert.ok(files?.includes('/etc/osc-test/a'));
    assert.ok(settled.spec.configuration?.source?.some((r) => r.name === '50-test-rollout-a'));
    assert.equal(pool('master')?.spec.configuration?.name, masterBefore, 'the master pool does not select worker configs');
  });

  test('maxUnavailable 2 updates two nodes at once, never more', async () => {
    await dc.client.patch(MachineConfigPools, 'worker', { spec: { maxUnavailable: 2 } });
    await waitFor(
      () => pool('worker')?.spec.maxUnavailable === 2 && pool('worker')?.status?.observedGeneration === pool('worker')?.metadata.generation,
    );
    const before = pool('worker')?.spec.configuration?.name;
    const mark = resetTracking();
    await dc.client.create(MachineConfigs, workerMC('50-test-rollout-b', 'worker', '/etc/osc-test/b'));
    const settled = await waitFor(() => poolSettled('worker', before), { message: 'the worker pool to roll out with maxUnavailable 2' });
    const statuses = rolloutStatuses(mark, 'worker', settled.spec.configuration?.name ?? '');
    for (const s of statuses) assertConsistent(s, 2);
    assert.equal(Math.max(...statuses.map((s) => s.unavailableMachineCount ?? 0)), 2);
    assert.equal(statuses[0]?.unavailableMachineCount, 0, 'Updating is reported before any node starts');
    assert.equal(statuses[1]?.unavailableMachineCount, 2, 'then two nodes start at once');
    assert.equal(maxUnavailableNodes, 2);

    await dc.client.patch(MachineConfigPools, 'worker', { spec: { maxUnavailable: null } });
    await waitFor(() => pool('worker')?.spec.maxUnavailable === undefined && poolSettled('worker'));
  });

  test('a node labelled for a custom pool moves to it (and back), with ContainerRuntimeConfigs rendered in', async () => {
    const workerConfig = pool('worker')?.spec.configuration?.name;
    await dc.client.create(MachineConfigPools, {
      metadata: { name: 'kata-oc', labels: { [`${POOL_LABEL_PREFIX}kata-oc`]: '' } },
      spec: {
        machineConfigSelector: { matchExpressions: [{ key: MC_ROLE_LABEL, operator: 'In', values: ['kata-oc', 'worker'] }] },
        nodeSelector: { matchLabels: { [KATA_NODE_ROLE_LABEL]: '' } },
      },
    });
    // An empty pool renders and is Updated with no machines.
    const empty = await waitFor(() => poolSettled('kata-oc'), { message: 'the empty kata-oc pool to be Updated' });
    assert.match(empty.spec.configuration?.name ?? '', /^rendered-kata-oc-[0-9a-f]{32}$/);
    assert.equal(empty.status?.machineCount, 0);

    await dc.client.create(MachineConfigs, {
      metadata: { name: '50-enable-sandboxed-containers-extension', labels: { [MC_ROLE_LABEL]: 'kata-oc', app: 'example-kataconfig' } },
      spec: { config: { ignition: { version: '3.2.0' } }, extensions: ['sandboxed-containers'] },
    });
    const kataWithExtension = await waitFor(() => poolSettled('kata-oc', empty.spec.configuration?.name));
    const mark = resetTracking();
    await dc.client.patch(Nodes, 'worker-1', { metadata: { labels: { [KATA_NODE_ROLE_LABEL]: '' } } });
    const moved = await waitFor(
      () => {
        const p = poolSettled('kata-oc');
        return p?.status?.machineCount === 1 && ann('worker-1', MCO_CURRENT_CONFIG) === p.spec.configuration?.name ? p : undefined;
      },
      { message: 'worker-1 to join kata-oc and update' },
    );
    assert.equal(moved.spec.configuration?.name, kataWithExtension.spec.configuration?.name);
    assert.deepEqual(dc.mco.nodesOf('kata-oc'), ['worker-1']);
    assert.deepEqual(dc.mco.nodesOf('worker'), ['worker-0', 'worker-2']);
    await waitFor(() => poolSettled('worker')?.status?.machineCount === 2);
    assert.equal(pool('worker')?.spec.configuration?.name, workerConfig, 'the worker pool keeps its config');
    for (const s of history.since(mark, 'worker')) assert.ok(s.machineCount === 3 || s.machineCount === 2);
    for (const s of history.since(mark, 'kata-oc')) assertConsistent(s, 1);
    assert.deepEqual([...nodeWasNotReady], ['worker-1']);
    const rendered = await dc.client.get(MachineConfigs, moved.spec.configuration?.name ?? '');
    assert.deepEqual(rendered.spec.extensions, ['sandboxed-containers']);

    // A ContainerRuntimeConfig for the pool: a generated MachineConfig, Success, a new rollout.
    const crc: ContainerRuntimeConfig = {
      metadata: { name: 'kata-crio-config' },
      spec: {
        machineConfigPoolSelector: { matchLabels: { [`${POOL_LABEL_PREFIX}kata-oc`]: '' } },
        containerRuntimeConfig: { logLevel: 'debug' },
      },
    };
    const crcMark = resetTracking();
    await dc.client.create(ContainerRuntimeConfigs, crc);
    const withCrc = await waitFor(() => poolSettled('kata-oc', moved.spec.configuration?.name), {
      message: 'kata-oc to roll out the CRI-O config',
    });
    const generated = await dc.client.get(MachineConfigs, '99-kata-oc-generated-containerruntime');
    assert.equal(generated.metadata.labels?.[MC_ROLE_LABEL], 'kata-oc');
    assert.equal(generated.metadata.ownerReferences?.[0]?.kind, 'ContainerRuntimeConfig');
    const file = (generated.spec.config as { storage: { files: { path: string; contents: { source: string } }[] } }).storage.files[0];
    assert.equal(file?.path, '/etc/crio/crio.conf.d/01-ctrcfg-logLevel');
    assert.match(Buffer.from(file?.contents.source.split(',')[1] ?? '', 'base64').toString(), /log_level = "debug"/);
    assert.ok(withCrc.spec.configuration?.source?.some((r) => r.name === '99-kata-oc-generated-containerruntime'));
    const crcStatus = await waitFor(async () => (await dc.client.get(ContainerRuntimeConfigs, 'kata-crio-config')).status?.conditions?.[0]);
    assert.deepEqual([crcStatus.type, crcStatus.status, crcStatus.message], ['Success', 'True', 'Success']);
    const crcStatuses = rolloutStatuses(crcMark, 'kata-oc', withCrc.spec.configuration?.name ?? '');
    assert.deepEqual(
      crcStatuses.map((s) => [s.updated, s.updatedMachineCount, s.unavailableMachineCount]),
      [
        ['False', 0, 0],
        ['False', 0, 1],
        ['True', 1, 0],
      ],
    );
    assert.equal(pool('worker')?.spec.configuration?.name, workerConfig, 'a kata-oc CRC does not touch the worker pool');

    // An invalid ContainerRuntimeConfig fails and generates nothing.
    await dc.client.create(ContainerRuntimeConfigs, {
      metadata: { name: 'bad-crio-config' },
      spec: {
        machineConfigPoolSelector: { matchLabels: { [`${POOL_LABEL_PREFIX}kata-oc`]: '' } },
        containerRuntimeConfig: { logLevel: 'loud' },
      },
    });
    const bad = await waitFor(async () => (await dc.client.get(ContainerRuntimeConfigs, 'bad-crio-config')).status?.conditions?.[0]);
    assert.equal(bad.type, 'Failure');
    assert.match(bad.message ?? '', /loud/);
    await dc.client.delete(ContainerRuntimeConfigs, 'bad-crio-config');

    // A node matching two custom pools belongs to none, and both say why.
    await dc.client.create(MachineConfigPools, {
      metadata: { name: 'other', labels: { [`${POOL_LABEL_PREFIX}other`]: '' } },
      spec: {
        machineConfigSelector: { matchLabels: { [MC_ROLE_LABEL]: 'worker' } },
        nodeSelector: { matchLabels: { 'node-role.kubernetes.io/other': '' } },
      },
    });
    await dc.client.patch(Nodes, 'worker-2', { metadata: { labels: { [KATA_NODE_ROLE_LABEL]: '', 'node-role.kubernetes.io/other': '' } } });
    await waitFor(() => pool('other')?.status?.conditions?.find((c) => c.type === 'Degraded')?.status === 'True', {
      message: 'pool other to be Degraded by the conflicting node',
    });
    assert.match(
      pool('other')?.status?.conditions?.find((c) => c.type === 'NodeDegraded')?.message ?? '',
      /worker-2 belongs to 2 custom roles/,
    );
    await waitFor(() => pool('worker')?.status?.machineCount === 1 && dc.mco.poolOf('worker-2') === undefined);
    await dc.client.patch(Nodes, 'worker-2', {
      metadata: { labels: { [KATA_NODE_ROLE_LABEL]: null, 'node-role.kubernetes.io/other': null } },
    });
    await dc.client.delete(MachineConfigPools, 'other');
    await waitFor(() => poolSettled('worker')?.status?.machineCount === 2 && dc.mco.poolOf('worker-2') === 'worker');

    // Back to the worker pool: the node rolls back to the worker config.
    await dc.client.patch(Nodes, 'worker-1', { metadata: { labels: { [KATA_NODE_ROLE_LABEL]: null } } });
    await waitFor(
      () =>
        poolSettled('worker')?.status?.machineCount === 3 && ann('worker-1', MCO_CURRENT_CONFIG) === workerConfig && poolSettled('kata-oc'),
      { message: 'worker-1 to return to the worker pool' },
    );
    assert.equal(pool('kata-oc')?.status?.machineCount, 0);

    // Deleting the ContainerRuntimeConfig and the pool cleans up what the MCO generated for them.
    await dc.client.delete(ContainerRuntimeConfigs, 'kata-crio-config');
    await waitFor(async () => !(await dc.client.find(MachineConfigs, '99-kata-oc-generated-containerruntime')), {
      message: 'the generated MachineConfig to be deleted',
    });
    await dc.client.delete(MachineConfigs, '50-enable-sandboxed-containers-extension');
    await dc.client.delete(MachineConfigPools, 'kata-oc');
    await waitFor(async () => !(await dc.client.list(MachineConfigs)).items.some((m) => m.metadata.name?.startsWith('rendered-kata-oc-')), {
      message: "the kata-oc pool's rendered configs to be garbage collected",
    });
  });

  test('an injected failure degrades the node and the pool with its reason, until it is cleared', async () => {
    const before = pool('worker')?.spec.configuration?.name;
    await dc.client.patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'disk on fire' } } });
    const mark = resetTracking();
    await dc.client.create(MachineConfigs, workerMC('50-test-rollout-c', 'worker', '/etc/osc-test/c'));
    const degraded = await waitFor(
      () => {
        const p = pool('worker');
        return p?.status?.degradedMachineCount === 1 && ann('worker-0', MCO_STATE) === 'Degraded' ? p : undefined;
      },
      { message: 'worker-0 and the worker pool to be degraded' },
    );
    assert.equal(ann('worker-0', MCO_REASON), 'disk on fire');
    const conds = Object.fromEntries((degraded.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(conds.Degraded?.status, 'True');
    assert.equal(conds.NodeDegraded?.status, 'True');
    assert.equal(conds.NodeDegraded?.reason, '1 nodes are reporting degraded status on sync');
    assert.equal(conds.NodeDegraded?.message, 'Node worker-0 is reporting: "disk on fire"');
    assert.equal(conds.Updated?.status, 'False');
    assert.equal(degraded.status?.configuration?.name, before);
    // The failed node holds the rollout: the others stay on the old config.
    assert.equal(ann('worker-1', MCO_DESIRED_CONFIG), before);
    assert.equal(ann('worker-2', MCO_DESIRED_CONFIG), before);

    await dc.client.patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    const recovered = await waitFor(() => poolSettled('worker', before), { message: 'the worker pool to recover and finish' });
    assert.equal(recovered.status?.degradedMachineCount, 0);
    assert.equal(recovered.status?.conditions?.find((c) => c.type === 'Degraded')?.status, 'False');
    for (const w of WORKERS) assert.equal(ann(w, MCO_STATE), 'Done');
    assert.equal(ann('worker-0', MCO_REASON), '');
    for (const s of history.since(mark, 'worker')) assertConsistent(s, 1);
    assert.ok(history.since(mark, 'worker').some((s) => s.degraded === 'True'));
  });

  test('workers can be added (booting the pool config) and removed', async () => {
    const target = pool('worker')?.spec.configuration?.name;
    const added = await dc.addWorker();
    assert.equal(added.metadata.name, 'worker-3');
    await waitFor(() => poolSettled('worker')?.status?.machineCount === 4, { message: 'worker-3 to join the worker pool' });
    assert.equal(ann('worker-3', MCO_CURRENT_CONFIG), target);
    assert.equal(ann('worker-3', MCO_STATE), 'Done');
    assert.equal(pool('worker')?.spec.configuration?.name, target);
    const capable = await dc.addWorker('worker-9', { virtualizationCapable: true });
    assert.equal(capable.metadata.name, 'worker-9');
    await waitFor(() => node('worker-9')?.metadata.labels?.[NFD_KATA_LABEL] === 'true', { message: 'NFD to label worker-9' });
    assert.equal(node('worker-3')?.metadata.labels?.[NFD_KATA_LABEL], undefined);
    await dc.removeNode('worker-3');
    await dc.removeNode('worker-9');
    // A replacement machine has a name of its own: under a lost node's name it would take over that node's pods.
    const replacement = await dc.addWorker();
    assert.equal(replacement.metadata.name, 'worker-10');
    await dc.removeNode('worker-10');
    await waitFor(() => poolSettled('worker')?.status?.machineCount === 3, { message: 'the pool to count 3 machines again' });
  });
});
