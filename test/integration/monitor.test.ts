/**
 * The kata monitor and the kata_* gauges on the dev cluster: the monitor DaemonSet (with its Service and
 * ServiceAccount) appears once kata is installed, targets exactly the kata nodes, is healed when deleted or
 * edited, and goes with the KataConfig; the gauges, scraped from the operator's /metrics, follow the
 * installation and the kata-remote pods' phases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import {
  MONITOR_DAEMONSET,
  MONITOR_RULES,
  MONITOR_SERVICE,
  MONITOR_SERVICE_ACCOUNT,
  MONITOR_SERVICE_MONITOR,
  OPERATOR_NAMESPACE,
} from '../../src/api/names.ts';
import { desiredMonitor, PrometheusRules, ServiceMonitors, upToDate } from '../../src/controllers/monitor/desired.ts';
import { DaemonSets, Nodes, Pods, RuntimeClasses, ServiceAccounts, Services } from '../../src/kube/resources.ts';
import { scrapeMetrics, useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = OPERATOR_NAMESPACE;
const NAME = 'cluster-kataconfig';

describe('kata monitor and kata_* metrics', () => {
  const cluster = useDevCluster({ workers: 3 });
  const operator = useOperator(cluster, NAME);

  /** The five gauges as Prometheus scrapes them from the operator's /metrics. */
  async function scrape(): Promise<Record<string, number>> {
    const { status, text } = await scrapeMetrics(cluster.dev, operator.op.operator);
    assert.equal(status, 200, text);
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^(kata_[a-z_]+) (\S+)$/gm)) out[m[1] ?? ''] = Number(m[2]);
    return out;
  }
  const gaugesAre = (want: Record<string, number>) => async () => {
    const got = await scrape();
    return Object.entries(want).every(([k, v]) => Math.abs((got[k] ?? Number.NaN) - v) < 1e-9) ? got : undefined;
  };

  test('before any KataConfig: no monitor, every gauge 0', async () => {
    await waitFor(
      gaugesAre({
        kata_config_installation_success: 0,
        kata_remote_runtimeclass_available: 0,
        kata_total_remote_pods: 0,
        kata_failed_remote_pods: 0,
        kata_remote_workload_failure_ratio: 0,
      }),
      { message: 'all five gauges at 0' },
    );
    assert.equal(await cluster.dev.client.find(DaemonSets, MONITOR_DAEMONSET, ns), undefined);
  });

  test('once kata is installed: the monitor DaemonSet on exactly the kata nodes, its Service; installation success 1', async () => {
    const c = cluster.dev.client;
    await c.create(KataConfigs, {
      metadata: { name: NAME },
      spec: { checkNodeEligibility: false, kataConfigPoolSelector: { matchLabels: { 'kubernetes.io/hostname': 'worker-1' } } },
    } as never);
    // While the first installation runs the gauge says 0.
    const installing = await scrape();
    assert.equal(installing.kata_config_installation_success, 0);
    await waitFor(async () => (await c.get(KataConfigs, NAME)).status?.kataNodes?.readyNodeCount === 1, {
      timeoutMs: 120_000,
      message: 'kata installed on worker-1',
    });
    await waitFor(gaugesAre({ kata_config_installation_success: 1 }), { message: 'installation success 1' });

    const ds = await waitFor(() => c.find(DaemonSets, MONITOR_DAEMONSET, ns), { message: 'the monitor DaemonSet' });
    const pod = ds.spec.template.spec as { nodeSelector: Record<string, string>; containers: { name: string; image: string }[] };
    assert.equal(pod.containers[0]?.name, 'kata-monitor');
    assert.match(pod.containers[0]?.image ?? '', /openshift-sandboxed-containers-monitor/);
    // The nodes a scheduler would run it on are exactly the kata nodes.
    const selector = Object.entries(pod.nodeSelector)
      .map(([k, v]) => (v ? `${k}=${v}` : k))
      .join(',');
    const targets = (await c.list(Nodes, { labelSelector: selector })).items.map((n) => n.metadata.name);
    assert.deepEqual(targets, (await c.get(KataConfigs, NAME)).status?.kataNodes?.installed);
    assert.deepEqual(targets, ['worker-1']);
    // The monitor's objects are written one after the other: the Service and ServiceAccount may come a moment after.
    const svc = (await waitFor(() => c.find(Services, MONITOR_SERVICE, ns), { message: 'the monitor Service' })) as {
      spec?: { selector?: Record<string, string> };
    };
    assert.deepEqual(svc.spec?.selector, ds.spec.selector.matchLabels);
    await waitFor(() => c.find(ServiceAccounts, MONITOR_SERVICE_ACCOUNT, ns), { message: 'the monitor ServiceAccount' });
    // As the API server stores them (with its defaults), the objects are what osc wants: while nothing
    // changes, the periodic re-check writes nothing.
    const want = desiredMonitor({
      namespace: ns,
      image: pod.containers[0]?.image ?? '',
      kataConfig: await c.get(KataConfigs, NAME),
      kataNodeSelector: { 'node-role.kubernetes.io/kata-oc': '' },
      prometheusOperator: false,
    });
    assert.ok(want, 'the monitor is wanted once kata is installed');
    assert.ok(upToDate(await c.get(ServiceAccounts, MONITOR_SERVICE_ACCOUNT, ns), want.serviceAccount), 'ServiceAccount up to date');
    assert.ok(upToDate(await c.get(DaemonSets, MONITOR_DAEMONSET, ns), want.daemonSet), 'DaemonSet up to date');
    assert.ok(upToDate(await c.get(Services, MONITOR_SERVICE, ns), want.service), 'Service up to date');
  });

  test('the monitor is healed: a deleted DaemonSet comes back, an edited Service is corrected', async () => {
    const c = cluster.dev.client;
    const before = await c.get(DaemonSets, MONITOR_DAEMONSET, ns);
    await c.delete(DaemonSets, MONITOR_DAEMONSET, { namespace: ns });
    await waitFor(async () => (await c.find(DaemonSets, MONITOR_DAEMONSET, ns))?.metadata.uid !== before.metadata.uid || undefined, {
      message: 'the DaemonSet recreated',
    });
    await c.patch(Services, MONITOR_SERVICE, { spec: { selector: { name: 'something-else' } } }, { namespace: ns, type: 'merge' });
    await waitFor(
      async () =>
        ((await c.get(Services, MONITOR_SERVICE, ns)) as { spec?: { selector?: Record<string, string> } }).spec?.selector?.name ===
        MONITOR_DAEMONSET,
      { message: 'the Service selector corrected' },
    );
  });

  test('where the Prometheus Operator API is served: the ServiceMonitor and the recording rule', async () => {
    const c = cluster.dev.client;
    // The two kinds as the Prometheus Operator's CRDs serve them (schema left open: only the API matters here).
    const crd = (kind: string, plural: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.monitoring.coreos.com` },
      spec: {
        group: 'monitoring.coreos.com',
        scope: 'Namespaced',
        names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    });
    await cluster.dev.controlPlane.installCRDs([crd('ServiceMonitor', 'servicemonitors'), crd('PrometheusRule', 'prometheusrules')]);
    // Any change of the monitor wakes the controller, which now finds the API.
    await c.delete(DaemonSets, MONITOR_DAEMONSET, { namespace: ns });
    const sm = (await waitFor(() => c.find(ServiceMonitors, MONITOR_SERVICE_MONITOR, ns), {
      message: 'the ServiceMonitor',
    })) as unknown as {
      spec: { selector: unknown; endpoints: { port: string }[]; namespaceSelector: unknown };
    };
    assert.deepEqual(sm.spec.selector, { matchLabels: { name: MONITOR_DAEMONSET } });
    assert.deepEqual(sm.spec.namespaceSelector, { matchNames: [ns] });
    assert.equal(sm.spec.endpoints[0]?.port, 'metrics');
    const rule = (await waitFor(() => c.find(PrometheusRules, MONITOR_RULES, ns), { message: 'the recording rule' })) as unknown as {
      spec: { groups: { name: string; rules: { record: string; expr: string }[] }[] };
    };
    assert.deepEqual(rule.spec.groups, [
      {
        name: 'kata_monitor_rules',
        rules: [{ record: 'cluster:kata_monitor_running_shim_count:sum', expr: 'sum(kata_monitor_running_shim_count)' }],
      },
    ]);
    await waitFor(() => c.find(DaemonSets, MONITOR_DAEMONSET, ns), { message: 'the DaemonSet back' });
  });

  test('kata-remote gauges follow the RuntimeClass and the pods phases', async () => {
    const c = cluster.dev.client;
    await c.create(RuntimeClasses, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'kata-remote' },
      handler: 'kata-remote',
    });
    await waitFor(gaugesAre({ kata_remote_runtimeclass_available: 1, kata_total_remote_pods: 0 }), { message: 'kata-remote available' });
    const phases = { 'remote-running': 'Running', 'remote-done': 'Succeeded', 'remote-failed': 'Failed', 'remote-pending': '' };
    for (const name of Object.keys(phases)) {
      await c.create(Pods, {
        metadata: { name, namespace: 'default' },
        spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'quay.io/openshift/origin-hello-openshift' }] },
      } as never);
    }
    // A pod that uses kata (not kata-remote) counts in none of them.
    await c.create(Pods, {
      metadata: { name: 'local-kata', namespace: 'default' },
      spec: { runtimeClassName: 'kata', containers: [{ name: 'c', image: 'quay.io/openshift/origin-hello-openshift' }] },
    } as never);
    for (const [name, phase] of Object.entries(phases)) {
      if (phase) await c.patch(Pods, name, { status: { phase } }, { namespace: 'default', subresource: 'status', type: 'merge' });
    }
    await waitFor(
      gaugesAre({
        kata_total_remote_pods: 4,
        kata_failed_remote_pods: 2, // Failed, and Pending
        kata_remote_workload_failure_ratio: 50,
      }),
      { message: '4 remote pods, 2 neither Running nor Succeeded' },
    );
    await c.patch(Pods, 'remote-pending', { status: { phase: 'Running' } }, { namespace: 'default', subresource: 'status', type: 'merge' });
    await waitFor(gaugesAre({ kata_failed_remote_pods: 1, kata_remote_workload_failure_ratio: 25 }), {
      message: 'the pending pod running',
    });
    for (const name of [...Object.keys(phases), 'local-kata'])
      await c.delete(Pods, name, { namespace: 'default', gracePeriodSeconds: 0 } as never);
    await c.delete(RuntimeClasses, 'kata-remote');
    await waitFor(gaugesAre({ kata_remote_runtimeclass_available: 0, kata_total_remote_pods: 0, kata_remote_workload_failure_ratio: 0 }), {
      message: 'no remote pods and no kata-remote',
    });
  });

  test('the KataConfig deleted: the monitor goes, installation success 0', async () => {
    const c = cluster.dev.client;
    await c.delete(KataConfigs, NAME);
    await waitFor(gaugesAre({ kata_config_installation_success: 0 }), { message: 'installation success 0 once uninstall starts' });
    await waitFor(
      async () =>
        !(await c.find(DaemonSets, MONITOR_DAEMONSET, ns)) &&
        !(await c.find(Services, MONITOR_SERVICE, ns)) &&
        !(await c.find(ServiceAccounts, MONITOR_SERVICE_ACCOUNT, ns)) &&
        !(await c.find(ServiceMonitors, MONITOR_SERVICE_MONITOR, ns)) &&
        !(await c.find(PrometheusRules, MONITOR_RULES, ns)),
      { timeoutMs: 120_000, message: 'the monitor removed' },
    );
    await waitFor(async () => !(await c.find(KataConfigs, NAME)), { timeoutMs: 120_000, message: 'the KataConfig gone' });
  });
});
