/**
 * `osc install --dry-run > osc.yaml; kubectl apply -f osc.yaml`, as an administrator would, on a fresh dev
 * cluster of each distribution: the printed manifests must apply where they claim to. OpenShift always
 * serves the Prometheus Operator's API, so its manifests carry the ServiceMonitor; plain Kubernetes may not,
 * so its manifests leave it out unless asked for, and say so.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { ServiceMonitors } from '../../src/kube/resources.ts';
import { runOsc as osc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';

const SERVICE_MONITOR = `servicemonitor.monitoring.coreos.com/${NAMES.serviceMonitor}`;

describe('osc install --dry-run applies with kubectl on the OpenShift dev cluster', () => {
  const cluster = useDevCluster({ workers: 1, masters: 1 });

  test('every object applies, the ServiceMonitor included', async () => {
    const dry = await osc(['install', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /kind: ServiceMonitor/);
    const applied = await cluster.dev.controlPlane.kubectl(['apply', '-f', '-'], { input: dry.stdout });
    assert.equal(applied.code, 0, `kubectl apply failed:\n${applied.stderr}`);
    assert.match(applied.stdout, new RegExp(`${SERVICE_MONITOR.replaceAll('.', '\\.')} created`));
    assert.ok(await cluster.dev.client.find(ServiceMonitors, NAMES.serviceMonitor, OPERATOR_NAMESPACE), 'the ServiceMonitor exists');
  });

  test('the simulated monitoring API validates as the real one: a ServiceMonitor without a selector is refused', async () => {
    const bad = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: no-selector
  namespace: ${OPERATOR_NAMESPACE}
spec:
  endpoints:
  - port: metrics
    interval: soon
`;
    const r = await cluster.dev.controlPlane.kubectl(['apply', '-f', '-'], { input: bad });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec\.selector: Required value/);
    assert.match(r.stderr, /spec\.endpoints\[0\]\.interval: Invalid value: "soon"/);
  });
});

describe('osc install --dry-run --distribution kubernetes applies with kubectl on the plain dev cluster', () => {
  const cluster = useDevCluster({ distribution: 'kubernetes', workers: 1, masters: 1 });

  test('the ServiceMonitor is left out, with a line saying so, and everything else applies', async () => {
    const dry = await osc(['install', '--dry-run', '--distribution', 'kubernetes']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.doesNotMatch(dry.stdout, /kind: ServiceMonitor/);
    assert.match(dry.stderr, new RegExp(`${SERVICE_MONITOR.replaceAll('.', '\\.')} left out: .*--service-monitor`));
    const applied = await cluster.dev.controlPlane.kubectl(['apply', '-f', '-'], { input: dry.stdout });
    assert.equal(applied.code, 0, `kubectl apply failed:\n${applied.stderr}`);
    assert.match(applied.stdout, /deployment\.apps\/\S+ created/);
  });

  test('asked for, the ServiceMonitor is printed, and a cluster without the Prometheus Operator refuses it', async () => {
    const dry = await osc(['install', '--dry-run', '--distribution', 'kubernetes', '--service-monitor']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /kind: ServiceMonitor/);
    assert.doesNotMatch(dry.stderr, /left out/);
    const applied = await cluster.dev.controlPlane.kubectl(['apply', '-f', '-'], { input: dry.stdout });
    assert.notEqual(applied.code, 0);
    assert.match(applied.stderr, /no matches for kind "ServiceMonitor" in version "monitoring\.coreos\.com\/v1"/);
  });
});
