/**
 * The simulated Machine Config Operator drives a rollout in the real order, against a real kube-apiserver:
 * the pool reports Updating before any node is handed the new config; never more than maxUnavailable nodes
 * are out at once; each node is cordoned and drained through the Eviction API before it reboots (a
 * ReplicaSet's pod leaves, a DaemonSet's stays, a PodDisruptionBudget holds the drain until it allows the
 * eviction, an evicted pod that terminates slowly is waited for); and its deletions on an uninstall log no
 * error.
 *
 * Every node, pool and pod event is recorded from watches. Events of two kinds arrive on two streams, so
 * their order is taken from resourceVersions: on this API server they are etcd revisions, one order across
 * all kinds.
 *
 * No kubelet runs pods here. A pod is placed by setting `spec.nodeName`, and the test writes the status a
 * kubelet would (Running, Ready) where the eviction rules depend on it. Pods whose eviction must complete
 * on its own have `terminationGracePeriodSeconds: 0` (the API server deletes them at once); the slow pod's
 * end is written by the test, as a kubelet would once its containers stopped. Without a
 * kube-controller-manager, nothing computes a PodDisruptionBudget's status (the disruption controller
 * does), so the test writes what that controller would; where one runs, it computes the same values.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { MC_ROLE_LABEL, MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_STATE, POOL_LABEL_PREFIX } from '../../src/api/names.ts';
import { type MachineConfig, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { ResourceType } from '../../src/kube/client.ts';
import { DaemonSets, Leases, Namespaces, type Node, Nodes, type Pod, Pods } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { nodeUnavailable } from '../support/observe.ts';
import { waitFor } from '../support/wait.ts';

const WORKERS = ['worker-0', 'worker-1', 'worker-2', 'worker-3'];
const NS = 'apps';
const ReplicaSets: ResourceType<KubeObject & { spec?: Record<string, unknown> }> = {
  group: 'apps',
  version: 'v1',
  plural: 'replicasets',
  kind: 'ReplicaSet',
  namespaced: true,
};
interface PDB extends KubeObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}
const PodDisruptionBudgets: ResourceType<PDB> = {
  group: 'policy',
  version: 'v1',
  plural: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

/** Every log record of the dev cluster, parsed (and echoed to stderr with OSC_TEST_LOG). */
const records: { level: string; component?: string; msg?: string; err?: string }[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const line of chunk.toString().split('\n')) {
      if (!line) continue;
      records.push(JSON.parse(line));
      if (process.env.OSC_TEST_LOG) process.stderr.write(`${line}\n`);
    }
    done();
  },
});

interface Seen<T> {
  type: 'add' | 'update' | 'delete';
  rv: number;
  obj: T;
}
const rvOf = (o: KubeObject) => Number(o.metadata.resourceVersion);

let dc: DevCluster;
const stop = new AbortController();
let nodes: Informer<Node>;
let pools: Informer<MachineConfigPool>;
let pods: Informer<Pod>;
const nodeEvents: Seen<Node>[] = [];
const poolEvents: Seen<MachineConfigPool>[] = [];
const podEvents: Seen<Pod>[] = [];
/** Worker nodes unavailable (as the MCO counts them) after each node event, in watch order. */
const unavailableAfterEvent: number[] = [];

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

const ann = (n: Node, key: string) => n.metadata.annotations?.[key];
const ready = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const cond = (p: MachineConfigPool, type: string) => p.status?.conditions?.find((c) => c.type === type);

function poolSettledOn(name: string, notTarget?: string): MachineConfigPool | undefined {
  const p = pools.get(name);
  const s = p?.status;
  const target = p?.spec.configuration?.name;
  if (!p || !s || !target || target === notTarget) return undefined;
  return cond(p, 'Updated')?.status === 'True' && s.observedGeneration === p.metadata.generation && s.configuration?.name === target
    ? p
    : undefined;
}

/** A pod placed on a node by name (no scheduler), owned by a controller if given. */
function boundPod(name: string, node: string, labels: Record<string, string>, opts: { owner?: KubeObject; grace?: number } = {}): Pod {
  return {
    metadata: {
      name,
      namespace: NS,
      labels,
      ...(opts.owner
        ? {
            ownerReferences: [
              {
                apiVersion: opts.owner.apiVersion ?? 'apps/v1',
                kind: opts.owner.kind ?? '',
                name: opts.owner.metadata.name ?? '',
                uid: opts.owner.metadata.uid ?? '',
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          }
        : {}),
    },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: opts.grace ?? 0,
      containers: [{ name: 'app', image: 'registry.example.com/app:1' }],
    },
  };
}

/** What a kubelet reports for a pod whose containers run and pass their readiness checks. */
async function markRunning(name: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await dc.client.patch(
    Pods,
    name,
    {
      status: {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: now },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
        ],
      },
    },
    { namespace: NS, subresource: 'status' },
  );
}

