/**
 * The KataConfig controller's writes made beside its pass (KataNodes, detached node patches), over a
 * recording client: each key makes the write the latest plan has for it, as planned (its time included); a
 * KataNode is made with its status in one request and written once however often a plan names it before the
 * cache shows it; a write a later plan no longer has is not made; a state on the way waits, a final one does
 * not; a node patch the node cache shows by then is not made.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { type KataNode, KataNodes } from '../../src/api/katanode.ts';
import { kataNodeSteps } from '../../src/controllers/kataconfig/plan.ts';
import { PASSING_STATE_DELAY_MS, TrailingWrites } from '../../src/controllers/kataconfig/trailing.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type Node, Nodes } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { NodeRecord } from '../../src/platform/platform.ts';
import { Applier, type PlannedWrite } from '../../src/runtime/applier.ts';
import type { EventHandler, Informer } from '../../src/runtime/informer.ts';

const NOW = new Date('2026-03-01T12:00:00Z');
const kc = { metadata: { name: 'example', uid: 'kc-uid' } } as KataConfig;

function cache<T extends KubeObject>(items: T[] = []) {
  const store = new Map(items.map((o) => [o.metadata.name ?? '', o]));
  const handlers: EventHandler<T>[] = [];
  const informer = {
    get: (name: string) => store.get(name),
    list: () => [...store.values()],
    addEventHandler: (h: EventHandler<T>) => handlers.push(h),
  } as unknown as Informer<T>;
  return { informer, store };
}

function recordingClient() {
  const calls: string[] = [];
  const bodies: KubeObject[] = [];
  const deletes: unknown[] = [];
  let rv = 10;
  // The server's copy of each object: an answer is the whole object, as a server's is.
  const stored = new Map<string, KubeObject>();
  // While closed, the server holds its answers (a write on its way): open() answers them.
  const gate = { held: undefined as Promise<void> | undefined, open: () => {} };
  const close = () => {
    gate.held = new Promise((resolve) => {
      gate.open = () => {
        gate.held = undefined;
        resolve();
      };
    });
  };
  const client = {
    patch: async (rt: { plural: string }, name: string, body: KubeObject, opts: { type?: string; subresource?: string } = {}) => {
      calls.push(`${opts.type}${opts.subresource ? `/${opts.subresource}` : ''} ${rt.plural}/${name}`);
      bodies.push(body);
      await gate.held;
      const before = stored.get(name);
      const after = {
        ...before,
        ...body,
        metadata: { ...before?.metadata, ...body.metadata, name, uid: `${name}-uid`, resourceVersion: String(++rv) },
      };
      stored.set(name, after);
      return after;
    },
    delete: async (_rt: unknown, name: string, opts: { preconditions?: unknown }) => {
      deletes.push([name, opts.preconditions]);
      return true;
    },
  } as unknown as KubeClient;
  return { client, calls, bodies, deletes, gate: { close, open: () => gate.open() } };
}

const config = { id: 'rendered-kata-oc-1', description: 'rendered MachineConfig of pool kata-oc, with kata' };
const record = (phase: NodeRecord['phase']): NodeRecord => ({ node: 'worker-0', phase, assigned: config, error: '' });

function setup() {
  const { client, calls, bodies, deletes, gate } = recordingClient();
  const kataNodes = cache<KataNode>();
  const nodes = cache<Node>();
  const applier = new Applier({ client, fieldManager: 'osc-kataconfig' });
  applier.watch(Nodes, nodes.informer);
  applier.watch(KataNodes, kataNodes.informer);
  const trailing = new TrailingWrites({ applier, kataNodes: kataNodes.informer, nodes: nodes.informer });
  /** A pass's KataNode writes for these records, planned from the KataNodes as the applier knows them. */
  const plan = (records: NodeRecord[], now = NOW): PlannedWrite[] =>
    kataNodeSteps(
      kc,
      records,
      applier.latestList(KataNodes, kataNodes.informer.list()),
      now,
      600_000,
      trailing.pendingStatuses(),
    ).steps.flat();
  return { calls, bodies, deletes, trailing, plan, nodes, kataNodes, gate };
}

