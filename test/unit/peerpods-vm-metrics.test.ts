import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { PodVMMetrics, watchAdaptorRestarts } from '../../src/controllers/peerpods/vm-metrics.ts';
import type { Pod } from '../../src/kube/resources.ts';
import type { EventHandler, Informer } from '../../src/runtime/informer.ts';

/** An adaptor pod as the DaemonSet controller makes it: a revision label, placed on a node by the scheduler. */
const pod = (uid: string, rev: string, node?: string, deleting = false): Pod => ({
  metadata: {
    name: `osc-caa-ds-${uid}`,
    namespace: 'openshift-sandboxed-containers-operator',
    uid,
    labels: { app: 'osc-caa-ds', 'controller-revision-hash': rev },
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec: { containers: [], ...(node ? { nodeName: node } : {}) },
});

/** A fake informer: the cache and its handlers, as the watch would drive them. */
function fakePods() {
  const cache = new Map<string, Pod>();
  const handlers: EventHandler<Pod>[] = [];
  const informer = {
    addEventHandler: (h: EventHandler<Pod>) => handlers.push(h),
    list: () => [...cache.values()],
  } as unknown as Informer<Pod>;
  return {
    informer,
    add(p: Pod) {
      cache.set(p.metadata.uid ?? '', p);
      for (const h of handlers) h.add?.(p);
    },
    update(p: Pod) {
      const before = cache.get(p.metadata.uid ?? '') as Pod;
      cache.set(p.metadata.uid ?? '', p);
      for (const h of handlers) h.update?.(before, p);
    },
    remove(uid: string) {
      const p = cache.get(uid) as Pod;
      cache.delete(uid);
      for (const h of handlers) h.delete?.(p);
    },
  };
}

const restarts = async (r: Registry) => Number(/^osc_peerpods_adaptor_restarts_total (\d+)$/m.exec(await r.metrics())?.[1]);

test('osc_peerpods_adaptor_restarts_total counts adaptor pods replaced by a pod of another template revision', async () => {
  const registry = new Registry();
  const metrics = new PodVMMetrics(registry);
  const pods = fakePods();
  watchAdaptorRestarts(pods.informer, metrics);
  // Two nodes, revision a; the operator's first list counts nothing.
  pods.add(pod('1', 'a', 'n1'));
  pods.add(pod('2', 'a', 'n2'));
  assert.equal(await restarts(registry), 0);

  // A kill: the pod goes, the DaemonSet makes the same template again (unplaced first). No restart counted.
  pods.remove('1');
  pods.add(pod('3', 'a'));
  pods.update(pod('3', 'a', 'n1'));
  assert.equal(await restarts(registry), 0);

  // A template change, rolling: n1's pod deleted (terminating, then gone), its replacement of revision b.
  pods.update(pod('3', 'a', 'n1', true));
  pods.remove('3');
  pods.add(pod('4', 'b'));
  pods.update(pod('4', 'b', 'n1'));
  assert.equal(await restarts(registry), 1);
  // n2: the replacement placed while the old pod still terminates beside it; its later removal is not counted again.
  pods.update(pod('2', 'a', 'n2', true));
  pods.add(pod('5', 'b', 'n2'));
  pods.remove('2');
  assert.equal(await restarts(registry), 2);

  // A node lost: its pod goes and nothing replaces it there; another node's new pod is no restart.
  pods.remove('5');
  pods.add(pod('6', 'b', 'n3'));
  assert.equal(await restarts(registry), 2);
});
