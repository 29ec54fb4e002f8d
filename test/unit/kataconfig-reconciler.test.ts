/**
 * The KataConfig reconciler's writes over in-memory caches and a recording client (no API server): what a
 * pass writes, and what it does not write again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { KataNode } from '../../src/api/katanode.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import { defaultKataConfigOptions, KataConfigReconciler } from '../../src/controllers/kataconfig/reconciler.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type Node, Nodes, type Pod, type RuntimeClass } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { OpenShiftObserved } from '../../src/platform/openshift/plan.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';
import type { Platform } from '../../src/platform/platform.ts';
import type { EventRecorder } from '../../src/runtime/events.ts';
import type { Informer } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/log.ts';

const KATA_OC = 'node-role.kubernetes.io/kata-oc';

/** An informer's read side over a map the test changes, as watch events would. */
function cache<T extends KubeObject>(items: T[] = []) {
  const store = new Map(items.map((o) => [o.metadata.name ?? '', o]));
  const informer = {
    get: (name: string) => store.get(name),
    list: () => [...store.values()],
    addEventHandler: () => {},
  } as unknown as Informer<T>;
  return { informer, store };
}

const worker = (name: string): Node => ({
  metadata: { name, labels: { 'node-role.kubernetes.io/worker': '' }, annotations: {} },
});

interface Call {
  verb: string;
  resource: string;
  name: string;
  body?: unknown;
}

