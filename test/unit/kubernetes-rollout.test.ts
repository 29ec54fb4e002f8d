import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InstallerPodView, NodeObservation } from '../../src/platform/kubernetes/observe.ts';
import {
  LABEL_LOST_GRACE_MS,
  type NodeMemory,
  planRollout,
  type RolloutInput,
  type StopMark,
} from '../../src/platform/kubernetes/rollout.ts';

const T = 'target000000';
const A = 'previous0000';
const NOW = new Date('2026-11-22T21:00:00Z');
const ago = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString();

const pod = (name: string, config: string, opts: Partial<InstallerPodView> = {}): InstallerPodView => ({
  name,
  config,
  terminating: false,
  ready: false,
  ...opts,
});

function obs(name: string, opts: Partial<NodeObservation> = {}): NodeObservation {
  return { name, pods: [], ...opts };
}

function input(observations: NodeObservation[], over: Partial<RolloutInput> = {}): RolloutInput {
  return {
    observations,
    memory: new Map(),
    selected: new Set(observations.map((o) => o.name)),
    target: T,
    daemonSet: { config: T, observed: true },
    generation: 1,
    maxUnavailable: 1,
    deadlineMs: 600_000,
    now: NOW,
    ...over,
  };
}

/** A node kata-deploy finished on: its pod of `config` is Ready and it carries kata-runtime=true. */
const installed = (name: string, config: string) =>
  obs(name, { installLabel: config, kataRuntime: 'true', pods: [pod(`ds-${name}`, config, { ready: true })] });

describe('kubernetes rollout: install', () => {
  test('one node at a time, in name order (worker-2 before worker-10)', () => {
    const plan = planRollout(input([obs('worker-10'), obs('worker-2'), obs('worker-1')]));
    assert.deepEqual(plan.labels, [{ node: 'worker-1', value: T }]);
    assert.deepEqual(
      plan.nodes.map((n) => [n.name, n.phase]),
      [
        ['worker-1', 'Installing'],
        ['worker-2', 'WaitingToInstall'],
        ['worker-10', 'WaitingToInstall'],
      ],
    );
    assert.equal(plan.template, T);
  });

  test("an installer Ready on a node that lost kata-deploy's label (an etcd restore took it back) is run again after a grace", () => {
    const mem = new Map<string, NodeMemory>([['a', { assigned: T, since: ago(120) }]]);
    const lost = (readyAgo: number) => obs('a', { installLabel: T, pods: [pod('p', T, { ready: true, readySince: ago(readyAgo) })] });
    // Ready long ago, no label now: the install it reported was taken back; its pod goes, the DaemonSet makes another.
    const plan = planRollout(input([lost(100)], { memory: mem }));
    assert.deepEqual(plan.deletePods, ['p']);
    assert.equal(plan.nodes[0]?.phase, 'Installing');
    // Ready a moment ago: the label may just not have reached the cache; looked at again when the grace ends.
    const fresh = planRollout(input([lost(5)], { memory: mem }));
    assert.deepEqual(fresh.deletePods, []);
    assert.equal(fresh.nextDeadlineMs, LABEL_LOST_GRACE_MS - 5000);
    // Not while the template carries another configuration (a rollback's pod would come back wrong).
    assert.deepEqual(planRollout(input([lost(100)], { memory: mem, daemonSet: { config: A, observed: true } })).deletePods, []);
    // Labelled: installed, nothing deleted.
    assert.deepEqual(planRollout(input([installed('a', T)], { memory: mem })).deletePods, []);
  });

  test('maxUnavailable 2 starts two nodes', () => {
    const plan = planRollout(input([obs('a'), obs('b'), obs('c')], { maxUnavailable: 2 }));
    assert.deepEqual(
      plan.labels.map((l) => l.node),
      ['a', 'b'],
    );
  });

  test('nothing starts before the DaemonSet controller has seen the template with the target', () => {
    assert.deepEqual(planRollout(input([obs('a')], { daemonSet: { config: A, observed: true } })).labels, []);
    assert.deepEqual(planRollout(input([obs('a')], { daemonSet: { config: T, observed: false } })).labels, []);
    assert.deepEqual(planRollout(input([obs('a')], { daemonSet: { observed: false } })).template, T);
  });

  test('a node is installed only when its pod of the target is Ready and kata-deploy labelled it', () => {
    const claimed = obs('a', { installLabel: T, kataRuntime: 'false', pods: [pod('p', T, { ready: true })] });
    const notReady = obs('b', { installLabel: T, kataRuntime: 'true', pods: [pod('q', T)] });
    const plan = planRollout(input([claimed, notReady], { maxUnavailable: 5 }));
    assert.deepEqual(
      plan.nodes.map((n) => n.phase),
      ['Installing', 'Installing'],
    );
    const done = planRollout(input([installed('a', T), obs('b')]));
    assert.equal(done.nodes[0]?.phase, 'Installed');
    assert.equal(done.nodes[0]?.active, T);
    assert.deepEqual(done.labels, [{ node: 'b', value: T }], 'the next node starts once the first reported');
  });

  test('a configuration change replaces the pod in place: the label changes and the old pod goes', () => {
    const plan = planRollout(input([installed('a', A), installed('b', A)]));
    assert.deepEqual(plan.labels, [{ node: 'a', value: T }]);
    assert.deepEqual(plan.deletePods, ['ds-a']);
    assert.deepEqual(
      plan.nodes.map((n) => [n.name, n.phase, n.active]),
      [
        ['a', 'Installing', A],
        ['b', 'WaitingToInstall', A],
      ],
    );
  });

  test('a node given an older configuration whose pod never came is given the target in its turn', () => {
    // a was assigned A, then the spec changed before the DaemonSet made its pod: its pod runs T.
    const a = obs('a', { installLabel: A, kataRuntime: 'false', pods: [pod('ds-a', T)] });
    const plan = planRollout(input([a, obs('b')], { memory: new Map([['a', { assigned: A, since: ago(5) }]]) }));
    assert.deepEqual(plan.labels, [{ node: 'a', value: T }]);
    assert.deepEqual(plan.deletePods, [], 'its pod already runs the target');
  });

  test('a node that left the selection has kata taken off, as part of the same one-at-a-time budget', () => {
    const plan = planRollout(input([installed('a', T), installed('b', T)], { selected: new Set(['a']) }));
    assert.deepEqual(plan.labels, [{ node: 'b', value: null }]);
    assert.equal(plan.nodes[1]?.phase, 'Uninstalling');
  });
});

