import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { adaptorRestarts, PodVMMetrics, watchAdaptorRestarts } from '../../src/controllers/peerpods/vm-metrics.ts';
import type { DaemonSet } from '../../src/kube/resources.ts';
import type { EventHandler, Informer } from '../../src/runtime/informer.ts';

const ds = (hash: string, opts: { strategy?: string; running?: number; image?: string } = {}): DaemonSet => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'osc-caa-ds', namespace: 'openshift-sandboxed-containers-operator' },
  spec: {
    selector: { matchLabels: { app: 'osc-caa-ds' } },
    updateStrategy: { type: opts.strategy ?? 'RollingUpdate' },
    template: {
      metadata: { annotations: { 'peerpods.kataconfiguration.openshift.io/config-hash': hash } },
      spec: { containers: [{ name: 'cloud-api-adaptor', image: opts.image ?? 'caa:1' }] },
    },
  },
  status: { desiredNumberScheduled: 3, currentNumberScheduled: opts.running ?? 3 },
});

test('a pod template change restarts every running adaptor; a status-only update or OnDelete restarts none', () => {
  assert.equal(adaptorRestarts(ds('a'), ds('b')), 3);
  assert.equal(adaptorRestarts(ds('a'), ds('a', { image: 'caa:2' })), 3);
  assert.equal(adaptorRestarts(ds('a', { running: 2 }), ds('b')), 2);
  assert.equal(adaptorRestarts(ds('a'), ds('a', { running: 1 })), 0);
  assert.equal(adaptorRestarts(ds('a', { strategy: 'OnDelete' }), ds('b', { strategy: 'OnDelete' })), 0);
});

test('osc_peerpods_adaptor_restarts_total counts the restarts of the updates the cache shows', async () => {
  const registry = new Registry();
  const metrics = new PodVMMetrics(registry);
  const handlers: EventHandler<DaemonSet>[] = [];
  const informer = { addEventHandler: (h: EventHandler<DaemonSet>) => handlers.push(h) } as unknown as Informer<DaemonSet>;
  watchAdaptorRestarts(informer, metrics);
  const update = (a: DaemonSet, b: DaemonSet) => {
    for (const h of handlers) h.update?.(a, b);
  };
  update(ds('a'), ds('a', { running: 2 }));
  assert.match(await registry.metrics(), /^osc_peerpods_adaptor_restarts_total 0$/m);
  update(ds('a'), ds('b'));
  update(ds('b'), ds('c', { strategy: 'OnDelete' }));
  assert.match(await registry.metrics(), /^osc_peerpods_adaptor_restarts_total 3$/m);
});
