/**
 * The rollout progress both the CLI and the console compute (src/api/progress.ts): the uninstall count,
 * and a dead end told from progress, in `osc start`'s terminal line, `osc status` and the console's header.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, messages } from '../../src/api/kataconfig.ts';
import { deadEndOf, leftToUninstall, uninstallProgress } from '../../src/api/progress.ts';
import { oneLine, renderStatus, summarize } from '../../src/api/summary.ts';
import { headlineOf, rememberUninstall, selectorText, tilesOf } from '../../src/console/web/model.ts';

const kataConfig = (spec: KataConfig['spec'], status: KataConfig['status'], deleting = false): KataConfig => ({
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  metadata: { name: 'example-kataconfig', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { checkNodeEligibility: false, logLevel: 'info', ...spec },
  status,
});
const inProgress = (status: 'True' | 'False', reason: string, message: string) => [
  { type: 'InProgress', status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' },
];

describe('rollout progress shared by the CLI and the console', () => {
  test('the uninstall count remembers the most nodes seen left', () => {
    assert.equal(leftToUninstall({ uninstalling: ['a'], waitingToUninstall: ['b', 'c'], failedToUninstall: ['d'], installed: ['e'] }), 4);
    assert.deepEqual(uninstallProgress(4, 0), { done: 0, total: 4, left: 4 });
    assert.deepEqual(uninstallProgress(1, 4), { done: 3, total: 4, left: 1 });
  });

  test('the console keeps a tile for each node that finished uninstalling, and counts it', () => {
    const seen = new Set<string>();
    const all = ['worker-0', 'worker-1', 'worker-2'];
    const deleting = (uninstalling: string[], waiting: string[]) =>
      kataConfig(
        {},
        {
          conditions: inProgress('True', 'Uninstalling', messages.uninstalling('kata')),
          kataNodes: { nodeCount: 0, readyNodeCount: 0, uninstalling, waitingToUninstall: waiting },
        },
        true,
      );
    rememberUninstall(seen, deleting([], all).status?.kataNodes);
    const later = deleting(['worker-2'], []);
    rememberUninstall(seen, later.status?.kataNodes);
    const h = headlineOf(later, seen);
    assert.deepEqual([h.phase, h.done, h.total, h.unit], ['Uninstalling', 2, 3, 'uninstalled']);
    assert.deepEqual(
      tilesOf(later.status?.kataNodes, seen).map((t) => `${t.node}:${t.state}`),
      ['worker-0:uninstalled', 'worker-1:uninstalled', 'worker-2:uninstalling'],
    );
    // The CLI's bar, from the same computation.
    assert.match(renderStatus(summarize(later), { uninstallTotal: 3 }), /2\/3 nodes uninstalled/);
  });

  test('checkNodeEligibility with no eligible node: osc start prints the reason, osc status what to do, the console warns', () => {
    const kc = kataConfig(
      { checkNodeEligibility: true },
      { conditions: inProgress('True', 'Updating', messages.noEligibleNodes()), kataNodes: { nodeCount: 0, readyNodeCount: 0 } },
    );
    const s = summarize(kc);
    assert.equal(oneLine(s), `KataConfig example-kataconfig: Updating — 0/0 nodes ready — ${messages.noEligibleNodes()}`);
    assert.match(
      renderStatus(s),
      /What to do: Label the nodes that should run kata with feature\.node\.kubernetes\.io\/runtime\.kata=true/,
    );
    const h = headlineOf(kc, new Set());
    assert.equal(h.tone, 'warning');
    assert.match(h.deadEnd?.todo ?? '', /set checkNodeEligibility to false/);
  });

  test('a selector that matches no node is a dead end; peer pods ignore eligibility; progress is not one', () => {
    const base = { inProgress: 'True', reason: 'Installing', deletionRequested: false, nodeCount: 0, hasPoolSelector: false };
    assert.match(deadEndOf({ ...base, hasPoolSelector: true })?.todo ?? '', /change the selector/);
    assert.equal(deadEndOf({ ...base, checkNodeEligibility: true, enablePeerPods: true }), undefined);
    assert.equal(deadEndOf({ ...base, checkNodeEligibility: true, nodeCount: 2 }), undefined);
    assert.equal(deadEndOf({ ...base, checkNodeEligibility: true, deletionRequested: true }), undefined);
    const installing = summarize(
      kataConfig(
        {},
        { conditions: inProgress('True', 'Installing', messages.installing('kata')), kataNodes: { nodeCount: 2, readyNodeCount: 1 } },
      ),
    );
    assert.equal(installing.deadEnd, undefined);
    assert.equal(oneLine(installing), 'KataConfig example-kataconfig: Installing — 1/2 nodes ready');
  });

  test('the pool selector reads as an expression', () => {
    assert.equal(
      selectorText({
        matchLabels: { zone: 'a' },
        matchExpressions: [
          { key: 'custom-kata', operator: 'In', values: ['true'] },
          { key: 'gpu', operator: 'NotIn', values: ['a', 'b'] },
          { key: 'fast', operator: 'Exists', values: [] },
          { key: 'legacy', operator: 'DoesNotExist', values: [] },
        ],
      }),
      'zone=a, custom-kata in (true), gpu notin (a, b), fast, !legacy',
    );
  });
});