describe('kubernetes rollout: failure', () => {
  const failing = (name: string, lkg?: string) => {
    const memory = new Map<string, NodeMemory>([[name, { assigned: T, active: lkg, lastKnownGood: lkg, since: ago(10) }]]);
    const o = obs(name, {
      installLabel: T,
      kataRuntime: lkg ? 'true' : 'false',
      pods: [pod(`ds-${name}`, T, { failure: 'Runtime cri-o is not supported' })],
    });
    return { memory, o };
  };

  test('without a last known good configuration the node is cleaned, says why, and the rollout stops', () => {
    const { memory, o } = failing('a');
    const plan = planRollout(input([o, obs('b')], { memory }));
    assert.deepEqual(plan.labels, [{ node: 'a', value: null }], 'kata leaves a; b is not touched');
    assert.equal(plan.nodes[0]?.phase, 'FailedToInstall');
    assert.equal(plan.nodes[0]?.error, 'Runtime cri-o is not supported');
    assert.equal(plan.nodes[0]?.assigned, undefined);
    assert.equal(plan.nodes[1]?.phase, 'WaitingToInstall');
    assert.deepEqual(plan.stopped, { generation: 1, failures: { a: 'Runtime cri-o is not supported' } });
  });

  test('with one, the node goes back to it: label, then the template, then the failed pod', () => {
    const { memory, o } = failing('a', A);
    const first = planRollout(input([o, installed('b', A)], { memory }));
    assert.deepEqual(first.labels, [{ node: 'a', value: A }]);
    assert.equal(first.template, A, 'the template carries the rollback configuration');
    assert.deepEqual(first.deletePods, [], 'the failed pod stays until the DaemonSet carries the rollback configuration');
    assert.equal(first.nodes[0]?.phase, 'FailedToInstall');
    assert.equal(first.nodes[0]?.assigned, A);
    assert.equal(first.nodes[0]?.active, A);

    // Next pass: the label says A, the DaemonSet controller has seen the template of A.
    const stopped = first.stopped as StopMark;
    const memory2 = new Map<string, NodeMemory>([['a', { assigned: A, active: A, lastKnownGood: A, since: ago(1) }]]);
    const o2 = { ...o, installLabel: A };
    const second = planRollout(input([o2, installed('b', A)], { memory: memory2, daemonSet: { config: A, observed: true, stopped } }));
    assert.deepEqual(second.deletePods, ['ds-a']);
    assert.deepEqual(second.labels, [], 'the rollout stays stopped: b keeps A');
    assert.equal(second.nodes[0]?.error, 'Runtime cri-o is not supported');

    // Rolled back: A's pod is Ready again. Still Failed (the spec has not changed), active == lastKnownGood.
    const third = planRollout(
      input([installed('a', A), installed('b', A)], { memory: memory2, daemonSet: { config: A, observed: true, stopped } }),
    );
    assert.equal(third.nodes[0]?.phase, 'FailedToInstall');
    assert.equal(third.nodes[0]?.active, A);
    assert.deepEqual(third.labels, []);
    assert.equal(third.template, T, 'nothing needs A any more: the template returns to the target');
  });

  test('an installer that does not report within the deadline fails its node', () => {
    const memory = new Map<string, NodeMemory>([['a', { assigned: T, since: ago(601) }]]);
    const plan = planRollout(input([obs('a', { installLabel: T, pods: [pod('p', T)] })], { memory }));
    assert.equal(plan.nodes[0]?.error, 'kata-deploy did not report the installation within 600s');
    const early = planRollout(
      input([obs('a', { installLabel: T, pods: [pod('p', T)] })], { memory: new Map([['a', { assigned: T, since: ago(100) }]]) }),
    );
    assert.equal(early.nodes[0]?.phase, 'Installing');
    assert.equal(early.nextDeadlineMs, 500_000);
  });

  test('a spec change (a later generation) resumes the rollout', () => {
    const stopped: StopMark = { generation: 1, failures: { a: 'boom' } };
    const nodes = [obs('a'), obs('b')];
    const still = planRollout(input(nodes, { daemonSet: { config: T, observed: true, stopped } }));
    assert.deepEqual(still.labels, []);
    assert.equal(still.nodes[0]?.phase, 'FailedToInstall');
    const resumed = planRollout(input(nodes, { generation: 2, daemonSet: { config: T, observed: true, stopped } }));
    assert.deepEqual(resumed.labels, [{ node: 'a', value: T }]);
    assert.equal(resumed.stopped, undefined);
    assert.equal(resumed.nodes[0]?.error, '');
  });

  test('the failed node leaving the cluster resumes it too', () => {
    const stopped: StopMark = { generation: 1, failures: { gone: 'boom' } };
    const plan = planRollout(input([obs('a')], { daemonSet: { config: T, observed: true, stopped } }));
    assert.deepEqual(plan.labels, [{ node: 'a', value: T }]);
  });
});

