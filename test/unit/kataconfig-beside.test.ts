/**
 * The KataConfig controller's writes made beside its pass (KataNodes, detached node patches), over a
 * recording client: a record handed over twice is written once, a KataNode made and given its status
 * before the cache shows either is read as written, and a node patch the node cache shows by then is not made.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { KataNode } from '../../src/api/katanode.ts';
import { BesideWrites } from '../../src/controllers/kataconfig/besidewrites.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type Node, Nodes } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { NodeRecord } from '../../src/platform/platform.ts';
import { Applier } from '../../src/runtime/applier.ts';
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
  let rv = 10;
  // The server's copy of each object: an answer is the whole object, as a server's is.
  const stored = new Map<string, KubeObject>();
  const client = {
    patch: async (rt: { plural: string }, name: string, body: KubeObject, opts: { type?: string; subresource?: string } = {}) => {
      calls.push(`${opts.type}${opts.subresource ? `/${opts.subresource}` : ''} ${rt.plural}/${name}`);
      const before = stored.get(name);
      const after = {
        ...before,
        ...body,
        metadata: { ...before?.metadata, ...body.metadata, name, uid: `${name}-uid`, resourceVersion: String(++rv) },
      };
      stored.set(name, after);
      return after;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

const record = (phase: NodeRecord['phase']): NodeRecord => ({ node: 'worker-0', phase, error: '' });

describe('KataConfig writes beside the pass', () => {
  test('a KataNode made and given its status once, however often the same record is handed over before the cache shows it', async () => {
    const { client, calls } = recordingClient();
    const kataNodes = cache<KataNode>();
    const nodes = cache<Node>();
    const applier = new Applier({ client, fieldManager: 'osc-kataconfig' });
    applier.watch(Nodes, nodes.informer);
    applier.watch((await import('../../src/api/katanode.ts')).KataNodes, kataNodes.informer);
    const beside = new BesideWrites({ applier, kataNodes: kataNodes.informer, nodes: nodes.informer, soakMs: 600_000, now: () => NOW });
    await beside.want(kc, [record('WaitingToInstall')], ['worker-0'], []);
    await beside.want(kc, [record('WaitingToInstall')], ['worker-0'], []);
    assert.deepEqual(calls, ['apply katanodes/worker-0', 'apply/status katanodes/worker-0']);
    // A later record: only its status goes, over the KataNode as written.
    await beside.want(kc, [record('Installing')], ['worker-0'], []);
    assert.deepEqual(calls.slice(2), ['apply/status katanodes/worker-0']);
    // Gone: deleted, pinned to the UID the server answered with.
    const deletes: unknown[] = [];
    (client as unknown as { delete: unknown }).delete = async (_rt: unknown, name: string, opts: { preconditions?: unknown }) => {
      deletes.push([name, opts.preconditions]);
      return true;
    };
    await beside.want(kc, [], [], ['worker-0']);
    assert.deepEqual(deletes, [['worker-0', { uid: 'worker-0-uid' }]]);
  });

  test('a detached node patch the node cache shows by the time it is made is not made', async () => {
    const { client, calls } = recordingClient();
    const labelled: Node = { metadata: { name: 'worker-0', resourceVersion: '5', labels: { kata: 'true' } } };
    const nodes = cache<Node>([labelled]);
    const applier = new Applier({ client, fieldManager: 'osc-kataconfig' });
    const beside = new BesideWrites({ applier, kataNodes: cache<KataNode>().informer, nodes: nodes.informer, soakMs: 1 });
    const patch = { metadata: { labels: { kata: 'true' } } };
    await beside.patchNodes([{ op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch }]);
    assert.deepEqual(calls, []);
    nodes.store.set('worker-0', { metadata: { name: 'worker-0', resourceVersion: '6', labels: {} } });
    await beside.patchNodes([{ op: 'patch', resource: Nodes, name: 'worker-0', patch, shows: patch }]);
    assert.deepEqual(calls, ['merge nodes/worker-0']);
  });
});
