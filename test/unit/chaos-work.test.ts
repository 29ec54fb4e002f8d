/**
 * The chaos run's count of work done twice on OpenShift: a reboot that did not change the node's current
 * configuration is needless, and the report says at which steps; a reboot under way when an etcd restore
 * rolled the node back is counted but not judged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trackReboots } from '../../bench/chaos/work.ts';
import { MCO_CURRENT_CONFIG } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { Node } from '../../src/kube/resources.ts';

type Handler<T> = { add?(o: T): void; update?(o: T, n: T): void; delete?(o: T): void };

function fakeCluster() {
  const nodes = new Map<string, Node>();
  const handlers: Handler<Node>[] = [];
  const dev = {
    informers: {
      nodes: { addEventHandler: (h: Handler<Node>) => handlers.push(h), list: () => [...nodes.values()] },
      machineConfigs: { addEventHandler: () => {} },
    },
  } as unknown as DevCluster;
  const show = (name: string, boot: string, config: string) => {
    const n: Node = { metadata: { name, annotations: { [MCO_CURRENT_CONFIG]: config } }, status: { nodeInfo: { bootID: boot } } } as Node;
    const old = nodes.get(name);
    nodes.set(name, n);
    for (const h of handlers) old ? h.update?.(old, n) : h.add?.(n);
  };
  return { dev, show };
}

test('a reboot with a configuration change is needed; one without is needless, with its node and step', () => {
  const { dev, show } = fakeCluster();
  const work = trackReboots(dev);
  show('worker-0', 'b0', 'rendered-worker');
  show('worker-1', 'c0', 'rendered-worker');
  work.atStep(1);
  show('worker-0', 'b1', 'rendered-worker');
  show('worker-0', 'b1', 'rendered-kata-oc');
  work.atStep(2);
  show('worker-1', 'c1', 'rendered-worker');
  const t = work.totals();
  assert.equal(t.runs, 2);
  assert.equal(t.needless, 1);
  assert.deepEqual(t.needlessDetail, ['worker-1: 1 reboot(s) at step(s) 2; 0 configuration change(s)']);
  assert.deepEqual(t.unjudged, []);
});

test('a reboot whose configuration is not written when a restore comes is counted, not judged', () => {
  const { dev, show } = fakeCluster();
  const work = trackReboots(dev);
  show('worker-0', 'b0', 'rendered-worker');
  work.atStep(7);
  show('worker-0', 'b1', 'rendered-worker');
  work.pause();
  // The restore rolls the node back to the snapshot's boot and configuration.
  show('worker-0', 'b0', 'rendered-worker');
  work.resume();
  // Afterwards changes count again.
  work.atStep(8);
  show('worker-0', 'b2', 'rendered-worker');
  const t = work.totals();
  assert.equal(t.runs, 2);
  assert.deepEqual(t.unjudged, ['worker-0: reboot(s) at step(s) 7']);
  assert.equal(t.needless, 1, 'the reboot after the restore, without a configuration change, is judged');
  assert.deepEqual(t.needlessDetail, ['worker-0: 1 reboot(s) at step(s) 8; 0 configuration change(s)']);
});
