import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  CONTROLLER_BURST,
  CONTROLLER_QPS,
  controllerManagerArgs,
  KUBERNETES_SERVICE_IP,
  kwokArgs,
  SERVICE_CIDR,
  schedulerConfig,
} from '../../src/devcluster/controlplane/flags.ts';
import { kwokStages, POD_CIDR } from '../../src/devcluster/controlplane/kwok.ts';
import { nodeAddress } from '../../src/devcluster/nodes.ts';
import { PEER_POD_QUERY } from '../../src/devcluster/podvms.ts';

const pki = { ca: 'ca.crt', caKey: 'ca.key', apiserverCert: 'a.crt', apiserverKey: 'a.key', saKey: 'sa.key', saPub: 'sa.pub' };

/** [first, last] address of a CIDR as 32-bit numbers. */
function range(cidr: string): [number, number] {
  const [ip, bits] = cidr.split('/');
  const n = (ip ?? '').split('.').reduce((a, o) => a * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const first = n - (n % size);
  return [first, first + size - 1];
}
const overlaps = (a: string, b: string) => {
  const [a0, a1] = range(a);
  const [b0, b1] = range(b);
  return a0 <= b1 && b0 <= a1;
};
const contains = (cidr: string, ip: string) => overlaps(cidr, `${ip}/32`);

const server = { port: 10250, cert: 'kubelet.crt', key: 'kubelet.key' };

describe('dev cluster control plane configuration', () => {
  test('the controller-manager acts per controller and keeps up with thousands of nodes', () => {
    const args = controllerManagerArgs({ kubeconfig: 'kcm.kubeconfig', pki, nodeMonitorGracePeriodSeconds: 20 });
    assert.ok(args.includes('--use-service-account-credentials=true'));
    assert.ok(args.includes(`--kube-api-qps=${CONTROLLER_QPS}`) && CONTROLLER_QPS >= 1000);
    assert.ok(args.includes(`--kube-api-burst=${CONTROLLER_BURST}`));
    assert.ok(args.includes('--node-monitor-grace-period=20s'));
    assert.ok(controllerManagerArgs({ kubeconfig: 'k', pki }).includes('--node-monitor-grace-period=40s'), 'the kubelet-era default');
    const longLeases = { nodeLeaseDurationSeconds: 160, nodeMonitorGracePeriodSeconds: 40 };
    assert.ok(
      controllerManagerArgs({ kubeconfig: 'k', pki, ...longLeases }).includes('--node-monitor-grace-period=80s'),
      'at least twice the renewal interval',
    );
    assert.ok(
      kwokArgs({ kubeconfig: 'k', config: 'c', podCidr: POD_CIDR, nodeSelector: 'a=b', server, ...longLeases }).includes(
        '--node-lease-duration-seconds=160',
      ),
    );
    const kwokConfig = parseAllDocuments(kwokStages())
      .map((d) => d.toJS())
      .find((d) => d.kind === 'KwokConfiguration');
    assert.ok(kwokConfig.options.nodeLeaseParallelism > 4, 'Leases of thousands of nodes renewed in parallel');
    const sched = schedulerConfig('/x/scheduler.kubeconfig');
    assert.match(sched, new RegExp(`qps: ${CONTROLLER_QPS}`));
    assert.match(sched, /leaderElect: false/);
  });

  test('networks: pods, services and nodes never overlap', () => {
    assert.equal(overlaps(POD_CIDR, SERVICE_CIDR), false, 'kwok pod IPs stay out of the service range');
    assert.ok(contains(SERVICE_CIDR, KUBERNETES_SERVICE_IP));
    for (const [role, i] of [
      ['master', 0],
      ['worker', 0],
      ['worker', 4999],
    ] as const) {
      const ip = nodeAddress(role, i);
      assert.equal(contains(SERVICE_CIDR, ip) || contains(POD_CIDR, ip), false, `${role} ${i}: ${ip}`);
      assert.match(ip, /^10\.0\.\d{1,3}\.\d{1,3}$/);
      assert.ok(
        ip.split('.').every((o) => Number(o) <= 255),
        ip,
      );
    }
    assert.notEqual(nodeAddress('worker', 250), nodeAddress('worker', 0));
    assert.ok(kwokArgs({ kubeconfig: 'k', config: 'c', podCidr: POD_CIDR, nodeSelector: 'a=b', server }).includes(`--cidr=${POD_CIDR}`));
  });

  test('kwok initialises a node that registers or comes back, and leaves a rebooting node NotReady', () => {
    const stages = parseAllDocuments(kwokStages())
      .map((d) => d.toJS())
      .filter((d) => d.kind === 'Stage');
    const init = stages.find((s) => s.metadata.name === 'node-initialize');
    assert.ok(init);
    assert.deepEqual(init.spec.selector.matchExpressions, [
      { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: 'NotIn', values: ['True', 'False'] },
    ]);
    assert.match(init.spec.next.statusTemplate, /type: Ready\n {2}status: "True"\n {2}reason: KubeletReady/);
    const nodeStages = stages.filter((s) => s.spec.resourceRef.kind === 'Node');
    assert.deepEqual(
      nodeStages.map((s) => s.metadata.name),
      ['node-initialize'],
      'no stage rewrites conditions later: the Lease is the heartbeat',
    );
  });

  test('Job pods complete, except those whose work a simulator does', () => {
    const stages = parseAllDocuments(kwokStages({ simulatedJobs: ['image-build'], jobRunMs: 50 }))
      .map((d) => d.toJS())
      .filter((d) => d.kind === 'Stage');
    const complete = stages.find((s) => s.metadata.name === 'pod-complete');
    assert.equal(complete.spec.delay.durationMilliseconds, 50);
    assert.deepEqual(complete.spec.selector.matchExpressions.at(-1), {
      key: '.metadata.labels["job-name"]',
      operator: 'NotIn',
      values: ['image-build'],
    });
    assert.ok(stages.some((s) => s.metadata.name === 'pod-delete' && s.spec.next.delete === true));
    assert.ok(stages.some((s) => s.metadata.name === 'pod-ready' && /phase: Running/.test(s.spec.next.statusTemplate)));
  });

  test('sandbox-gated pods (peer pods) run only once their sandbox exists (PodReadyToStartContainers True)', () => {
    const stages = parseAllDocuments(kwokStages({ sandboxGatedPods: PEER_POD_QUERY }))
      .map((d) => d.toJS())
      .filter((d) => d.kind === 'Stage');
    const ready = stages.find((s) => s.metadata.name === 'pod-ready');
    const gate = ready.spec.selector.matchExpressions.at(-1);
    assert.equal(gate.operator, 'In');
    assert.deepEqual(gate.values, ['true']);
    assert.match(gate.key, /kata-remote/);
    assert.match(gate.key, /PodReadyToStartContainers/);
    // Without the option no pod waits.
    const plain = parseAllDocuments(kwokStages())
      .map((d) => d.toJS())
      .find((d) => d.kind === 'Stage' && d.metadata.name === 'pod-ready');
    assert.doesNotMatch(JSON.stringify(plain.spec.selector), /PodReadyToStartContainers/);
  });
});
