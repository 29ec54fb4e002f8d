/**
 * The simulated machine config daemon's next-step function and drain plan: the order of an update (pickup
 * delay, Working and cordoned, drained, rebooted, Done), disruption budgets, DaemonSet and mirror pods, and
 * the injected failure.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../../src/api/names.ts';
import {
  COMPLETION_SHOWN_WITHIN_MS,
  type DaemonObserved,
  type DaemonProgress,
  type DaemonStep,
  DEFAULT_FAILURE_REASON,
  daemonStep,
  FAIL_NEXT_UPDATE_ANNOTATION,
} from '../../src/devcluster/mco/daemon.ts';
import { drainSkips, planDrain } from '../../src/devcluster/mco/drain.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';

const OLD = 'rendered-worker-old';
const NEW = 'rendered-worker-new';
const timing = { pickupDelayMs: 500, rebootMs: 2000, drainRetryMs: 5000 };

function node(annotations: Record<string, string>, opts: { unschedulable?: boolean; deleted?: boolean } = {}): Node {
  return {
    metadata: { name: 'worker-0', annotations, ...(opts.deleted ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: opts.unschedulable ? { unschedulable: true } : {},
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

const handed = (extra: Record<string, string> = {}) =>
  node({ [MCO_CURRENT_CONFIG]: OLD, [MCO_DESIRED_CONFIG]: NEW, [MCO_STATE]: 'Done', [MCO_REASON]: '', ...extra });
const working = (extra: Record<string, string> = {}) =>
  node(
    { [MCO_CURRENT_CONFIG]: OLD, [MCO_DESIRED_CONFIG]: NEW, [MCO_STATE]: 'Working', [MCO_REASON]: '', ...extra },
    { unschedulable: true },
  );

function pod(name: string, opts: { owner?: string; mirror?: boolean; deleting?: boolean } = {}): Pod {
  return {
    metadata: {
      name,
      namespace: 'apps',
      uid: `uid-${name}`,
      ...(opts.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: opts.owner, name: 'x', uid: 'u', controller: true }] } : {}),
      ...(opts.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'abc' } } : {}),
      ...(opts.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { nodeName: 'worker-0', containers: [] },
  };
}

function observed(
  progress?: DaemonProgress,
  pods: Pod[] = [],
  retryAt = new Map<string, number>(),
  evicted = new Set<string>(),
): DaemonObserved {
  return { progress, pods, drain: { retryAt, evicted } };
}

const step = (n: Node | undefined, o: DaemonObserved, now: number): DaemonStep => daemonStep(n, o, now, timing);

describe('machine config daemon: next step', () => {
  test('a node on its desired config and Done: nothing to do', () => {
    const s = step(node({ [MCO_CURRENT_CONFIG]: OLD, [MCO_DESIRED_CONFIG]: OLD, [MCO_STATE]: 'Done' }), observed(), 0);
    assert.deepEqual(s, { action: { type: 'none' } });
    assert.deepEqual(step(undefined, observed(), 0), { action: { type: 'none' } });
    assert.deepEqual(
      step(node({}), observed(), 0),
      { action: { type: 'none' } },
      'no desiredConfig yet: the node controller has not initialised it',
    );
  });

  test('a new desiredConfig is picked up after the pickup delay, without writing anything first', () => {
    const first = step(handed(), observed(), 1000);
    assert.deepEqual(first, { action: { type: 'none' }, progress: { target: NEW, phase: 'noticed', since: 1000 }, requeueAfterMs: 500 });
    const early = step(handed(), observed(first.progress), 1200);
    assert.deepEqual(early.action, { type: 'none' });
    assert.equal(early.requeueAfterMs, 300);
    const picked = step(handed(), observed(first.progress), 1500);
    assert.deepEqual(picked, { action: { type: 'cordon' }, progress: { target: NEW, phase: 'draining', since: 1500 }, requeueAfterMs: 0 });
  });

  test('a full update: Working and cordoned, drained, NotReady for the reboot, Ready, then Done on the new config', () => {
    const actions: string[] = [];
    let progress: DaemonProgress | undefined;
    let n = handed();
    const pods = [pod('web'), pod('agent', { owner: 'DaemonSet' })];
    const retryAt = new Map<string, number>();
    const evicted = new Set<string>();
    let now = 0;
    for (let i = 0; i < 20; i++) {
      const s = step(n, observed(progress, pods, retryAt, evicted), now);
      progress = s.progress;
      actions.push(s.action.type === 'setReady' ? `setReady:${s.action.ready}` : s.action.type);
      // Carry the action out, as the executor and the API server would.
      if (s.action.type === 'cordon') n = working();
      if (s.action.type === 'evict') {
        assert.deepEqual(
          s.action.pods.map((p) => p.metadata.name),
          ['web'],
          'the DaemonSet pod stays',
        );
        evicted.add('uid-web');
      }
      if (s.action.type === 'none' && progress?.phase === 'draining') pods.splice(0, 1); // the evicted pod is gone
      if (s.action.type === 'complete') {
        assert.equal(s.action.config, NEW);
        assert.deepEqual(s.progress, { target: NEW, phase: 'completed', since: now }, 'remembered until the cache shows it');
        break;
      }
      now += s.requeueAfterMs ?? 0;
    }
    assert.deepEqual(actions, ['none', 'cordon', 'evict', 'none', 'setReady:false', 'setReady:true', 'complete']);
  });

  test('Done reported: a cache still showing the node Working on its old config is not an update to make again', () => {
    const completed: DaemonProgress = { target: NEW, phase: 'completed', since: 20_000 };
    // The cache from before the Done write: the node Working, desiredConfig NEW, currentConfig OLD.
    const stale = step(working(), observed(completed), 24_000);
    assert.deepEqual(stale, { action: { type: 'none' }, progress: completed, requeueAfterMs: COMPLETION_SHOWN_WITHIN_MS - 4_000 });
    // Shown: nothing under way, nothing to do.
    const shown = step(node({ [MCO_CURRENT_CONFIG]: NEW, [MCO_DESIRED_CONFIG]: NEW, [MCO_STATE]: 'Done' }), observed(completed), 24_500);
    assert.deepEqual(shown, { action: { type: 'none' } });
    // Never shown (the write taken back): past the bound the daemon goes by what the cache says.
    const lost = step(working(), observed(completed), 20_000 + COMPLETION_SHOWN_WITHIN_MS);
    assert.deepEqual(lost.progress, { target: NEW, phase: 'noticed', since: 20_000 + COMPLETION_SHOWN_WITHIN_MS });
  });

  test('the reboot lasts rebootMs, and finishes on the config it started with even if the target moved', () => {
    const rebooting: DaemonProgress = { target: NEW, phase: 'rebooting', since: 10_000 };
    const mid = step(working(), observed(rebooting), 11_000);
    assert.deepEqual(mid, { action: { type: 'none' }, progress: rebooting, requeueAfterMs: 1000 });
    const moved = working({ [MCO_DESIRED_CONFIG]: 'rendered-worker-newer' });
    const up = step(moved, observed(rebooting), 12_000);
    assert.deepEqual(up.action, { type: 'setReady', ready: true });
    assert.deepEqual(step(moved, observed(up.progress), 12_000).action, { type: 'complete', config: NEW });
  });

  test('a new target before anything was applied replaces the old one, keeping the drain under way', () => {
    const draining: DaemonProgress = { target: NEW, phase: 'draining', since: 5 };
    const newer = working({ [MCO_DESIRED_CONFIG]: 'rendered-worker-newer' });
    const s = step(newer, observed(draining, [pod('web')]), 10);
    assert.deepEqual(s.progress, { target: 'rendered-worker-newer', phase: 'draining', since: 5 });
    assert.equal(s.action.type, 'evict');
    const drained = step(newer, observed(draining), 10);
    assert.deepEqual(drained.progress, { target: 'rendered-worker-newer', phase: 'rebooting', since: 10 }, 'and reboots into the new one');
  });

  test('a node found Working with no record (the simulator restarted) goes through the update again', () => {
    const s = step(
      node({ [MCO_CURRENT_CONFIG]: NEW, [MCO_DESIRED_CONFIG]: NEW, [MCO_STATE]: 'Working' }, { unschedulable: true }),
      observed(),
      0,
    );
    assert.deepEqual(s.progress, { target: NEW, phase: 'noticed', since: 0 });
  });

  test('a disruption budget that refuses an eviction holds the drain until the retry time', () => {
    const draining: DaemonProgress = { target: NEW, phase: 'draining', since: 0 };
    const retryAt = new Map([['apps/web', 5000]]);
    const held = step(working(), observed(draining, [pod('web')], retryAt), 1000);
    assert.deepEqual(held.action, { type: 'none' });
    assert.equal(held.requeueAfterMs, 4000);
    assert.equal(held.progress?.phase, 'draining');
    const again = step(working(), observed(draining, [pod('web')], retryAt), 5000);
    assert.equal(again.action.type, 'evict');
  });

  test('evicted pods are waited for until they are gone; the wait is polled at most every drainRetryMs', () => {
    const draining: DaemonProgress = { target: NEW, phase: 'draining', since: 0 };
    const terminating = step(working(), observed(draining, [pod('web', { deleting: true })]), 0);
    assert.deepEqual(terminating, { action: { type: 'none' }, progress: draining, requeueAfterMs: 5000 });
    const accepted = step(working(), observed(draining, [pod('web')], new Map(), new Set(['uid-web'])), 0);
    assert.deepEqual(accepted.action, { type: 'none' }, 'an accepted eviction is not asked again');
  });

  test('an injected failure: drained, Working for rebootMs, then Degraded with the reason; staying cordoned', () => {
    const failing = working({ [FAIL_NEXT_UPDATE_ANNOTATION]: 'disk on fire' });
    const drained = step(failing, observed({ target: NEW, phase: 'draining', since: 0 }), 100);
    assert.deepEqual(drained, { action: { type: 'none' }, progress: { target: NEW, phase: 'failing', since: 100 }, requeueAfterMs: 2000 });
    assert.equal(step(failing, observed(drained.progress), 1000).action.type, 'none');
    assert.deepEqual(step(failing, observed(drained.progress), 2100), { action: { type: 'degrade', reason: 'disk on fire' } });
    const empty = working({ [FAIL_NEXT_UPDATE_ANNOTATION]: '' });
    assert.deepEqual(step(empty, observed(drained.progress), 2100).action, { type: 'degrade', reason: DEFAULT_FAILURE_REASON });
  });

  test('a Degraded node picks up a changed reason, and retries the update once the annotation is removed', () => {
    const degraded = (extra: Record<string, string>) =>
      node(
        { [MCO_CURRENT_CONFIG]: OLD, [MCO_DESIRED_CONFIG]: NEW, [MCO_STATE]: 'Degraded', [MCO_REASON]: 'disk on fire', ...extra },
        { unschedulable: true },
      );
    assert.deepEqual(step(degraded({ [FAIL_NEXT_UPDATE_ANNOTATION]: 'disk on fire' }), observed(), 0), { action: { type: 'none' } });
    assert.deepEqual(step(degraded({ [FAIL_NEXT_UPDATE_ANNOTATION]: 'no disk' }), observed(), 0), {
      action: { type: 'setReason', reason: 'no disk' },
    });
    assert.deepEqual(step(degraded({}), observed(), 0).progress, { target: NEW, phase: 'noticed', since: 0 });
  });

  test('the annotation removed while the failure is pending: the update goes on to the reboot', () => {
    const s = step(working(), observed({ target: NEW, phase: 'failing', since: 0 }), 10);
    assert.deepEqual(s, {
      action: { type: 'setReady', ready: false },
      progress: { target: NEW, phase: 'rebooting', since: 10 },
      requeueAfterMs: 2000,
    });
  });

  test('a failed node whose pool moved back to its current config is Done again without a reboot', () => {
    const back = node(
      { [MCO_CURRENT_CONFIG]: OLD, [MCO_DESIRED_CONFIG]: OLD, [MCO_STATE]: 'Degraded', [MCO_REASON]: 'x' },
      { unschedulable: true },
    );
    assert.deepEqual(step(back, observed(), 0), { action: { type: 'complete', config: OLD } });
  });
});

describe('drain plan', () => {
  test('DaemonSet and mirror pods stay; other pods, bare ones included, are evicted', () => {
    assert.equal(drainSkips(pod('a', { owner: 'DaemonSet' })), true);
    assert.equal(drainSkips(pod('b', { mirror: true })), true);
    assert.equal(drainSkips(pod('c', { owner: 'ReplicaSet' })), false);
    assert.equal(drainSkips(pod('d')), false);
    const plan = planDrain(
      [pod('a', { owner: 'DaemonSet' }), pod('b', { mirror: true }), pod('c', { owner: 'ReplicaSet' }), pod('d')],
      {
        retryAt: new Map(),
        evicted: new Set(),
      },
      0,
    );
    assert.deepEqual(
      plan.evict.map((p) => p.metadata.name),
      ['c', 'd'],
    );
    assert.equal(plan.waiting, 0);
  });

  test('pods being deleted or refused by a budget are waited for; the earliest retry is reported', () => {
    const plan = planDrain(
      [pod('a', { deleting: true }), pod('b'), pod('c'), pod('d')],
      {
        retryAt: new Map([
          ['apps/b', 300],
          ['apps/c', 200],
          ['apps/d', 50],
        ]),
        evicted: new Set(),
      },
      100,
    );
    assert.deepEqual(
      plan.evict.map((p) => p.metadata.name),
      ['d'],
    );
    assert.equal(plan.waiting, 3);
    assert.equal(plan.nextRetryAt, 200);
  });
});
