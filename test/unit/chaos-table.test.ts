import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChaosReport, StepResult } from '../../bench/chaos/run.ts';
import { chaosTable, overTarget } from '../../bench/chaos/table.ts';
import { trackReinstalls } from '../../bench/chaos/work.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import { CONFIG_ANNOTATION, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import type { EventHandler, Informer } from '../../src/runtime/informer.ts';

const step = (fault: StepResult['fault'], convergeMs: number, converged = true): StepResult => ({
  step: 1,
  operation: 'install',
  fault,
  converged,
  convergeMs,
  fromStrikeMs: convergeMs,
  left: [],
});

const report = (platform: ChaosReport['platform'], steps: StepResult[], extra: Partial<ChaosReport> = {}): ChaosReport =>
  ({
    platform,
    faults: steps.length,
    converged: steps.filter((s) => s.converged).length,
    leaks: [],
    doubleLeaderWrites: [],
    needlessRuns: 0,
    runs: 12,
    rbacGaps: [],
    steps,
    ...extra,
  }) as unknown as ChaosReport;

test('the chaos table: a row per platform, then each kind with each platform count and p50 / p99 / max', () => {
  const os = report('openshift', [step('killOperator', 1000), step('killOperator', 3000), step('restoreEtcd', 41_000)]);
  const k8s = report('kubernetes', [step('killOperator', 2000), step('restoreEtcd', 20_000, false)], { needlessRuns: 1, runs: 9 });
  assert.equal(
    chaosTable([os, k8s]),
    [
      '| platform | converged | leaks | double leaders | needless reboots (OpenShift) or reinstalls (Kubernetes) | RBAC gaps |',
      '| --- | --- | --- | --- | --- | --- |',
      '| OpenShift | 3/3 | 0 | 0 | 0 of 12 reboots | 0 |',
      '| Kubernetes | 1/2 | 0 | 0 | 1 of 9 kata-deploy installs | 0 |',
      '',
      '| fault | OpenShift: count, p50 / p99 / max | Kubernetes: count, p50 / p99 / max |',
      '| --- | --- | --- |',
      '| killOperator | 2, 1.0 s / 3.0 s / 3.0 s | 1, 2.0 s / 2.0 s / 2.0 s |',
      '| restoreEtcd | 1, 41.0 s / 41.0 s / 41.0 s | 1 (0 converged), - / - / - |',
    ].join('\n'),
  );
  assert.deepEqual(overTarget([os, k8s]), ['openshift restoreEtcd 41.0 s']);
});

/** An informer as far as the trackers use it: handlers, and a list. */
function fakeInformer<T extends Node | Pod>() {
  const items = new Map<string, T>();
  const handlers: EventHandler<T>[] = [];
  const informer = {
    addEventHandler: (h: EventHandler<T>) => handlers.push(h),
    list: () => [...items.values()],
  } as unknown as Informer<T>;
  const set = (key: string, obj: T) => {
    const old = items.get(key);
    items.set(key, obj);
    for (const h of handlers) old ? h.update?.(old, obj) : h.add?.(obj);
  };
  const remove = (key: string) => {
    const old = items.get(key);
    items.delete(key);
    if (old) for (const h of handlers) h.delete?.(old);
  };
  return { informer, set, remove };
}

test('kata-deploy installs without a configuration change are needless; after a cleanup, or with another configuration, they are not', () => {
  const nodes = fakeInformer<Node>();
  const pods = fakeInformer<Pod>();
  const work = trackReinstalls(nodes.informer, pods.informer);
  const pod = (uid: string, config: string, ready: boolean, restartCount = 0): Pod => ({
    metadata: { name: uid, uid, annotations: { [CONFIG_ANNOTATION]: config } },
    spec: { nodeName: 'worker-0', containers: [] },
    status: { containerStatuses: [{ name: 'kube-kata', ready, restartCount }] },
  });
  const kata = (on: boolean): Node => ({ metadata: { name: 'worker-0', labels: on ? { [KATA_RUNTIME_LABEL]: 'true' } : {} } });
  pods.set('a', pod('a', 'c1', false));
  pods.set('a', pod('a', 'c1', true));
  nodes.set('worker-0', kata(true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [1, 0], 'the first install');
  pods.set('a', pod('a', 'c1', true));
  assert.equal(work.totals().runs, 1, 'the same run seen again is not another');
  pods.remove('a');
  pods.set('b', pod('b', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [2, 0], 'a new configuration is not needless');
  pods.remove('b');
  pods.set('c', pod('c', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [3, 1], 'the same configuration again, kata still there: needless');
  // The detail names the installer pods on the node then, for the run to be traced in the audit log.
  assert.match(
    work.totals().needlessDetail[0] ?? '',
    /of pod c; the last run there: b\/0 of pod b at step 0; installer pods on the node now: c \(.*, Ready\); the last gone: a deleted at step 0 \(.*\), b deleted at step 0/,
  );
  pods.set('c', pod('c', 'c2', true, 1));
  assert.deepEqual([work.totals().runs, work.totals().needless], [4, 2], 'a restarted container installs again: needless');
  nodes.set('worker-0', kata(false));
  pods.remove('c');
  pods.set('d', pod('d', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [5, 2], 'after kata-deploy cleaned the node, an install is needed');
  // An etcd restore brings back a pod that was Ready before: the store going back, not an install.
  work.pause();
  pods.set('old', pod('old', 'c2', true));
  work.resume();
  pods.set('old', pod('old', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [5, 2]);
  // A restore that takes back every installer pod: nothing in the cluster records what the node runs, so the
  // install of the pod the DaemonSet makes in place of the last one is not judged; the one after it is.
  nodes.set('worker-0', kata(true));
  pods.remove('d');
  pods.remove('old');
  pods.set('e', pod('e', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [6, 2], 'kata had left the node: needed');
  work.pause();
  for (const k of ['a', 'b', 'c', 'd', 'e', 'old']) pods.remove(k);
  work.resume();
  pods.set('f', pod('f', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [7, 2], 'no record of the node after the restore');
  pods.remove('f');
  pods.set('g', pod('g', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [8, 3], 'the record the last run made: needless again');
  // A restore that brings back a Ready pod of another configuration: that is the node's record.
  work.pause();
  pods.remove('g');
  pods.set('h', pod('h', 'c1', true));
  work.resume();
  pods.remove('h');
  pods.set('i', pod('i', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless], [9, 3], 'the restored record says c1: c2 is a change');
  // A second pod the DaemonSet controller made beside a live one (not being deleted): counted apart.
  pods.set('j', pod('j', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless, work.totals().duplicatePodRuns.length], [10, 3, 1], 'a duplicate pod');
  // A pod made in place of one being deleted is a replacement: needless when nothing changed.
  pods.set('i', { ...pod('i', 'c2', true), metadata: { ...pod('i', 'c2', true).metadata, deletionTimestamp: '2026-11-27T00:00:00Z' } });
  pods.remove('j');
  pods.set('k', pod('k', 'c2', true));
  assert.deepEqual([work.totals().runs, work.totals().needless, work.totals().duplicatePodRuns.length], [11, 4, 1], 'a replacement');
});