describe('kubernetes rollout: uninstall', () => {
  test('nodes leave one at a time: WaitingToUninstall, Uninstalling, then gone', () => {
    const nodes = [installed('a', T), installed('b', T)];
    const first = planRollout(input(nodes, { selected: new Set() }));
    assert.deepEqual(first.labels, [{ node: 'a', value: null }]);
    assert.deepEqual(
      first.nodes.map((n) => [n.name, n.phase]),
      [
        ['a', 'Uninstalling'],
        ['b', 'WaitingToUninstall'],
      ],
    );
    // a's pod is terminating (kata-deploy cleans up): b waits.
    const cleaning = obs('a', { kataRuntime: 'true', pods: [pod('ds-a', T, { terminating: true, ready: true })] });
    const second = planRollout(input([cleaning, installed('b', T)], { selected: new Set() }));
    assert.deepEqual(second.labels, []);
    // a is clean: no record; b goes.
    const third = planRollout(input([obs('a'), installed('b', T)], { selected: new Set() }));
    assert.deepEqual(
      third.nodes.map((n) => n.name),
      ['b'],
    );
    assert.deepEqual(third.labels, [{ node: 'b', value: null }]);
    assert.deepEqual(planRollout(input([obs('a'), obs('b')], { selected: new Set() })).nodes, []);
  });

  test('a cleanup that does not finish within the deadline fails the node', () => {
    const memory = new Map<string, NodeMemory>([['a', { since: ago(700) }]]);
    const cleaning = obs('a', { kataRuntime: 'true', pods: [pod('ds-a', T, { terminating: true })] });
    const plan = planRollout(input([cleaning], { selected: new Set(), memory }));
    assert.equal(plan.nodes[0]?.phase, 'FailedToUninstall');
    assert.equal(plan.nodes[0]?.error, 'kata-deploy did not clean up within 600s');
  });
});

