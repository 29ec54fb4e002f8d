import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { DEFAULT_MONITOR_IMAGE, MONITOR_DAEMONSET } from '../../src/api/names.ts';
import { desiredMonitor, type MonitorInput, monitorImageFromEnv, monitorWanted, upToDate } from '../../src/controllers/monitor/desired.ts';
import { installationSucceeded, kataGauges, registerKataGauges } from '../../src/controllers/monitor/metrics.ts';

const installed = (over: Partial<KataConfig['status']> = {}, meta: Partial<KataConfig['metadata']> = {}): KataConfig => ({
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  metadata: { name: 'cluster-kataconfig', uid: 'uid-1', creationTimestamp: '2026-01-01T00:00:00Z', ...meta },
  spec: { logLevel: 'debug' },
  status: {
    conditions: [{ type: 'InProgress', status: 'False', reason: '', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    kataNodes: { nodeCount: 2, readyNodeCount: 2, installed: ['worker-0', 'worker-1'] },
    runtimeClasses: ['kata'],
    ...over,
  },
});

const input = (kc: KataConfig | undefined, over: Partial<MonitorInput> = {}): MonitorInput => ({
  namespace: 'openshift-sandboxed-containers-operator',
  image: 'example.com/kata-monitor:1',
  kataConfig: kc,
  kataNodeSelector: { 'node-role.kubernetes.io/kata-oc': '' },
  prometheusOperator: false,
  ...over,
});

describe('kata monitor: desired state', () => {
  test('nothing before kata is installed, none while it is removed, none without a KataConfig', () => {
    assert.equal(desiredMonitor(input(undefined)), undefined);
    assert.equal(desiredMonitor(input(installed({ runtimeClasses: [] }))), undefined, 'first installation still running');
    assert.equal(desiredMonitor(input(installed({}, { deletionTimestamp: '2026-01-02T00:00:00Z' }))), undefined);
    assert.ok(monitorWanted(installed()));
  });

  test('the DaemonSet runs kata-monitor on the kata nodes, with the configured image and the KataConfig log level', () => {
    const m = desiredMonitor(input(installed()));
    assert.ok(m);
    const ds = m.daemonSet;
    assert.equal(ds.metadata.name, MONITOR_DAEMONSET);
    assert.deepEqual(ds.spec.selector, { matchLabels: { name: MONITOR_DAEMONSET } });
    const pod = ds.spec.template.spec as {
      nodeSelector: Record<string, string>;
      serviceAccountName: string;
      tolerations: unknown[];
      containers: { name: string; image: string; command: string[]; ports: { containerPort: number }[] }[];
    };
    assert.deepEqual(pod.nodeSelector, { 'node-role.kubernetes.io/kata-oc': '' });
    assert.equal(pod.serviceAccountName, 'monitor');
    assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
    const c = pod.containers[0];
    assert.equal(c?.name, 'kata-monitor');
    assert.equal(c?.image, 'example.com/kata-monitor:1');
    assert.deepEqual(c?.command, [
      '/usr/bin/kata-monitor',
      '--listen-address=:8090',
      '--log-level=debug',
      '--runtime-endpoint=/run/crio/crio.sock',
    ]);
    assert.equal(ds.metadata.ownerReferences?.[0]?.uid, 'uid-1');
    assert.equal(ds.spec.template.metadata?.labels?.name, MONITOR_DAEMONSET);
    // The Service selects the DaemonSet's pods on its metrics port.
    const svc = m.service as unknown as {
      metadata: { name: string };
      spec: { selector: Record<string, string>; ports: { port: number }[] };
    };
    assert.equal(svc.metadata.name, 'metrics');
    assert.deepEqual(svc.spec.selector, { name: MONITOR_DAEMONSET });
    assert.equal(svc.spec.ports[0]?.port, c?.ports[0]?.containerPort);
    assert.equal(m.serviceMonitor, undefined, 'no ServiceMonitor without the Prometheus Operator');
  });

  test('a compact cluster runs it on the masters; with the Prometheus Operator, a ServiceMonitor and the recording rule', () => {
    const m = desiredMonitor(input(installed(), { kataNodeSelector: { 'node-role.kubernetes.io/master': '' }, prometheusOperator: true }));
    assert.ok(m);
    assert.deepEqual((m.daemonSet.spec.template.spec as { nodeSelector: unknown }).nodeSelector, { 'node-role.kubernetes.io/master': '' });
    const sm = m.serviceMonitor as unknown as { spec: { selector: unknown; endpoints: { port: string }[] } };
    assert.deepEqual(sm.spec.selector, { matchLabels: { name: MONITOR_DAEMONSET } });
    assert.equal(sm.spec.endpoints[0]?.port, 'metrics');
    const rule = m.prometheusRule as unknown as {
      metadata: { name: string };
      spec: { groups: { rules: { record: string; expr: string }[] }[] };
    };
    assert.equal(rule.metadata.name, 'prometheus-sandboxed-containers-rules');
    assert.deepEqual(rule.spec.groups[0]?.rules[0], {
      record: 'cluster:kata_monitor_running_shim_count:sum',
      expr: 'sum(kata_monitor_running_shim_count)',
    });
  });

  test('an unchanged object is up to date; a changed image, a stale owner or a hand edit is not', () => {
    const a = desiredMonitor(input(installed()));
    const b = desiredMonitor(input(installed(), { image: 'example.com/kata-monitor:2' }));
    assert.ok(a && b);
    assert.ok(upToDate(a.daemonSet, desiredMonitor(input(installed()))?.daemonSet ?? a.daemonSet));
    assert.ok(!upToDate(a.daemonSet, b.daemonSet));
    assert.ok(!upToDate(undefined, a.daemonSet));
    const otherOwner = desiredMonitor(input(installed({}, { uid: 'uid-2' })));
    assert.ok(otherOwner && !upToDate(a.daemonSet, otherOwner.daemonSet));
    // What the API server adds (defaults, status, its own metadata) does not count; a hand edit of ours does.
    const served = {
      ...a.service,
      metadata: { ...a.service.metadata, uid: 'svc-1', resourceVersion: '7', labels: { ...a.service.metadata.labels, extra: 'x' } },
      spec: { ...(a.service as unknown as { spec: object }).spec, clusterIP: '10.0.0.1', type: 'ClusterIP' },
    };
    assert.ok(upToDate(served, a.service));
    const edited = { ...served, spec: { ...served.spec, selector: { name: 'something-else' } } };
    assert.ok(!upToDate(edited, a.service));
    const unlabelled = { ...served, metadata: { ...served.metadata, labels: {} } };
    assert.ok(!upToDate(unlabelled, a.service));
  });

  test('the image: RELATED_IMAGE_KATA_MONITOR, else the original operator image', () => {
    assert.equal(monitorImageFromEnv({}), DEFAULT_MONITOR_IMAGE);
    assert.equal(monitorImageFromEnv({ RELATED_IMAGE_KATA_MONITOR: 'mirror.local/monitor:1' }), 'mirror.local/monitor:1');
    assert.match(DEFAULT_MONITOR_IMAGE, /openshift-sandboxed-containers-monitor/);
  });
});

describe('kata_* gauges', () => {
  test('installation success: only a finished, fully ready installation whose RuntimeClasses exist', () => {
    assert.ok(installationSucceeded(installed(), ['kata']));
    assert.ok(!installationSucceeded(undefined, ['kata']));
    assert.ok(!installationSucceeded(installed(), []), 'RuntimeClass deleted by hand');
    const inProgress = installed({
      conditions: [{ type: 'InProgress', status: 'True', reason: 'Installing', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    });
    assert.ok(!installationSucceeded(inProgress, ['kata']));
    assert.ok(!installationSucceeded(installed({ kataNodes: { nodeCount: 2, readyNodeCount: 1 } }), ['kata']));
    assert.ok(!installationSucceeded(installed({ kataNodes: { nodeCount: 0, readyNodeCount: 0 } }), ['kata']), 'no node selected');
    assert.ok(
      !installationSucceeded(installed({ kataNodes: { nodeCount: 2, readyNodeCount: 2, failedToInstall: ['worker-1'] } }), ['kata']),
    );
    assert.ok(!installationSucceeded(installed({ conditions: [] }), ['kata']), 'never reconciled');
    assert.ok(!installationSucceeded(installed({}, { deletionTimestamp: '2026-01-02T00:00:00Z' }), ['kata']));
  });

  test('remote pods: total, not Running nor Succeeded, ratio in percent; the RuntimeClass', () => {
    const g = kataGauges({
      kataConfigs: [installed()],
      runtimeClasses: ['kata', 'kata-remote'],
      remotePodPhases: ['Running', 'Succeeded', 'Pending', 'Failed', undefined, 'Running', 'Running', 'Running'],
    });
    assert.deepEqual(g, {
      kata_config_installation_success: 1,
      kata_remote_runtimeclass_available: 1,
      kata_total_remote_pods: 8,
      kata_failed_remote_pods: 3,
      kata_remote_workload_failure_ratio: 37.5,
    });
    const none = kataGauges({ kataConfigs: [], runtimeClasses: [], remotePodPhases: [] });
    assert.deepEqual(none, {
      kata_config_installation_success: 0,
      kata_remote_runtimeclass_available: 0,
      kata_total_remote_pods: 0,
      kata_failed_remote_pods: 0,
      kata_remote_workload_failure_ratio: 0,
    });
  });

  test('the registry exposes the five gauges, read from the source at each scrape', async () => {
    const registry = new Registry();
    let phases: string[] = ['Running'];
    registerKataGauges(registry, () => ({ kataConfigs: [installed()], runtimeClasses: ['kata', 'kata-remote'], remotePodPhases: phases }));
    const first = await registry.metrics();
    assert.match(first, /^kata_config_installation_success 1$/m);
    assert.match(first, /^kata_remote_runtimeclass_available 1$/m);
    assert.match(first, /^kata_total_remote_pods 1$/m);
    assert.match(first, /^kata_failed_remote_pods 0$/m);
    assert.match(first, /^kata_remote_workload_failure_ratio 0$/m);
    phases = ['Running', 'Pending'];
    const second = await registry.metrics();
    assert.match(second, /^kata_total_remote_pods 2$/m);
    assert.match(second, /^kata_failed_remote_pods 1$/m);
    assert.match(second, /^kata_remote_workload_failure_ratio 50$/m);
    for (const line of second.split('\n').filter((l) => l && !l.startsWith('#'))) assert.match(line, /^kata_/);
  });
});