/** Records each request; answers what a server would, near enough for the reconciler. */
function recordingClient(hooks: { onStatusWrite?: () => void } = {}) {
  const calls: Call[] = [];
  const client = {
    patch: async (rt: { plural: string }, name: string, body: unknown, opts: { subresource?: string } = {}) => {
      calls.push({ verb: opts.subresource ? `patch/${opts.subresource}` : 'patch', resource: rt.plural, name, body });
      if (rt.plural === 'kataconfigs' && opts.subresource === 'status') hooks.onStatusWrite?.();
      return { metadata: { name }, ...(body as object) };
    },
    create: async (rt: { plural: string }, obj: KubeObject) => {
      calls.push({ verb: 'create', resource: rt.plural, name: obj.metadata.name ?? '' });
      return obj;
    },
    delete: async (rt: { plural: string }, name: string) => {
      calls.push({ verb: 'delete', resource: rt.plural, name });
      return true;
    },
    update: async (rt: { plural: string }, obj: KubeObject) => {
      calls.push({ verb: 'update', resource: rt.plural, name: obj.metadata.name ?? '' });
      return obj;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

/** A KataConfig whose install is under way. */
const installing: KataConfig = {
  metadata: { name: 'example', uid: 'u1', generation: 1, finalizers: ['kataconfiguration.openshift.io/finalizer'] },
  spec: {},
  status: { conditions: [{ type: 'InProgress', status: 'True', reason: 'Installing', message: 'x' }] },
} as KataConfig;

/** The worker pool as the MCO has it, before osc's objects exist. */
const workerPool = (machineCount: number): MachineConfigPool => ({
  metadata: { name: 'worker', generation: 1 },
  spec: { configuration: { name: 'rendered-worker-a', source: [{ name: '00-worker' }] } },
  status: { observedGeneration: 1, machineCount },
});

/** The OpenShift platform's KataConfig reconciler over in-memory caches; a pass is a reconcile and its writes. */
function reconcilerOver(opts: {
  client: KubeClient;
  kataConfigs: Informer<KataConfig>;
  nodes: Informer<Node>;
  observed: OpenShiftObserved;
  platform?: Platform<unknown>;
  expectationTtlMs?: number;
  woken?: () => void;
}) {
  const reconciler = new KataConfigReconciler({
    ...(opts.expectationTtlMs !== undefined ? { expectationTtlMs: opts.expectationTtlMs } : {}),
    client: opts.client,
    kataConfigs: opts.kataConfigs,
    nodes: opts.nodes,
    kataNodes: cache<KataNode>().informer,
    platform: opts.platform ?? (openShiftPlatform() as unknown as Platform<unknown>),
    observe: () => opts.observed,
    runtimeClasses: cache<RuntimeClass>().informer,
    pods: cache<Pod>().informer,
    events: { record: async () => {} } as unknown as EventRecorder,
    options: defaultKataConfigOptions,
  });
  if (opts.woken) reconciler.onUnshownExpired(opts.woken);
  const signal = new AbortController().signal;
  return async () => {
    await reconciler.reconcile('example', silentLogger(), signal);
  };
}

describe('KataConfig reconciler', () => {
  test("a node label patched by the pass before, shown by the cache during this pass's status write, is not patched again", async () => {
    const names = Array.from({ length: 3 }, (_, i) => `worker-${i}`);
    const nodes = cache(names.map(worker));
    // The worker pool as the MCO has it; the first pass creates osc's objects and labels the nodes.
    const kc = installing;
    const kataConfigs = cache([kc]);
    let showLabels = false;
    const { client, calls } = recordingClient({
      // What the watch brings while the status write is on its way: the labels the pass before made.
      onStatusWrite: () => {
        if (!showLabels) return;
        for (const n of names) {
          const node = nodes.store.get(n) as Node;
          nodes.store.set(n, { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, [KATA_OC]: '' } } });
        }
      },
    });
    const pass = reconcilerOver({ client, kataConfigs: kataConfigs.informer, nodes: nodes.informer, observed: { pools: [workerPool(3)] } });
    const labelPatches = () => calls.filter((c) => c.verb === 'patch' && c.resource === 'nodes').map((c) => c.name);

    await pass();
    assert.deepEqual(labelPatches().sort(), names, 'the first pass labels every selected node');

    // The next pass plans from the node cache as it begins (no labels yet); its status write changes the
    // status, and the labels arrive meanwhile.
    showLabels = true;
    kataConfigs.store.set('example', { ...kc, status: { ...kc.status, kataNodes: { nodeCount: 0, readyNodeCount: 0 } } });
    await pass();
    assert.ok(
      calls.some((c) => c.verb === 'patch/status' && c.resource === 'kataconfigs'),
      'the second pass wrote the status (the window the labels came in)',
    );
    assert.deepEqual(labelPatches().sort(), names, 'no node is patched twice');
  });

  test('an object created by the pass before and not in the caches yet is not created again; deleted later, it is', async () => {
    const observed: OpenShiftObserved = { pools: [workerPool(1)] };
    const { client, calls } = recordingClient();
    const pass = reconcilerOver({
      client,
      kataConfigs: cache([installing]).informer,
      nodes: cache([worker('worker-0')]).informer,
      observed,
    });
    const created = () => calls.filter((c) => c.verb === 'create' && c.resource === 'machineconfigs').map((c) => c.name);

    await pass();
    assert.deepEqual(created(), ['50-enable-sandboxed-containers-extension'], 'the first pass creates the MachineConfig');
    await pass();
    assert.equal(created().length, 1, 'the caches do not show it yet: not created again');

    // The cache shows it; then someone deletes it: it is created again at once.
    const [mcCreate] = calls.filter((c) => c.verb === 'create' && c.resource === 'machineconfigs');
    assert.ok(mcCreate);
    observed.machineConfig = { metadata: { name: mcCreate.name } } as OpenShiftObserved['machineConfig'];
    await pass();
    assert.equal(created().length, 1);
    delete observed.machineConfig;
    await pass();
    assert.equal(created().length, 2, 'deleted after the caches showed it: created again');
  });

  test('a ContainerRuntimeConfig an etcd restore took back before the caches showed it: the controller is woken, and makes it again', {
    timeout: 30_000,
  }, async () => {
    const observed: OpenShiftObserved = { pools: [workerPool(1)] };
    const { client, calls } = recordingClient();
    // Each wake is counted; nextWake() answers once one has come that the test has not yet taken.
    let wakes = 0;
    let taken = 0;
    let onWake: () => void = () => {};
    const pass = reconcilerOver({
      client,
      kataConfigs: cache([{ ...installing, spec: { logLevel: 'debug' } } as KataConfig]).informer,
      nodes: cache([worker('worker-0')]).informer,
      observed,
      expectationTtlMs: 200,
      woken: () => {
        wakes++;
        onWake();
      },
    });
    const nextWake = () =>
      new Promise<void>((resolve) => {
        if (wakes > taken) resolve();
        else onWake = resolve;
      }).then(() => {
        taken = wakes;
      });
    const created = () => calls.filter((c) => c.verb === 'create' && c.resource === 'containerruntimeconfigs').length;
    await pass();
    assert.equal(created(), 1, 'the first pass creates kata-crio-config');
    // The restore took it back: the caches never show it. A pass planned meanwhile awaits the first create.
    await pass();
    assert.equal(created(), 1, 'not made twice while awaited');
    // No event will come; the applier's record ends and wakes the controller, whose pass makes it again. The
    // pass's other creates (the MachineConfig before it) were recorded a moment earlier and may end, and wake,
    // first: each wake brings a pass, as the controller's queue would, until this one is made again.
    for (let wake = 0; wake < 5 && created() < 2; wake++) {
      await nextWake();
      await pass();
    }
    assert.equal(created(), 2, 'made again once the wait ended');
  });

  test('a node patch planned again with a newer time, before the cache shows the first, is not made twice', async () => {
    const { client, calls } = recordingClient();
    let pass = 0;
    const base = openShiftPlatform() as unknown as Platform<unknown>;
    // A platform that writes memory beside an assignment (as the Kubernetes rollout does): the time differs per pass.
    const assignment = { labels: { example: 'true' }, annotations: { 'example/config': 'a' } };
    const platform: Platform<unknown> = {
      ...base,
      installPlan: () => ({
        steps: [
          [
            {
              op: 'patch',
              resource: Nodes,
              name: 'worker-0',
              patch: { metadata: { ...assignment, annotations: { ...assignment.annotations, 'example/since': String(++pass) } } },
              expect: JSON.stringify(assignment),
            },
          ],
        ],
        pending: 0,
      }),
    };
    const run = reconcilerOver({
      client,
      kataConfigs: cache([installing]).informer,
      nodes: cache([worker('worker-0')]).informer,
      observed: { pools: [workerPool(1)] },
      platform,
    });
    await run();
    await run();
    assert.equal(pass, 2, 'planned in both passes');
    assert.equal(calls.filter((c) => c.verb === 'patch' && c.resource === 'nodes').length, 1, 'written once');
  });
});

describe('KataConfig reconciler: its own status', () => {
  test('a pass that comes before the cache shows its status write plans from that write, and does not make it again', async () => {
    const { client, calls } = recordingClient();
    const run = reconcilerOver({
      client,
      kataConfigs: cache([installing]).informer,
      nodes: cache([worker('worker-0')]).informer,
      observed: { pools: [workerPool(1)] },
    });
    const statusWrites = () => calls.filter((c) => c.verb === 'patch/status' && c.resource === 'kataconfigs').length;
    await run();
    assert.equal(statusWrites(), 1, 'the first pass writes the status');
    // The cache still shows the KataConfig as it was: the write's watch event has not come.
    await run();
    assert.equal(statusWrites(), 1, 'the server has it already: a second write would change nothing');
  });
});

describe('KataConfig reconciler: what wakes it', () => {
  test('its own status write wakes no pass; a spec change, a deletion or someone else’s write does', async () => {
    const { client } = recordingClient();
    let rv = 0;
    (client as unknown as { patch: unknown }).patch = async (_rt: unknown, name: string, body: KataConfig) => ({
      ...installing,
      ...body,
      metadata: { ...installing.metadata, name, resourceVersion: String(++rv) },
    });
    const reconciler = new KataConfigReconciler({
      client,
      kataConfigs: cache<KataConfig>([{ ...installing, status: undefined } as KataConfig]).informer,
      nodes: cache([worker('worker-0')]).informer,
      kataNodes: cache<KataNode>().informer,
      platform: openShiftPlatform() as unknown as Platform<unknown>,
      observe: () => ({ pools: [workerPool(1)] }),
      runtimeClasses: cache<RuntimeClass>().informer,
      pods: cache<Pod>().informer,
      events: { record: async () => {} } as unknown as EventRecorder,
      options: { ...defaultKataConfigOptions, passGapMs: 0 },
    });
    await reconciler.reconcile('example', silentLogger(), new AbortController().signal);
    const before = { ...installing, metadata: { ...installing.metadata, resourceVersion: '0' } };
    const own = { ...installing, metadata: { ...installing.metadata, resourceVersion: String(rv) } };
    assert.ok(rv > 0, 'the pass wrote the status');
    assert.equal(reconciler.ownStatusWrite(before, own), true);
    assert.equal(reconciler.ownStatusWrite(before, { ...own, metadata: { ...own.metadata, generation: 2 } }), false, 'a spec change');
    assert.equal(reconciler.ownStatusWrite(before, { ...own, metadata: { ...own.metadata, deletionTimestamp: 'now' } }), false);
    assert.equal(reconciler.ownStatusWrite(before, { ...own, metadata: { ...own.metadata, resourceVersion: 'other' } }), false);
  });
});