describe('KataConfig writes beside the pass', () => {
  test('a KataNode made with its status in one request, once, however often plans name it before the cache shows it', async () => {
    const { calls, bodies, deletes, trailing, plan } = setup();
    await trailing.plan(plan([record('WaitingToInstall')]), []);
    await trailing.plan(plan([record('WaitingToInstall')]), []);
    assert.deepEqual(calls, ['apply katanodes/worker-0']);
    const made = bodies[0] as KataNode;
    assert.deepEqual(
      made.metadata.ownerReferences?.map((r) => [r.kind, r.uid]),
      [['KataConfig', 'kc-uid']],
    );
    assert.deepEqual(made.status, { phase: 'WaitingToInstall', assigned: config, error: '', lastTransitionTime: '2026-03-01T12:00:00Z' });
    assert.equal(made.metadata.annotations, undefined, 'no digest annotation: the status is what is compared');
    // A later record: its status goes, with the time the plan was made at, over the KataNode as written,
    // with the owner reference the object has (an apply of the object that left it out would remove it).
    const later = new Date(NOW.getTime() + 5000);
    await trailing.plan(plan([record('Installing')], later), []);
    assert.deepEqual(calls.slice(1), ['apply katanodes/worker-0']);
    assert.equal((bodies[1] as KataNode).status?.lastTransitionTime, later.toISOString().replace('.000', ''));
    assert.deepEqual(
      bodies[1]?.metadata.ownerReferences?.map((r) => r.uid),
      ['kc-uid'],
    );
    // Gone: deleted, pinned to the UID the server answered with.
    await trailing.plan(plan([]), []);
    assert.deepEqual(deletes, [['worker-0', { uid: 'worker-0-uid' }]]);
  });

  test('a write that moves no phase on waits; a phase change or a final state does not; the latest plan decides', async () => {
    const { calls, trailing, plan } = setup();
    const queued: [string, number][] = [];
    trailing.attach({ add: (k) => queued.push([k, 0]), addAfter: (k, ms) => queued.push([k, ms]) });
    // A node waiting its turn with nothing assigned gets no KataNode yet.
    await trailing.plan(plan([{ node: 'worker-0', phase: 'WaitingToInstall', error: '' }]), []);
    assert.deepEqual(queued, []);
    // Assigned, still waiting: made after a moment (it may be Installing by then: one write, not two).
    await trailing.plan(plan([record('WaitingToInstall')]), []);
    assert.deepEqual(queued, [['katanode/worker-0', PASSING_STATE_DELAY_MS]]);
    await trailing.plan(plan([record('Installing')]), []);
    assert.deepEqual(queued.at(-1), ['katanode/worker-0', 0], 'a phase change goes at once');
    // Before the key's turn the node went back out of the plan: nothing is written.
    await trailing.plan([], []);
    await trailing.reconcile('katanode/worker-0');
    assert.deepEqual(calls, []);
    // A failure is written at once, as the latest plan has it.
    await trailing.plan(plan([{ ...record('FailedToInstall'), error: 'disk full' }]), []);
    assert.deepEqual(queued.at(-1), ['katanode/worker-0', 0]);
    await trailing.reconcile('katanode/worker-0');
    assert.deepEqual(calls, ['apply katanodes/worker-0']);
    await trailing.reconcile('katanode/worker-0');
    assert.equal(calls.length, 1, 'made once');
  });

  test('a pass that comes while a KataNode write is on its way plans that write again, and it is made once', async () => {
    const { calls, bodies, trailing, plan, kataNodes, gate } = setup();
    const waiting = {
      metadata: { name: 'worker-0', uid: 'worker-0-uid', resourceVersion: '5', ownerReferences: [] },
      status: { phase: 'WaitingToInstall', assigned: config, error: '', lastTransitionTime: '2026-03-01T11:59:00Z' },
    } as unknown as KataNode;
    waiting.metadata.ownerReferences = [
      {
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        name: 'example',
        uid: 'kc-uid',
        controller: true,
        blockOwnerDeletion: false,
      },
    ];
    kataNodes.store.set('worker-0', waiting);
    // The work queue: one key at a time, as the runtime's queue runs it.
    const queued: string[] = [];
    trailing.attach({ add: (k) => queued.push(k), addAfter: (k) => queued.push(k) });
    await trailing.plan(plan([record('Installing')]), []);
    gate.close();
    const first = trailing.reconcile(queued.shift() as string);
    // The next pass, a second later: the cache still shows WaitingToInstall, the write is unanswered.
    await trailing.plan(plan([record('Installing')], new Date(NOW.getTime() + 1000)), []);
    gate.open();
    await first;
    while (queued.length) await trailing.reconcile(queued.shift() as string);
    assert.equal(calls.length, 1, `one write, not a second that moves lastTransitionTime alone: ${calls.join(', ')}`);
    assert.equal((bodies[0] as KataNode).status?.lastTransitionTime, '2026-03-01T12:00:00Z');
  });

  test('a write made and not yet shown by the cache is not queued again by the passes that plan it again', async () => {
    const { calls, trailing, plan, nodes } = setup();
    const queued: string[] = [];
    trailing.attach({ add: (k) => queued.push(k), addAfter: (k) => queued.push(k) });
    nodes.store.set('worker-0', { metadata: { name: 'worker-0', resourceVersion: '5', labels: {} } });
    const patch = { metadata: { labels: { kata: 'true' } } };
    const label: PlannedWrite = { op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch };
    await trailing.plan(plan([record('Installing')]), [label]);
    assert.deepEqual(queued.sort(), ['katanode/worker-0', 'node/worker-0']);
    for (const k of queued.splice(0)) await trailing.reconcile(k);
    assert.deepEqual(calls.sort(), ['apply katanodes/worker-0', 'merge nodes/worker-0']);
    // The next passes, before either cache shows the writes: the same writes, planned again, queue nothing.
    await trailing.plan(plan([record('Installing')]), [label]);
    await trailing.plan(plan([record('Installing')], new Date(NOW.getTime() + 1000)), [label]);
    assert.deepEqual(queued, []);
    // A different write for the node is queued.
    await trailing.plan(plan([record('Installed')]), []);
    assert.deepEqual(queued, ['katanode/worker-0']);
  });

  test('a pass while a write is being made queues it again only if it plans another write', async () => {
    const { calls, trailing, nodes, gate } = setup();
    const queued: string[] = [];
    trailing.attach({ add: (k) => queued.push(k), addAfter: (k) => queued.push(k) });
    nodes.store.set('worker-0', { metadata: { name: 'worker-0', resourceVersion: '5', labels: {} } });
    const label = (value: string): PlannedWrite => {
      const patch = { metadata: { labels: { kata: value } } };
      return { op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch };
    };
    await trailing.plan(undefined, [label('true')]);
    gate.close();
    const making = trailing.reconcile(queued.shift() as string);
    await trailing.plan(undefined, [label('true')]);
    assert.deepEqual(queued, [], 'the same write, unanswered: not queued again');
    await trailing.plan(undefined, [label('other')]);
    assert.deepEqual(queued, ['node/worker-0'], 'another write: queued');
    gate.open();
    await making;
    await trailing.reconcile('node/worker-0');
    assert.deepEqual(calls, ['merge nodes/worker-0', 'merge nodes/worker-0']);
  });

  test('a detached node patch the node cache shows by the time it is made is not made', async () => {
    const { calls, trailing, nodes } = setup();
    nodes.store.set('worker-0', { metadata: { name: 'worker-0', resourceVersion: '5', labels: { kata: 'true' } } });
    const patch = { metadata: { labels: { kata: 'true' } } };
    await trailing.plan(undefined, [{ op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch }]);
    assert.deepEqual(calls, []);
    nodes.store.set('worker-0', { metadata: { name: 'worker-0', resourceVersion: '6', labels: {} } });
    await trailing.plan(undefined, [{ op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch }]);
    assert.deepEqual(calls, ['merge nodes/worker-0']);
  });
});
