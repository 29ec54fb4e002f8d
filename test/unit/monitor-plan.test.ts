/**
 * The monitor controller's plan: which writes a pass hands to the applier for each state of the KataConfig
 * and of the Prometheus Operator's API, and which of them the applier leaves out because the cache shows them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import {
  MONITOR_DAEMONSET,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
} from '../../src/api/names.ts';
import { desiredMonitor } from '../../src/controllers/monitor/desired.ts';
import { CORE_PARTS, PROMETHEUS_PARTS, planMonitor } from '../../src/controllers/monitor/plan.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { appliedForm, cacheShows, type Write } from '../../src/runtime/applier.ts';

const NS = 'openshift-sandboxed-containers-operator';
const kataConfig = (over: Partial<KataConfig['metadata']> = {}, runtimeClasses = ['kata']): KataConfig => ({
  metadata: { name: 'example', uid: 'u1', ...over },
  spec: { logLevel: 'info' },
  status: { runtimeClasses },
});
const desired = (kc: KataConfig | undefined, prometheusOperator = false) =>
  desiredMonitor({
    namespace: NS,
    image: 'example.com/kata-monitor:1',
    kataConfig: kc,
    kataNodeSelector: { kata: '' },
    prometheusOperator,
  });
const summary = (writes: Write[]) => writes.map((w) => `${w.op} ${w.resource.kind}/${w.op === 'apply' ? w.object.metadata.name : w.name}`);

describe('kata monitor: the plan', () => {
  test('no KataConfig, kata still installing, or the KataConfig being deleted: every part deleted', () => {
    const deletes = [
      `delete ServiceAccount/${MONITOR_SERVICE_ACCOUNT}`,
      `delete DaemonSet/${MONITOR_DAEMONSET}`,
      `delete Service/${MONITOR_SERVICE}`,
    ];
    assert.deepEqual(summary(planMonitor(desired(undefined), NS, CORE_PARTS)), deletes);
    assert.deepEqual(summary(planMonitor(desired(kataConfig({}, [])), NS, CORE_PARTS)), deletes);
    assert.deepEqual(summary(planMonitor(desired(kataConfig({ deletionTimestamp: 'now' })), NS, CORE_PARTS)), deletes);
    const all = planMonitor(desired(undefined, true), NS, [...CORE_PARTS, ...PROMETHEUS_PARTS]);
    assert.deepEqual(summary(all).slice(3), [`delete ServiceMonitor/${MONITOR_SERVICE_MONITOR}`, `delete PrometheusRule/${MONITOR_RULES}`]);
    for (const w of all) assert.equal(w.op === 'delete' && w.namespace, NS);
  });

  test('kata installed: the three parts applied; with the Prometheus Operator also the ServiceMonitor and the rule', () => {
    const core = planMonitor(desired(kataConfig()), NS, CORE_PARTS);
    assert.deepEqual(summary(core), [
      `apply ServiceAccount/${MONITOR_SERVICE_ACCOUNT}`,
      `apply DaemonSet/${MONITOR_DAEMONSET}`,
      `apply Service/${MONITOR_SERVICE}`,
    ]);
    const all = planMonitor(desired(kataConfig(), true), NS, [...CORE_PARTS, ...PROMETHEUS_PARTS]);
    assert.deepEqual(summary(all).slice(3), [`apply ServiceMonitor/${MONITOR_SERVICE_MONITOR}`, `apply PrometheusRule/${MONITOR_RULES}`]);
  });

  test('the cache showing the applied parts leaves nothing to write; a log level change rewrites the DaemonSet only', () => {
    const writes = planMonitor(desired(kataConfig()), NS, CORE_PARTS);
    const asStored = (w: Write): KubeObject | undefined =>
      w.op === 'apply'
        ? { ...appliedForm(w.resource, w.object), metadata: { ...appliedForm(w.resource, w.object).metadata, uid: 'x' } }
        : undefined;
    const cache = new Map(writes.map((w) => [w.resource.kind, asStored(w)]));
    assert.ok(writes.every((w) => cacheShows(w, cache.get(w.resource.kind))));
    const debug = { ...kataConfig(), spec: { logLevel: 'debug' as const } };
    const next = planMonitor(desired(debug), NS, CORE_PARTS).filter((w) => !cacheShows(w, cache.get(w.resource.kind)));
    assert.deepEqual(summary(next), [`apply DaemonSet/${MONITOR_DAEMONSET}`]);
    // Once the KataConfig goes, the deletes are what is left to do.
    const gone = planMonitor(desired(undefined), NS, CORE_PARTS).filter((w) => !cacheShows(w, cache.get(w.resource.kind)));
    assert.equal(gone.length, 3);
  });
});