describe('kubernetes rollout: fail, clear and touch in every order', () => {
  // info (A) installed everywhere; debug (T) failed on a, which had no last known good: kata-deploy's failed
  // install exited, so removing a's label deleted its pod without a cleanup and kata-runtime stayed.
  const failedAndCleaned = obs('a', { kataRuntime: 'true' });
  const stoppedOnA = (generation: number): StopMark => ({ generation, failures: { a: 'disk full' } });

  test('the spec back to the configuration a failed node still runs: the node is given it again (issue 25)', () => {
    const memory = new Map<string, NodeMemory>([['a', { active: A, since: ago(30) }]]);
    const plan = planRollout(
      input([failedAndCleaned, installed('b', A)], {
        memory,
        target: A,
        generation: 3,
        daemonSet: { config: A, observed: true, stopped: stoppedOnA(2) },
      }),
    );
    assert.deepEqual(plan.labels, [{ node: 'a', value: A }], 'a is not waiting for a cleanup that will never come');
    assert.equal(plan.stopped, undefined);
    assert.equal(plan.nodes[0]?.phase, 'Installing');
  });

  test('touching the spec to a new configuration: the cleaned node takes it first', () => {
    const memory = new Map<string, NodeMemory>([['a', { active: A, since: ago(30) }]]);
    const plan = planRollout(
      input([failedAndCleaned, installed('b', A)], {
        memory,
        generation: 3,
        daemonSet: { config: T, observed: true, stopped: stoppedOnA(2) },
      }),
    );
    assert.deepEqual(plan.labels, [{ node: 'a', value: T }]);
  });

  test('while the rollout stays stopped the failed node is not touched, and nothing else is', () => {
    const memory = new Map<string, NodeMemory>([['a', { active: A, since: ago(30) }]]);
    const plan = planRollout(
      input([failedAndCleaned, installed('b', A)], {
        memory,
        generation: 2,
        daemonSet: { config: T, observed: true, stopped: stoppedOnA(2) },
      }),
    );
    assert.deepEqual(plan.labels, []);
    assert.equal(plan.nodes[0]?.phase, 'FailedToInstall');
    assert.equal(plan.nodes[0]?.error, 'disk full');
  });

  test('a selected node waiting its turn with kata-runtime left on it does not fail a cleanup deadline', () => {
    const memory = new Map<string, NodeMemory>([['b', { active: A, since: ago(3600) }]]);
    const installing = obs('a', { installLabel: T, kataRuntime: 'false', pods: [pod('ds-a', T)] });
    const plan = planRollout(
      input([installing, obs('b', { kataRuntime: 'true' })], { memory: new Map([...memory, ['a', { assigned: T, since: ago(5) }]]) }),
    );
    assert.deepEqual(plan.labels, [], 'a is in flight');
    assert.deepEqual(
      plan.nodes.map((n) => [n.name, n.phase, n.error]),
      [
        ['a', 'Installing', ''],
        ['b', 'WaitingToInstall', ''],
      ],
    );
    assert.equal(plan.nextDeadlineMs, 595_000, "only a's installer has a deadline");
  });

  test('a node rolled back to the configuration the spec returns to is done at once', () => {
    // a failed on T and went back to A (its last known good); the spec returns to A.
    const memory = new Map<string, NodeMemory>([['a', { assigned: A, active: A, lastKnownGood: A, since: ago(30) }]]);
    const plan = planRollout(
      input([installed('a', A), installed('b', A)], {
        memory,
        target: A,
        generation: 3,
        daemonSet: { config: T, observed: true, stopped: stoppedOnA(2) },
      }),
    );
    assert.deepEqual(plan.labels, []);
    assert.deepEqual(
      plan.nodes.map((n) => [n.name, n.phase, n.error]),
      [
        ['a', 'Installed', ''],
        ['b', 'Installed', ''],
      ],
    );
    assert.equal(plan.template, A);
  });
  test('a spec change that overtakes a rollback: the installer that failed is replaced, not read as the new attempt', () => {
    // a failed on T and was given A back (its last known good); before its failed installer was replaced, the
    // spec changed to a configuration with the same id (logLevel debug, then trace): T again.
    const failedPod = pod('ds-a', T, { failure: 'disk full', created: ago(5) });
    const rolledBack = obs('a', { installLabel: A, kataRuntime: 'true', pods: [failedPod] });
    const memory = new Map<string, NodeMemory>([['a', { assigned: A, active: A, lastKnownGood: A, since: ago(1) }]]);
    const resumed = planRollout(
      input([rolledBack, installed('b', A)], { memory, generation: 3, daemonSet: { config: A, observed: true, stopped: stoppedOnA(2) } }),
    );
    assert.equal(resumed.stopped, undefined, 'the spec change resumes the rollout');
    assert.equal(resumed.template, T);

    // The DaemonSet carries T: a is given T, and the installer that failed on T goes with it.
    const given = planRollout(input([rolledBack, installed('b', A)], { memory, generation: 3, daemonSet: { config: T, observed: true } }));
    assert.deepEqual(given.labels, [{ node: 'a', value: T }]);
    assert.deepEqual(given.deletePods, ['ds-a']);

    // The node cache shows the assignment before the pod cache shows the deletion: still the old installer's failure.
    const later = new Date(NOW.getTime() + 250);
    const assigned = obs('a', { installLabel: T, kataRuntime: 'true', pods: [failedPod] });
    const memory2 = new Map<string, NodeMemory>([['a', { assigned: T, active: A, lastKnownGood: A, since: NOW.toISOString() }]]);
    const next = planRollout(
      input([assigned, installed('b', A)], { memory: memory2, generation: 3, now: later, daemonSet: { config: T, observed: true } }),
    );
    assert.deepEqual(
      next.nodes.map((n) => [n.name, n.phase, n.error]),
      [
        ['a', 'Installing', ''],
        ['b', 'WaitingToInstall', ''],
      ],
    );
    assert.equal(next.stopped, undefined, 'the rollout does not stop again on the old failure');
    assert.deepEqual(next.deletePods, ['ds-a'], 'the old installer is still to be replaced');

    // A failure of the installer made for this assignment still fails the node.
    const fresh = obs('a', {
      installLabel: T,
      kataRuntime: 'true',
      pods: [pod('ds-a2', T, { failure: 'disk full', created: later.toISOString() })],
    });
    const failed = planRollout(
      input([fresh, installed('b', A)], {
        memory: memory2,
        generation: 3,
        now: new Date(NOW.getTime() + 3000),
        daemonSet: { config: T, observed: true },
      }),
    );
    assert.equal(failed.nodes[0]?.phase, 'FailedToInstall');
    assert.deepEqual(failed.stopped, { generation: 3, failures: { a: 'disk full' } });
  });
});

