/**
 * Which node changes wake the peer pods controller: a label change only while a KataConfig enables peer
 * pods. An install labels every node; without peer pods those labels cannot change its plan, and each woke
 * a pass over every node (quadratic in the nodes).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { PEER_POD_VM_RESOURCE } from '../../src/api/names.ts';
import { kataConfigChanged, nodeChanged } from '../../src/controllers/peerpods/controller.ts';
import type { Node } from '../../src/kube/resources.ts';

const node = (labels: Record<string, string>, vms?: string): Node => ({
  metadata: { name: 'worker-0', labels },
  status: vms === undefined ? {} : { capacity: { [PEER_POD_VM_RESOURCE]: vms }, allocatable: { [PEER_POD_VM_RESOURCE]: vms } },
});

describe('peer pods: the node changes that wake a pass', () => {
  const worker = node({ 'node-role.kubernetes.io/worker': '' });
  const labelled = node({ 'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/kata-oc': '' });

  test('without peer pods, a node given the kata label wakes nothing', () => {
    assert.equal(nodeChanged(() => false)(worker, labelled), false);
  });

  test('with peer pods enabled, it does (the labels decide which nodes advertise pod VMs)', () => {
    assert.equal(nodeChanged(() => true)(worker, labelled), true);
  });

  test('a change of the pod VM capacity wakes a pass either way (it must go without peer pods)', () => {
    for (const wanted of [false, true]) {
      assert.equal(nodeChanged(() => wanted)(worker, node({ 'node-role.kubernetes.io/worker': '' }, '10')), true);
      assert.equal(nodeChanged(() => wanted)(node({}, '10'), node({}, '5')), true);
    }
  });

  test('a deletion wakes a pass either way', () => {
    const deleting = { ...worker, metadata: { ...worker.metadata, deletionTimestamp: '2026-11-27T00:00:00Z' } };
    assert.equal(nodeChanged(() => false)(worker, deleting), true);
  });

  test('nothing that matters changed: no pass', () => {
    const annotated = { ...labelled, metadata: { ...labelled.metadata, annotations: { a: 'b' } } };
    assert.equal(nodeChanged(() => true)(labelled, annotated), false);
  });
});

describe('peer pods: the KataConfig changes that wake a pass', () => {
  const kc: KataConfig = {
    metadata: { name: 'example', uid: 'u1', resourceVersion: '10', finalizers: ['kataconfiguration.openshift.io/finalizer'] },
    spec: { enablePeerPods: false },
    status: {
      conditions: [{ type: 'InProgress', status: 'True', reason: 'Installing', message: '', lastTransitionTime: '2026-11-27T00:00:00Z' }],
    },
  };
  const next = (over: (k: KataConfig) => void): KataConfig => {
    const k = structuredClone(kc);
    k.metadata.resourceVersion = '11';
    over(k);
    return k;
  };

  test("the KataConfig controller's status writes (InProgress, the node lists) wake nothing", () => {
    const written = next((k) => {
      k.status = {
        ...k.status,
        conditions: [
          { type: 'InProgress', status: 'True', reason: 'Installing', message: '1/2 nodes', lastTransitionTime: '2026-11-27T00:01:00Z' },
        ],
        kataNodes: { nodeCount: 2, readyNodeCount: 1, installed: ['worker-0'] },
      } as KataConfig['status'];
    });
    assert.equal(kataConfigChanged(kc, written), false);
  });

  test('what its plan reads does: the spec, deletion, finalizers, annotations, uninstallStarted and its own conditions', () => {
    const changes: [string, (k: KataConfig) => void][] = [
      ['spec', (k) => (k.spec = { enablePeerPods: true })],
      ['deletion', (k) => (k.metadata.deletionTimestamp = '2026-11-27T00:02:00Z')],
      ['finalizers', (k) => (k.metadata.finalizers = [])],
      ['annotations', (k) => (k.metadata.annotations = { keep: 'true' })],
      ['uninstallStarted', (k) => ((k.status as { uninstallStarted?: boolean }).uninstallStarted = true)],
      [
        'own condition',
        (k) =>
          k.status?.conditions?.push({
            type: 'PeerPodsConfigValid',
            status: 'True',
            reason: 'Valid',
            message: '',
            lastTransitionTime: '2026-11-27T00:02:00Z',
          }),
      ],
    ];
    for (const [what, change] of changes) assert.equal(kataConfigChanged(kc, next(change)), true, what);
  });
});
