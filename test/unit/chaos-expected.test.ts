import assert from 'node:assert/strict';
import { test } from 'node:test';
import { differences, type OpenShiftSnapshot, type Snapshot } from '../../bench/chaos/expected.ts';
import { expectedConfigId } from '../../bench/chaos/expected-kubernetes.ts';
import { applyOperation, CHAOS_LABEL, initialModel, nextOperation, rng, selected } from '../../bench/chaos/scenario.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import {
  CONFIG_ANNOTATION,
  INSTALL_LABEL,
  KATA_DEPLOY_INSTANCE_LABEL,
  KATA_RUNTIME_LABEL,
} from '../../src/platform/kubernetes/katadeploy.ts';

const pool = (name: string, config: string, machines: number): MachineConfigPool =>
  ({
    metadata: { name, generation: 2 },
    spec: { configuration: { name: config } },
    status: {
      observedGeneration: 2,
      configuration: { name: config },
      machineCount: machines,
      conditions: [{ type: 'Updated', status: 'True' }],
    },
  }) as MachineConfigPool;

const worker = (name: string, config: string, labels: Record<string, string> = {}): Node => ({
  metadata: {
    name,
    labels: { 'node-role.kubernetes.io/worker': '', ...labels },
    annotations: { 'machineconfiguration.openshift.io/state': 'Done', 'machineconfiguration.openshift.io/currentConfig': config },
  },
});

const openshiftUninstalled = (): OpenShiftSnapshot => ({
  machineConfig: false,
  workerPool: pool('worker', 'rendered-worker-1', 2),
  caaDaemonSet: false,
  peerPodConfig: false,
  jobs: [],
  amiId: '',
  cloudImages: [],
});

const uninstalled = (): Snapshot => ({
  runtimeClasses: [],
  nodes: [worker('worker-0', 'rendered-worker-1'), worker('worker-1', 'rendered-worker-1')],
  monitor: false,
  kataNodes: {},
  orphans: [],
  openshift: openshiftUninstalled(),
});

test('chaos model: nothing installed and nothing left is converged; anything of osc left is a leak', () => {
  const m = initialModel(2);
  assert.deepEqual(differences(m, uninstalled()), []);
  const left = differences(m, {
    ...uninstalled(),
    runtimeClasses: ['kata'],
    kataNodes: { 'worker-1': 'Uninstalling' },
    openshift: { ...openshiftUninstalled(), cloudImages: ['ami-0123456789abcdef0'] },
    orphans: ['DaemonSet openshift-sandboxed-containers-operator/openshift-sandboxed-containers-monitor'],
  });
  assert.deepEqual(
    left.map((d) => [d.what, d.leak]),
    [
      ['RuntimeClass kata', true],
      ['KataNode worker-1', true],
      [
        'DaemonSet openshift-sandboxed-containers-operator/openshift-sandboxed-containers-monitor, owned by a KataConfig that is gone',
        true,
      ],
      ['pod VM images ami-0123456789abcdef0', true],
    ],
  );
});

test('chaos model: installed with a selector: kata on the labelled worker only, the status saying so', () => {
  const m = applyOperation(initialModel(2), { kind: 'install', logLevel: 'info', selector: true });
  assert.deepEqual(selected(m), ['worker-0']);
  const installed: Snapshot = {
    ...uninstalled(),
    kataConfig: {
      metadata: { name: 'chaos' },
      spec: {},
      status: {
        conditions: [{ type: 'InProgress', status: 'False', reason: '', message: '' }],
        kataNodes: { installed: ['worker-0'], nodeCount: 1, readyNodeCount: 1 },
        runtimeClasses: ['kata'],
      },
    } as Snapshot['kataConfig'],
    runtimeClasses: ['kata'],
    kataNodes: { 'worker-0': 'Installed' },
    openshift: {
      ...openshiftUninstalled(),
      machineConfig: true,
      kataPool: pool('kata-oc', 'rendered-kata-oc-1', 1),
      workerPool: pool('worker', 'rendered-worker-1', 1),
    },
    nodes: [
      worker('worker-0', 'rendered-kata-oc-1', { [CHAOS_LABEL]: 'kata', 'node-role.kubernetes.io/kata-oc': '' }),
      worker('worker-1', 'rendered-worker-1'),
    ],
    monitor: true,
  };
  assert.deepEqual(differences(m, installed), []);
  // worker-1 still carrying kata's role label: not converged.
  const wrong = {
    ...installed,
    nodes: [installed.nodes[0] as Node, worker('worker-1', 'rendered-worker-1', { 'node-role.kubernetes.io/kata-oc': '' })],
  };
  assert.match(
    differences(m, wrong)
      .map((d) => d.what)
      .join('\n'),
    /kata-oc role label on worker-0 \(is on worker-0,worker-1\)/,
  );
});