describe('kubernetes rollout: kata left on a node with no installer to clean it', () => {
  // A failed install's crashed installer was deleted without its cleanup: kata-runtime stayed on a.
  const left = obs('a', { kataRuntime: 'true' });

  test('a node that should lose kata is given an installer again, so that taking it off cleans it', () => {
    const memory = new Map<string, NodeMemory>([['a', { active: A, since: ago(3600) }]]);
    const plan = planRollout(input([left, installed('b', T)], { selected: new Set(), memory, generation: 4 }));
    assert.deepEqual(plan.labels, [{ node: 'a', value: T }], 'a first, in name order; no cleanup deadline ran for it');
    assert.deepEqual(plan.remember, [{ node: 'a', memory: { since: NOW.toISOString(), active: A } }]);
    assert.equal(plan.nodes[0]?.error, '');

    // Its installer runs: once it reports, the label goes (and with it, kata-deploy cleans up); b waits.
    const reinstalled = new Map<string, NodeMemory>([['a', { assigned: T, active: A, since: ago(5) }]]);
    const installing = obs('a', { installLabel: T, kataRuntime: 'true', pods: [pod('ds-a', T)] });
    assert.deepEqual(planRollout(input([installing, installed('b', T)], { selected: new Set(), memory: reinstalled })).labels, []);
    const ready = planRollout(input([installed('a', T), installed('b', T)], { selected: new Set(), memory: reinstalled }));
    assert.deepEqual(ready.labels, [{ node: 'a', value: null }]);
  });

  test('kata is not taken off a node before its installer runs there', () => {
    const assigned = obs('a', { installLabel: T, kataRuntime: 'true' });
    const memory = new Map<string, NodeMemory>([['a', { assigned: T, since: ago(5) }]]);
    const plan = planRollout(input([assigned], { selected: new Set(), memory, maxUnavailable: 2 }));
    assert.deepEqual(plan.labels, []);
  });

  test('a node kata has left forgets the memory osc kept on it', () => {
    const memory = new Map<string, NodeMemory>([['a', { since: ago(30) }]]);
    const plan = planRollout(input([obs('a')], { selected: new Set(), memory }));
    assert.deepEqual(plan.remember, [{ node: 'a', memory: null }]);
    assert.deepEqual(plan.nodes, []);
  });
});
