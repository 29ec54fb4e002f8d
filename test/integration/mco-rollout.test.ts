/**
 * The simulated Machine Config Operator drives a rollout in the real order, on the dev cluster's real
 * kube-apiserver, scheduler, controller-manager and kwok nodes: the pool reports Updating before any node
 * is handed the new config; never more than maxUnavailable nodes are out at once; each node is cordoned
 * and drained through the Eviction API before it reboots (a Deployment's pod leaves and comes back on
 * another node, a DaemonSet's stays, a bare pod is evicted too, a PodDisruptionBudget holds the drain
 * until it allows the eviction); and its deletions on an uninstall log no error.
 *
 * Every node, pool and pod event is recorded from watches. Events of two kinds arrive on two streams, so
 * their order is taken from resourceVersions: on this API server they are etcd revisions, one order across
 * all kinds.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { MC_ROLE_LABEL, MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_STATE, POOL_LABEL_PREFIX } from '../../src/api/names.ts';
import { type MachineConfig, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { ResourceType } from '../../src/kube/client.ts';
import { DaemonSets, Deployments, Namespaces, type Node, Nodes, type Pod, Pods } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { nodeUnavailable } from '../support/observe.ts';
import { waitFor } from '../support/wait.ts';

const WORKERS = ['worker-0', 'worker-1', 'worker-2', 'worker-3'];
const NS = 'apps';
const PodDisruptionBudgets: ResourceType<KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> }> = {
  group: 'policy',
  version: 'v1',
  plural: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};
/** Nodes labelled with it take the test's `web` pods; `db` pods go to nodes labelled for db. */
const PLACE = 'osc.test/place';

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
const podReady = (p: Pod) => p.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

function poolSettledOn(name: string, notTarget?: string): MachineConfigPool | undefined {
  const p = pools.get(name);
  const s = p?.status;
  const target = p?.spec.configuration?.name;
  if (!p || !s || !target || target === notTarget) return undefined;
  return cond(p, 'Updated')?.status === 'True' && s.observedGeneration === p.metadata.generation && s.configuration?.name === target
    ? p
    : undefined;
}

const container = { name: 'app', image: 'registry.example.com/app:1' };

/** One replica, scheduled onto the nodes labelled `osc.test/place=<name>` (masters included). */
function deployment(name: string): KubeObject & { spec: Record<string, unknown> } {
  return {
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [PLACE]: name },
          tolerations: [{ key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [container],
        },
      },
    },
  };
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

    // The workloads: a Deployment's pod on worker-0 (it may also run on master-0, which is not in the
    // worker pool), with a DaemonSet's pod beside it; on worker-1 a Deployment's pod guarded by a
    // PodDisruptionBudget that allows no disruption; on worker-2 a bare pod (the daemon drains with force).
    await c.patch(Nodes, 'worker-0', { metadata: { labels: { [PLACE]: 'web' } } });
    await c.patch(Nodes, 'worker-1', { metadata: { labels: { [PLACE]: 'db' } } });
    await c.create(Namespaces, { metadata: { name: NS } });
    await c.create(Deployments, deployment('web'));
    await c.create(Deployments, deployment('db'));
    await c.create(DaemonSets, {
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: { nodeSelector: { 'kubernetes.io/hostname': 'worker-0' }, containers: [container] },
        },
      },
    });
    await c.create(Pods, {
      metadata: { name: 'bare-0', namespace: NS, labels: { app: 'bare' } },
      spec: { nodeName: 'worker-2', containers: [container] },
    });
    await c.create(PodDisruptionBudgets, {
      metadata: { name: 'db', namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
    });
    const runningOn = (node: string, app: string) =>
      pods
        .list()
        .filter((p) => p.spec?.nodeName === node && p.metadata.labels?.app === app && !p.metadata.deletionTimestamp && podReady(p));
    await waitFor(
      () =>
        ['web', 'agent'].every((a) => runningOn('worker-0', a).length === 1) &&
        runningOn('worker-1', 'db').length === 1 &&
        runningOn('worker-2', 'bare').length === 1,
      { message: 'the workloads to run' },
    );
    // The disruption controller has seen the healthy db pod: no disruption allowed.
    await waitFor(async () => {
      const pdb = await c.get(PodDisruptionBudgets, 'db', NS);
      return (
        pdb.status?.observedGeneration === pdb.metadata.generation &&
        pdb.status?.currentHealthy === 1 &&
        pdb.status?.disruptionsAllowed === 0
      );
    });
    // From now on the web pod may also run on master-0 (outside the worker pool): where it goes when evicted.
    await c.patch(Nodes, 'master-0', { metadata: { labels: { [PLACE]: 'web' } } });
    const webUid = runningOn('worker-0', 'web')[0]?.metadata.uid;
    const agentUid = runningOn('worker-0', 'agent')[0]?.metadata.uid;
    const dbUid = runningOn('worker-1', 'db')[0]?.metadata.uid;
    const bareUid = runningOn('worker-2', 'bare')[0]?.metadata.uid;

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
    await waitFor(() => dc.mco.stats.evictionsRefused >= refusedBefore + 2, { message: 'the budget to refuse the db pod twice' });
    const held = nodes.get('worker-1') as Node;
    assert.equal(ann(held, MCO_STATE), 'Working');
    assert.equal(held.spec?.unschedulable, true);
    assert.ok(ready(held), 'not rebooted while its pod cannot leave');
    assert.equal(runningOn('worker-1', 'db')[0]?.metadata.uid, dbUid);

    // The rollout goes on around the held node.
    await waitFor(
      () =>
        ['worker-0', 'worker-2', 'worker-3'].every(
          (w) => ann(nodes.get(w) as Node, MCO_CURRENT_CONFIG) === target && ann(nodes.get(w) as Node, MCO_STATE) === 'Done',
        ),
      { message: 'the other workers to update while worker-1 is held' },
    );
    assert.equal(ann(nodes.get('worker-1') as Node, MCO_CURRENT_CONFIG), oldTarget, 'worker-1 still held by the budget');
    assert.equal(runningOn('worker-1', 'db')[0]?.metadata.uid, dbUid);
    // The evicted web pod came back on master-0.
    await waitFor(() => runningOn('master-0', 'web').length === 1, { message: 'the web pod to run again on master-0' });

    // The budget allows a disruption: the db pod is evicted and worker-1 finishes.
    await c.patch(PodDisruptionBudgets, 'db', { spec: { minAvailable: 0 } }, { namespace: NS });
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
    // and uncordoned; its evicted pods gone before the reboot; the DaemonSet's pod untouched.
    const podGoneRv = (uid: string | undefined) =>
      podEvents.slice(podMark).find((e) => e.type === 'delete' && e.obj.metadata.uid === uid)?.rv;
    const evictedOn: Record<string, (string | undefined)[]> = {
      'worker-0': [webUid],
      'worker-1': [dbUid],
      'worker-2': [bareUid],
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
      assert.notEqual(up.obj.status?.nodeInfo?.bootID, down.obj.status?.nodeInfo?.bootID, `${w} came back from a new boot`);
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
    assert.equal(runningOn('worker-0', 'agent')[0]?.metadata.uid, agentUid, 'the DaemonSet pod still runs on worker-0');
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
