import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, type KataConfigStatus, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { kataConfigStatusShare, kataStatusApply } from '../../src/controllers/kataconfig/state.ts';
import { ownConditions, peerPodsStatusShare } from '../../src/controllers/peerpods/desired.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { Condition } from '../../src/kube/types.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { applyStatusIfChanged } from '../../src/runtime/status.ts';

const T0 = '2026-01-01T00:00:00Z';
const cond = (type: string, status: 'True' | 'False', reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: T0,
});
const installing = cond('InProgress', 'True', 'Installing', messages.installing('kata-remote'));
const configValid = cond('PeerPodsConfigValid', 'True', 'Valid', 'The peer pods configuration is valid.');
const imageRunning = cond('PodVMImageJobRunning', 'True', 'ImageJobRunning', 'building');

/** A status as both controllers leave it: InProgress among the peer pods conditions. */
const shared: KataConfigStatus = {
  conditions: [configValid, installing, imageRunning],
  kataNodes: { nodeCount: 2, readyNodeCount: 1, installed: ['worker-0'], installing: ['worker-1'] },
  runtimeClasses: ['kata'],
};

describe('the KataConfig controller applies only its own status fields', () => {
  test('owned: InProgress, kataNodes, runtimeClasses, uninstallStarted; never a peer pods condition', () => {
    assert.deepEqual(kataConfigStatusShare.owned(shared), {
      conditions: [installing],
      kataNodes: shared.kataNodes,
      runtimeClasses: ['kata'],
    });
    assert.deepEqual(kataConfigStatusShare.owned(undefined), {});
  });

  test('a blocked uninstall: InProgress changes, kataNodes and runtimeClasses re-applied from the cache, nothing of peer pods', () => {
    const blocked = { status: 'False' as const, reason: 'BlockedByExistingKataPods' as const, message: messages.blocked(['kata']) };
    const now = new Date('2026-02-02T00:00:00Z');
    assert.deepEqual(kataStatusApply(shared, { inProgress: blocked }, now), {
      conditions: [{ type: 'InProgress', ...blocked, lastTransitionTime: '2026-02-02T00:00:00Z' }],
      kataNodes: shared.kataNodes,
      runtimeClasses: ['kata'],
    });
  });

  test('an uninstall under way: the signal is set, and stays set', () => {
    const uninstalling = { status: 'True' as const, reason: 'Uninstalling' as const, message: messages.uninstalling('kata') };
    const kataNodes = { nodeCount: 0, readyNodeCount: 0, waitingToUninstall: ['worker-0', 'worker-1'] };
    const first = kataStatusApply(shared, { inProgress: uninstalling, kataNodes, uninstallStarted: true });
    assert.deepEqual(first, {
      // Still True: the transition time stays.
      conditions: [{ type: 'InProgress', ...uninstalling, lastTransitionTime: T0 }],
      kataNodes,
      runtimeClasses: ['kata'],
      uninstallStarted: true,
    });
    const failed = { status: 'True' as const, reason: 'Failed' as const, message: messages.failed('worker-0', 'boom') };
    assert.equal(kataStatusApply(first, { inProgress: failed }).uninstallStarted, true);
  });

  test('runtimeClasses: absent keeps the cached list, empty removes it', () => {
    const state = { status: 'True' as const, reason: 'Updating' as const, message: messages.updating() };
    assert.deepEqual(kataStatusApply(shared, { inProgress: state }).runtimeClasses, ['kata']);
    assert.equal('runtimeClasses' in kataStatusApply(shared, { inProgress: state, runtimeClasses: [] }), false);
  });

  test('nothing changed: what it would apply equals what the cache shows of its fields', () => {
    const state = { status: 'True' as const, reason: 'Installing' as const, message: installing.message };
    assert.deepEqual(kataStatusApply(shared, { inProgress: state, kataNodes: shared.kataNodes }), kataConfigStatusShare.owned(shared));
  });
});

describe('the peer pods controller applies only its own conditions', () => {
  test('owned: its conditions in a fixed order, never InProgress, kataNodes or runtimeClasses', () => {
    assert.deepEqual(peerPodsStatusShare.owned(shared), { conditions: [configValid, imageRunning] });
    assert.deepEqual(peerPodsStatusShare.owned({ conditions: [installing], kataNodes: shared.kataNodes }), {});
    assert.deepEqual(ownConditions([imageRunning, installing, configValid]), [configValid, imageRunning]);
  });
});

/** Records the requests applyStatusIfChanged makes (a pure test: no API server involved). */
function recordingClient() {
  const calls: { name: string; body: unknown; opts: Record<string, unknown> }[] = [];
  const client = {
    patch: async (_rt: unknown, name: string, body: unknown, opts: Record<string, unknown>) => {
      calls.push({ name, body, opts });
      return body;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

describe('applyStatusIfChanged', () => {
  const kc: KataConfig = { metadata: { name: 'example-kataconfig', uid: 'u-1', resourceVersion: '42' }, status: shared };

  test('skips an apply that changes none of the fields the manager owns', async () => {
    const { client, calls } = recordingClient();
    const metrics = new RuntimeMetrics();
    // In another order, and with a field the manager does not own: still nothing to apply.
    const planned = { conditions: [imageRunning, installing, configValid], kataNodes: { nodeCount: 9, readyNodeCount: 9 } };
    assert.equal(await applyStatusIfChanged(client, KataConfigs, kc, planned, peerPodsStatusShare, metrics), undefined);
    assert.equal(calls.length, 0);
    const skipped = (await metrics.statusWrites.get()).values.find((v) => v.labels.result === 'skipped');
    assert.equal(skipped?.value, 1);
  });

  test('applies to the status subresource under its field manager, forced, with the UID and no resourceVersion', async () => {
    const { client, calls } = recordingClient();
    const metrics = new RuntimeMetrics();
    // The image condition goes; InProgress, not the peer pods controller's, is never applied by it.
    const planned = { conditions: [configValid, installing] };
    await applyStatusIfChanged(client, KataConfigs, kc, planned, peerPodsStatusShare, metrics);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]?.body, {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig', uid: 'u-1' },
      status: { conditions: [configValid] },
    });
    assert.equal(calls[0]?.name, 'example-kataconfig');
    const { type, subresource, fieldManager, force } = calls[0]?.opts ?? {};
    assert.deepEqual(
      { type, subresource, fieldManager, force },
      { type: 'apply', subresource: 'status', fieldManager: 'osc-peerpods', force: true },
    );
    const written = (await metrics.statusWrites.get()).values.find((v) => v.labels.result === 'written');
    assert.equal(written?.value, 1);
  });

  test('applies to the status subresource under its field manager, forced, with the UID and no resourceVersion', async () => {
    const { client, calls } = recordingClient();
    const planned = { conditions: [configValid] }; // the image condition goes
    await applyStatusIfChanged(client, KataConfigs, kc, planned, peerPodsStatusShare);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]?.body, {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig', uid: 'u-1' },
      status: { conditions: [configValid] },
    });
    assert.equal(calls[0]?.name, 'example-kataconfig');
    assert.deepEqual(
      {
        type: calls[0]?.opts.type,
        subresource: calls[0]?.opts.subresource,
        fieldManager: calls[0]?.opts.fieldManager,
        force: calls[0]?.opts.force,
      },
      { type: 'apply', subresource: 'status', fieldManager: 'osc-peerpods', force: true },
    );
  });
});