test('chaos model: worker-10 sorts after worker-9, as the status lists them', () => {
  const m = applyOperation(applyOperation(initialModel(9), { kind: 'nodeJoin', node: 'worker-10' }), { kind: 'install' });
  const kata = (n: string) => worker(n, 'rendered-kata-oc-1', { 'node-role.kubernetes.io/kata-oc': '' });
  const names = ['worker-0', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5', 'worker-6', 'worker-7', 'worker-8', 'worker-10'];
  const left = differences(m, { ...uninstalled(), nodes: names.map(kata) });
  assert.ok(!left.some((d) => /role label/.test(d.what)), JSON.stringify(left));
});

test('chaos operations: the same seed gives the same operations; the selector always matches a worker', () => {
  const run = (seed: number) => {
    const r = rng(seed);
    let n = 2;
    let m = initialModel(2);
    const ops: string[] = [];
    for (let i = 0; i < 200; i++) {
      const op = nextOperation(m, r, () => `worker-${n++}`);
      ops.push(JSON.stringify(op));
      m = applyOperation(m, op);
      if (m.installed && m.selector) assert.ok(selected(m).length > 0, `after ${JSON.stringify(op)}`);
    }
    return ops;
  };
  assert.deepEqual(run(42), run(42));
  assert.notDeepEqual(run(42), run(43));
});

const k8sNode = (name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Node => ({
  metadata: { name, labels, annotations },
});
const installerPod = (node: string, config: string, ready: boolean): Pod => ({
  metadata: { name: `osc-kata-deploy-${node}`, annotations: { [CONFIG_ANNOTATION]: config } },
  spec: { nodeName: node, containers: [] },
  status: { containerStatuses: [{ name: 'kube-kata', ready }] },
});

test('chaos model on Kubernetes: kata-deploy on the selected workers with the logLevel configuration, nothing of it elsewhere', () => {
  const m = applyOperation(initialModel(2, 'kubernetes'), { kind: 'install', logLevel: 'debug', selector: true });
  const id = expectedConfigId('debug');
  assert.notEqual(id, expectedConfigId('info'), 'debug turns DEBUG on: another configuration');
  const kataOn = { [INSTALL_LABEL]: 'true', [KATA_RUNTIME_LABEL]: 'true', [KATA_DEPLOY_INSTANCE_LABEL]: 'true' };
  const installed: Snapshot = {
    kataConfig: {
      metadata: { name: 'chaos' },
      spec: {},
      status: {
        conditions: [{ type: 'InProgress', status: 'False', reason: '', message: '' }],
        kataNodes: { installed: ['worker-0'], nodeCount: 1, readyNodeCount: 1 },
        runtimeClasses: ['kata'],
      },
    } as Snapshot['kataConfig'],
    runtimeClasses: ['kata'],
    nodes: [
      k8sNode('master-0'),
      k8sNode('worker-0', { [CHAOS_LABEL]: 'kata', ...kataOn }, { [CONFIG_ANNOTATION]: id }),
      k8sNode('worker-1'),
    ],
    monitor: true,
    kataNodes: { 'worker-0': 'Installed' },
    orphans: [],
    kubernetes: { installer: true, installerPods: [installerPod('worker-0', id, true)] },
  };
  assert.deepEqual(differences(m, installed), []);

  // The info configuration still on worker-0, and kata-deploy's label left on worker-1 by a cleanup that never ran.
  const stale: Snapshot = {
    ...installed,
    nodes: [
      k8sNode('master-0'),
      k8sNode('worker-0', { [CHAOS_LABEL]: 'kata', ...kataOn }, { [CONFIG_ANNOTATION]: expectedConfigId('info') }),
      k8sNode('worker-1', { [KATA_RUNTIME_LABEL]: 'true' }),
    ],
    kubernetes: { installer: true, installerPods: [installerPod('worker-0', expectedConfigId('info'), true)] },
  };
  const left = differences(m, stale);
  assert.deepEqual(
    left.map((d) => d.leak),
    [false, false, true],
  );
  assert.match(left[0]?.what ?? '', new RegExp(`worker-0: configuration ${id} assigned`));
  assert.match(left[2]?.what ?? '', /worker-1: katacontainers.io\/kata-runtime \(kata left on the node\)/);

  // Uninstalled: the DaemonSet and an installer pod left are leaks.
  const after = applyOperation(m, { kind: 'uninstall' });
  const leftover = differences(after, {
    ...installed,
    kataConfig: undefined,
    runtimeClasses: [],
    monitor: false,
    kataNodes: {},
    nodes: [k8sNode('master-0'), k8sNode('worker-0', { [CHAOS_LABEL]: 'kata' }), k8sNode('worker-1')],
  });
  assert.deepEqual(
    leftover.map((d) => [d.what, d.leak]),
    [
      ['installer pod osc-kata-deploy-worker-0 on worker-0', true],
      ['the kata-deploy DaemonSet', true],
    ],
  );
});

test('chaos operations on Kubernetes: never peer pods', () => {
  const r = rng(5);
  let n = 2;
  let m = initialModel(2, 'kubernetes');
  for (let i = 0; i < 300; i++) {
    const op = nextOperation(m, r, () => `worker-${n++}`);
    assert.ok(!op.peerPods && op.kind !== 'peerPodsOn' && op.kind !== 'peerPodsOff', JSON.stringify(op));
    m = applyOperation(m, op);
  }
});