/**
 * A ReplicaSet whose own pods can go nowhere (its template selects no node): the test places its pod itself.
 * Where a controller-manager runs, it keeps the placed pod (it deletes an unscheduled pod first).
 */
function replicaSet(name: string): KubeObject & { spec: Record<string, unknown> } {
  return {
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'osc.dev/no-such-node': 'true' },
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'app', image: 'registry.example.com/app:1' }],
        },
      },
    },
  };
}

/** The status the disruption controller computes for a budget over one healthy pod. */
async function writeBudgetStatus(name: string, disruptionsAllowed: number): Promise<void> {
  const pdb = await dc.client.get(PodDisruptionBudgets, name, NS);
  await dc.client.patch(
    PodDisruptionBudgets,
    name,
    {
      status: {
        observedGeneration: pdb.metadata.generation,
        disruptionsAllowed,
        currentHealthy: 1,
        desiredHealthy: 1 - disruptionsAllowed,
        expectedPods: 1,
      },
    },
    { namespace: NS, subresource: 'status' },
  );
}

before(async () => {
  dc = await DevCluster.start({
    workers: WORKERS.length,
    masters: 1,
    rebootMs: 300,
    pickupDelayMs: 150,
    drainRetryMs: 200,
    log: createLogger({ level: 'info', destination: sink }),
  });
  nodes = new Informer(dc.client, Nodes);
  pools = new Informer(dc.client, MachineConfigPools);
  pods = new Informer(dc.client, Pods, { namespace: NS });
  record(nodes, nodeEvents, () => {
    unavailableAfterEvent.push(
      nodes
        .list()
        .filter((n) => WORKERS.includes(n.metadata.name ?? ''))
        .filter(nodeUnavailable).length,
    );
  });
  record(pools, poolEvents);
  record(pods, podEvents);
  for (const i of [nodes, pools, pods] as Informer<KubeObject>[]) void i.run(stop.signal);
  await Promise.all([nodes.waitForSync(), pools.waitForSync(), pods.waitForSync()]);
});

after(async () => {
  stop.abort();
  await dc?.stop();
});

