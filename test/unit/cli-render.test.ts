import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, messages } from '../../src/api/kataconfig.ts';
import { oneLine, progressBar, renderNone, renderStatus, summarize } from '../../src/api/summary.ts';

const kc = (status: KataConfig['status'], extra: Partial<KataConfig> = {}): KataConfig => ({
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  metadata: { name: 'example-kataconfig', ...extra.metadata },
  spec: { checkNodeEligibility: false, logLevel: 'info', ...extra.spec },
  status,
});

const cond = (status: 'True' | 'False', reason: string, message: string) => [
  { type: 'InProgress', status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' },
];

describe('osc status rendering', () => {
  test('progress bar', () => {
    assert.equal(progressBar(1, 2), '[#####-----]');
    assert.equal(progressBar(0, 2), '[----------]');
    assert.equal(progressBar(2, 2), '[##########]');
    assert.equal(progressBar(0, 0), '[----------]');
    assert.equal(progressBar(1, 3), '[###-------]');
  });

  test('an install half way: phase, message, bar, per-node table, no runtime class yet', () => {
    const s = summarize(
      kc({
        conditions: cond('True', 'Installing', messages.installing('kata')),
        kataNodes: { nodeCount: 2, readyNodeCount: 1, installed: ['worker-1'], installing: ['worker-0'] },
      }),
    );
    assert.equal(s.phase, 'Installing');
    assert.equal(s.settled, false);
    assert.deepEqual(s.nodes, [
      { node: 'worker-0', state: 'installing' },
      { node: 'worker-1', state: 'installed' },
    ]);
    assert.equal(
      renderStatus(s),
      [
        `KataConfig example-kataconfig: Installing — ${messages.installing('kata')}`,
        '[#####-----] 1/2 nodes',
        'NODE       STATE',
        'worker-0   installing',
        'worker-1   installed',
        'RuntimeClasses: none yet (kata is created when every selected node is installed)',
        '',
      ].join('\n'),
    );
    assert.equal(oneLine(s), 'KataConfig example-kataconfig: Installing — 1/2 nodes ready — installed: worker-1; installing: worker-0');
  });

  test('installed and idle is settled', () => {
    const s = summarize(
      kc({
        conditions: cond('False', '', ''),
        kataNodes: { nodeCount: 2, readyNodeCount: 2, installed: ['worker-0', 'worker-1'] },
        runtimeClasses: ['kata'],
      }),
    );
    assert.equal(s.phase, 'Installed');
    assert.equal(s.settled, true);
    const text = renderStatus(s);
    assert.match(
      text,
      /^KataConfig example-kataconfig: Installed — kata is installed on 2 node\(s\); pods can use runtimeClassName: kata\n/,
    );
    assert.match(text, /\[##########\] 2\/2 nodes/);
    assert.match(text, /RuntimeClasses: kata\n$/);
  });

  test('a KataConfig nobody has picked up yet is Pending, and not settled', () => {
    const s = summarize(kc(undefined));
    assert.equal(s.phase, 'Pending');
    assert.equal(s.settled, false);
    assert.match(renderStatus(s), /Pending — waiting for the operator to pick it up/);
  });

  test('a blocked uninstall is not settled though InProgress is False, and says why', () => {
    const s = summarize(
      kc(
        {
          conditions: cond('False', 'BlockedByExistingKataPods', messages.blocked(['kata'])),
          kataNodes: { nodeCount: 2, readyNodeCount: 2, installed: ['worker-0', 'worker-1'] },
          runtimeClasses: ['kata'],
        },
        { metadata: { name: 'example-kataconfig', deletionTimestamp: '2026-01-01T00:00:00Z' } },
      ),
    );
    assert.equal(s.settled, false);
    assert.match(renderStatus(s), /BlockedByExistingKataPods — Existing pods using "kata" RuntimeClass found/);
  });

  test('uninstall progress uses the most nodes seen left to uninstall', () => {
    const s = summarize(
      kc(
        {
          conditions: cond('True', 'Uninstalling', messages.uninstalling('kata')),
          kataNodes: { nodeCount: 0, readyNodeCount: 0, uninstalling: ['worker-1'] },
        },
        { metadata: { name: 'example-kataconfig', deletionTimestamp: '2026-01-01T00:00:00Z' } },
      ),
    );
    assert.match(renderStatus(s, { uninstallTotal: 2 }), /\[#####-----\] 1\/2 nodes uninstalled/);
    assert.match(renderStatus(s), /\[----------\] 0\/1 nodes uninstalled/);
  });

  test('failed nodes and peer pods', () => {
    const s = summarize(
      kc(
        {
          conditions: cond('True', 'Failed', messages.failed('worker-0', 'disk full')),
          kataNodes: { nodeCount: 1, readyNodeCount: 0, failedToInstall: ['worker-0'] },
        },
        { spec: { enablePeerPods: true } },
      ),
    );
    assert.equal(s.runtimeClass, 'kata-remote');
    const text = renderStatus(s);
    assert.match(text, /Failed — Node worker-0 Degraded: disk full/);
    assert.match(text, /worker-0\s+failed to install/);
    assert.match(text, /none yet \(kata-remote is created/);
  });

  test('no KataConfig', () => {
    assert.match(renderNone(false, 'config/samples/cluster-kataconfig.yaml'), /^No KataConfig in this cluster\./);
    assert.match(renderNone(true, 'config/samples/cluster-kataconfig.yaml'), /waiting for one to be created/);
  });
  test('peer pods: the adaptor pods on an older configuration, and what to do, under the node table', () => {
    const outdated = {
      type: 'PeerPodsAdaptorOutdated',
      status: 'True' as const,
      reason: 'AdaptorPodsPendingDeletion',
      message: '1 of 2 cloud-api-adaptor pods (DaemonSet ns/osc-caa-ds) runs an older configuration; delete it to apply it',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    };
    const s = summarize(
      kc(
        {
          conditions: [...cond('False', '', ''), outdated],
          kataNodes: { nodeCount: 1, readyNodeCount: 1, installed: ['worker-0'] },
          runtimeClasses: ['kata', 'kata-remote'],
        },
        { spec: { enablePeerPods: true } },
      ),
    );
    assert.equal(s.adaptorOutdated, outdated.message);
    assert.match(
      renderStatus(s),
      /\nPeer pods adaptor: 1 of 2 cloud-api-adaptor pods \(DaemonSet ns\/osc-caa-ds\) runs an older configuration; delete it to apply it\n/,
    );
    assert.equal(summarize(kc({ conditions: cond('False', '', '') })).adaptorOutdated, undefined);
  });
});
