/**
 * The simulated Machine Config Operator's view of objects (its informer's copy, or its own write's answer
 * while the informer lags): never staler than the cluster after an etcd restore, whose objects come back
 * with versions older than those seen before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LatestView } from '../../src/devcluster/mco/view.ts';
import type { Node } from '../../src/kube/resources.ts';
import type { Informer } from '../../src/runtime/informer.ts';

type Handler = { add?(o: Node): void; update?(o: Node, n: Node): void; delete?(o: Node): void };

function fakeInformer() {
  const store = new Map<string, Node>();
  const handlers: Handler[] = [];
  const informer = {
    addEventHandler: (h: Handler) => handlers.push(h),
    get: (k: string) => store.get(k),
    list: () => [...store.values()],
  } as unknown as Informer<Node>;
  return {
    informer,
    /** The watch (or a relist) shows this version. */
    show(n: Node) {
      const old = store.get(n.metadata.name ?? '');
      store.set(n.metadata.name ?? '', n);
      for (const h of handlers) old ? h.update?.(old, n) : h.add?.(n);
    },
    remove(name: string) {
      const old = store.get(name);
      store.delete(name);
      if (old) for (const h of handlers) h.delete?.(old);
    },
  };
}

const node = (rv: number, pool: string, uid = 'u1'): Node => ({
  metadata: { name: 'worker-0', uid, resourceVersion: String(rv), labels: { pool } },
});

test('our write is seen before the cache shows it, and versions we made on the way do not hide it', () => {
  const f = fakeInformer();
  const view = new LatestView(f.informer);
  f.show(node(10, 'worker'));
  view.observe(node(11, 'kata-oc'));
  view.observe(node(12, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.resourceVersion, '12');
  f.show(node(11, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.resourceVersion, '12', 'a version of ours before the last is behind it');
  f.show(node(12, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.resourceVersion, '12');
  assert.deepEqual(
    [...view.values()].map((n) => n.metadata.resourceVersion),
    ['12'],
  );
});

test('after an etcd restore the restored object wins, though its version is older than the one seen before', () => {
  const f = fakeInformer();
  const view = new LatestView(f.informer);
  f.show(node(5, 'kata-oc'));
  view.observe(node(900, 'worker'));
  f.show(node(900, 'worker'));
  // The restore brings back the snapshot's node: in the kata pool, at its older version.
  f.show(node(5, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.labels?.pool, 'kata-oc');
  // Also while a write of ours had not been shown when the restore came.
  view.observe(node(901, 'worker'));
  f.show(node(6, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.labels?.pool, 'kata-oc');
  assert.deepEqual(
    [...view.values()].map((n) => n.metadata.labels?.pool),
    ['kata-oc'],
  );
});

test('an answer that comes after the deletion does not bring the object back; a new one of that name is seen', () => {
  const f = fakeInformer();
  const view = new LatestView(f.informer);
  f.show(node(10, 'worker'));
  f.remove('worker-0');
  view.observe(node(11, 'kata-oc'));
  assert.equal(view.get('worker-0'), undefined);
  view.observe(node(20, 'worker', 'u2'));
  assert.equal(view.get('worker-0')?.metadata.uid, 'u2');
  f.show(node(20, 'worker', 'u2'));
  assert.equal([...view.values()].length, 1);
});

test('an answer that comes after its own watch event and a later write is behind the cache, not ahead of it', () => {
  const f = fakeInformer();
  const view = new LatestView(f.informer);
  f.show(node(10, 'worker'));
  // Our write made 11; its event comes, then another writer's 12, and only then the answer to our write.
  f.show(node(11, 'kata-oc'));
  f.show(node(12, 'worker'));
  view.observe(node(11, 'kata-oc'));
  assert.equal(view.get('worker-0')?.metadata.resourceVersion, '12');
  assert.deepEqual(
    [...view.values()].map((n) => n.metadata.resourceVersion),
    ['12'],
  );
});