describe('machine config operator simulator', () => {
  test('a rollout in the real order: Updating first, at most maxUnavailable out, each node drained before its reboot', async () => {
    const c = dc.client;
    await c.patch(MachineConfigPools, 'worker', { spec: { maxUnavailable: 2 } });
    await waitFor(
      () => pools.get('worker')?.status?.observedGeneration === pools.get('worker')?.metadata.generation && poolSettledOn('worker'),
    );
    const oldTarget = pools.get('worker')?.spec.configuration?.name;

    // The workloads: a ReplicaSet's pod on worker-0 with a DaemonSet's pod beside it; on worker-1 a pod
    // guarded by a PodDisruptionBudget that allows no disruption; on worker-2 a pod that takes its time to stop.
    await c.create(Namespaces, { metadata: { name: NS } });
    const web = await c.create(ReplicaSets, replicaSet('web'));
    const db = await c.create(ReplicaSets, replicaSet('db'));
    const agent = await c.create(DaemonSets, {
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        updateStrategy: { type: 'OnDelete' },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': 'worker-0' },
            terminationGracePeriodSeconds: 0,
            containers: [{ name: 'app', image: 'registry.example.com/agent:1' }],
          },
        },
      },
    });
    await c.create(Pods, boundPod('web-0', 'worker-0', { app: 'web' }, { owner: web }));
    // A DaemonSet controller makes the DaemonSet's pod itself where a kube-controller-manager runs; here
    // the test places it as that controller would.
    if (!(await c.find(Leases, 'kube-controller-manager', 'kube-system')))
      await c.create(Pods, boundPod('agent-0', 'worker-0', { app: 'agent' }, { owner: agent }));
    await c.create(Pods, boundPod('db-0', 'worker-1', { app: 'db' }, { owner: db }));
    await c.create(Pods, boundPod('slow-0', 'worker-2', { app: 'slow' }, { grace: 30 }));
    await markRunning('db-0');
    await c.create(PodDisruptionBudgets, {
      metadata: { name: 'db', namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
    });
    await writeBudgetStatus('db', 0);
    const onNode = (node: string, app: string) =>
      pods.list().filter((p) => p.spec?.nodeName === node && p.metadata.labels?.app === app && !p.metadata.deletionTimestamp);
    await waitFor(
      () =>
        ['web', 'agent'].every((a) => onNode('worker-0', a).length === 1) &&
        onNode('worker-1', 'db').length === 1 &&
        onNode('worker-2', 'slow').length === 1,
      { message: 'the placed pods' },
    );
    const webUid = onNode('worker-0', 'web')[0]?.metadata.uid;
    const agentUid = onNode('worker-0', 'agent')[0]?.metadata.uid;
    const dbUid = onNode('worker-1', 'db')[0]?.metadata.uid;
    const slowUid = onNode('worker-2', 'slow')[0]?.metadata.uid;

    const nodeMark = nodeEvents.length;
    const poolMark = poolEvents.length;
    const podMark = podEvents.length;
    const unavailableMark = unavailableAfterEvent.length;
    const refusedBefore = dc.mco.stats.evictionsRefused;
    await c.create(MachineConfigs, {
      metadata: { name: '50-test-drain', labels: { [MC_ROLE_LABEL]: 'worker' } },
      spec: {
        config: {
          ignition: { version: '3.2.0' },
          storage: { files: [{ path: '/etc/osc-test/drain', mode: 420, contents: { source: 'data:,x' } }] },
        },
      },
    });
    const target = await waitFor(
      () => {
        const t = pools.get('worker')?.spec.configuration?.name;
        return t !== oldTarget ? t : undefined;
      },
      { message: 'the worker pool to render the new config' },
    );

    // The budget holds worker-1: its eviction is refused, again and again, and the node waits, cordoned.
    await waitFor(() => dc.mco.stats.evictionsRefused >= refusedBefore + 2, { message: 'the budget to refuse db-0 twice' });
    const held = nodes.get('worker-1') as Node;
    assert.equal(ann(held, MCO_STATE), 'Working');
    assert.equal(held.spec?.unschedulable, true);
    assert.ok(ready(held), 'not rebooted while its pod cannot leave');
    assert.equal(pods.get(`${NS}/db-0`)?.metadata.uid, dbUid);

    // The slow pod is evicted and terminating; worker-2 waits until it is gone (the test ends it, as its kubelet would).
    await waitFor(() => podEvents.slice(podMark).some((e) => e.obj.metadata.uid === slowUid && e.obj.metadata.deletionTimestamp), {
      message: 'slow-0 to be evicted',
    });
    assert.ok(ready(nodes.get('worker-2') as Node), 'worker-2 does not reboot while slow-0 terminates');
    await c.delete(Pods, 'slow-0', { namespace: NS, gracePeriodSeconds: 0 });

    // The rollout goes on around the held node.
    await waitFor(
      () =>
        ['worker-0', 'worker-2', 'worker-3'].every(
          (w) => ann(nodes.get(w) as Node, MCO_CURRENT_CONFIG) === target && ann(nodes.get(w) as Node, MCO_STATE) === 'Done',
        ),
      { message: 'the other workers to update while worker-1 is held' },
    );
    assert.equal(ann(nodes.get('worker-1') as Node, MCO_CURRENT_CONFIG), oldTarget, 'worker-1 still held by the budget');
    assert.equal(pods.get(`${NS}/db-0`)?.metadata.uid, dbUid);

    // The budget allows one disruption: db-0 is evicted and worker-1 finishes.
    await c.patch(PodDisruptionBudgets, 'db', { spec: { minAvailable: 0 } }, { namespace: NS });
    await writeBudgetStatus('db', 1);
    await waitFor(() => poolSettledOn('worker', oldTarget), { message: 'the worker pool to finish the rollout' });

    // 1. The pool said Updating (in a written status) before any node was handed the config.
    const updating = poolEvents
      .slice(poolMark)
      .find(
        (e) =>
          e.obj.metadata.name === 'worker' &&
          e.obj.spec.configuration?.name === target &&
          e.obj.status?.observedGeneration === e.obj.metadata.generation &&
          cond(e.obj, 'Updating')?.status === 'True',
      );
    assert.ok(updating, 'the pool reported Updating');
    const newNodeEvents = nodeEvents.slice(nodeMark).filter((e) => WORKERS.includes(e.obj.metadata.name ?? ''));
    const handedOut = newNodeEvents.filter((e) => ann(e.obj, MCO_DESIRED_CONFIG) === target);
    const working = newNodeEvents.filter((e) => ann(e.obj, MCO_STATE) === 'Working');
    assert.ok(handedOut.length > 0 && working.length > 0);
    assert.ok(Math.min(...handedOut.map((e) => e.rv)) > updating.rv, 'no node was handed the config before the pool said Updating');
    assert.ok(Math.min(...working.map((e) => e.rv)) > updating.rv, 'no node was Working before the pool said Updating');

    // 2. Never more than maxUnavailable (2) workers unavailable, and two at once while the budget held one.
    const counts = unavailableAfterEvent.slice(unavailableMark);
    assert.equal(Math.max(...counts), 2, `unavailable workers after each node event: ${counts.join(',')}`);

    // 3. Each worker: picked up (Working and cordoned in one write), drained, NotReady, Ready, then Done
    // and uncordoned; evicted pods gone before the reboot; the DaemonSet's pod untouched.
    const podGoneRv = (uid: string | undefined) =>
      podEvents.slice(podMark).find((e) => e.type === 'delete' && e.obj.metadata.uid === uid)?.rv;
    const evictedOn: Record<string, (string | undefined)[]> = {
      'worker-0': [webUid],
      'worker-1': [dbUid],
      'worker-2': [slowUid],
      'worker-3': [],
    };
    for (const w of WORKERS) {
      const events = newNodeEvents.filter((e) => e.obj.metadata.name === w);
      const cordoned = events.find((e) => ann(e.obj, MCO_STATE) === 'Working');
      const down = events.find((e) => !ready(e.obj));
      const up = events.find((e) => down && e.rv > down.rv && ready(e.obj));
      const done = events.find((e) => ann(e.obj, MCO_CURRENT_CONFIG) === target && ann(e.obj, MCO_STATE) === 'Done');
      assert.ok(cordoned && down && up && done, `${w}: Working, NotReady, Ready, Done all seen`);
      assert.equal(cordoned.obj.spec?.unschedulable, true, `${w} cordoned when Working`);
      assert.ok(cordoned.rv < down.rv && down.rv < up.rv && up.rv <= done.rv, `${w}: Working, then NotReady, then Ready, then Done`);
      assert.equal(down.obj.spec?.unschedulable, true, `${w} still cordoned while rebooting`);
      assert.ok(!done.obj.spec?.unschedulable, `${w} uncordoned when Done`);
      for (const uid of evictedOn[w] ?? []) {
        const gone = podGoneRv(uid);
        assert.ok(gone !== undefined, `${w}: its pod ${uid} was evicted`);
        assert.ok(gone > cordoned.rv && gone < down.rv, `${w}: its pod left after the cordon and before the reboot`);
      }
    }
    const agentEvents = podEvents.slice(podMark).filter((e) => e.obj.metadata.uid === agentUid);
    assert.ok(
      agentEvents.every((e) => e.type !== 'delete' && !e.obj.metadata.deletionTimestamp),
      'the DaemonSet pod was never evicted',
    );
    assert.equal(onNode('worker-0', 'agent')[0]?.metadata.uid, agentUid, 'the DaemonSet pod is still on worker-0');
    assert.ok(dc.mco.stats.evictions >= 3);
  });

  test('deleting a pool and its MachineConfig back to back, as an uninstall does, logs no error', async () => {
    const c = dc.client;
    for (let i = 0; i < 3; i++) {
      const name = `scratch-${i}`;
      const pool: MachineConfigPool = {
        metadata: { name, labels: { [`${POOL_LABEL_PREFIX}${name}`]: '' } },
        spec: {
          machineConfigSelector: { matchExpressions: [{ key: MC_ROLE_LABEL, operator: 'In', values: [name, 'worker'] }] },
          nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${name}`]: '' } },
        },
      };
      const mc: MachineConfig = {
        metadata: { name: `50-${name}`, labels: { [MC_ROLE_LABEL]: name } },
        spec: { config: { ignition: { version: '3.2.0' } }, extensions: ['sandboxed-containers'] },
      };
      await c.create(MachineConfigPools, pool);
      await c.create(MachineConfigs, mc);
      await waitFor(() => pools.get(name)?.spec.configuration?.source?.some((s) => s.name === `50-${name}`), {
        message: `${name} to render its MachineConfig`,
      });
      await c.delete(MachineConfigs, `50-${name}`);
      await c.delete(MachineConfigPools, name);
      await waitFor(async () => !(await c.list(MachineConfigs)).items.some((m) => m.metadata.name?.startsWith(`rendered-${name}-`)), {
        message: `the rendered configs of ${name} to be removed`,
      });
    }
    const errors = records.filter((r) => r.level === 'error');
    assert.deepEqual(errors, []);
  });
});
