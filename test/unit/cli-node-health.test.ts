import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type KataConfig, messages } from '../../src/api/kataconfig.ts';
import { nodeProblem, renderStatus, summarize } from '../../src/api/summary.ts';

const ready = (status: string, reason = '', message = '') => ({
  status: { conditions: [{ type: 'Ready', status, reason, message, lastTransitionTime: '2026-11-22T10:00:00Z' }] },
});

test('a node whose kubelet stopped reporting is unreachable, and osc status says what that means', () => {
  assert.equal(nodeProblem({ metadata: { name: 'w' }, ...ready('True', 'KubeletReady') }), undefined);
  assert.equal(nodeProblem({ metadata: { name: 'w' } }), undefined, 'no conditions yet: nothing to report');
  const unknown = { metadata: { name: 'worker-1' }, ...ready('Unknown', 'NodeStatusUnknown', 'Kubelet stopped posting node status.') };
  assert.equal(
    nodeProblem(unknown),
    'unreachable since 2026-11-22T10:00:00Z (NodeStatusUnknown: Kubelet stopped posting node status.); its pods are not running and osc waits for it to return',
  );
  const rebooting = { metadata: { name: 'worker-0' }, ...ready('False', 'KubeletNotReady', 'node is rebooting') };
  assert.match(nodeProblem(rebooting) ?? '', /^not ready since .*KubeletNotReady: node is rebooting/);

  const kc: KataConfig = {
    metadata: { name: 'example' },
    spec: {},
    status: {
      kataNodes: { nodeCount: 2, readyNodeCount: 1, installed: ['worker-0'], installing: ['worker-1'] },
      conditions: [{ type: 'InProgress', status: 'True', reason: 'Installing', message: messages.installing('kata') }],
    },
  } as KataConfig;
  const s = summarize(kc, [unknown, { metadata: { name: 'worker-0' }, ...ready('True') }]);
  assert.deepEqual(
    s.nodes.map((n) => [n.node, n.problem]),
    [
      ['worker-0', undefined],
      ['worker-1', nodeProblem(unknown)],
    ],
  );
  assert.match(renderStatus(s), /worker-1 +installing — unreachable since/);
});
