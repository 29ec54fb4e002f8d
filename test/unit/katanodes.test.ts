import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { KataNode } from '../../src/api/katanode.ts';
import { kataNodeStatus, planKataNodes } from '../../src/controllers/kataconfig/katanodes.ts';
import { classifyRecords } from '../../src/controllers/kataconfig/state.ts';
import type { NodeRecord } from '../../src/platform/platform.ts';

const A = { id: 'config-a', description: 'a' };
const B = { id: 'config-b', description: 'b' };
const T0 = new Date('2026-11-22T10:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const SOAK = 600_000;
const rec = (over: Partial<NodeRecord> = {}): NodeRecord => ({
  node: 'worker-0',
  phase: 'Installed',
  assigned: A,
  active: A,
  error: '',
  ...over,
});

describe('KataNode status from a record', () => {
  test('first seen: the record, with the time of this change and no lastKnownGood yet', () => {
    const { status, promoteAt } = kataNodeStatus(rec(), undefined, T0, SOAK);
    assert.deepEqual(status, { phase: 'Installed', assigned: A, active: A, error: '', lastTransitionTime: '2026-11-22T10:00:00Z' });
    assert.equal(promoteAt, T0.getTime() + SOAK, 'known good once the soak is over');
  });

  test('lastTransitionTime moves only on a real change; an unchanged record gives an identical status', () => {
    const first = kataNodeStatus(rec({ phase: 'Installing', active: B }), undefined, T0, SOAK).status;
    assert.deepEqual(kataNodeStatus(rec({ phase: 'Installing', active: B }), first, at(5000), SOAK).status, first);
    const moved = kataNodeStatus(rec(), first, at(5000), SOAK).status;
    assert.equal(moved.lastTransitionTime, '2026-11-22T10:00:05Z');
    const described = kataNodeStatus(rec({ phase: 'Installing', active: { ...B, description: 'reworded' } }), first, at(9000), SOAK).status;
    assert.equal(described.lastTransitionTime, first.lastTransitionTime, 'a new description of the same configuration is no transition');
  });

  test("a platform that keeps lastKnownGood itself has it reported as it is, the controller's soak aside", () => {
    const first = kataNodeStatus(rec({ lastKnownGood: null }), undefined, T0, SOAK);
    assert.equal(first.status.lastKnownGood, undefined);
    assert.equal(first.promoteAt, undefined, 'the platform says when it changes');
    const later = kataNodeStatus(rec({ lastKnownGood: null }), first.status, at(SOAK + 1), SOAK);
    assert.equal(later.status.lastKnownGood, undefined, 'not promoted by the soak');
    const kept = kataNodeStatus(
      rec({ phase: 'FailedToInstall', assigned: B, error: 'boom', lastKnownGood: A }),
      later.status,
      at(SOAK + 2),
      SOAK,
    );
    assert.deepEqual(kept.status.lastKnownGood, A);
  });

  test('lastKnownGood becomes assigned after the soak without error, and not before', () => {
    const first = kataNodeStatus(rec(), undefined, T0, SOAK).status;
    assert.equal(kataNodeStatus(rec(), first, at(SOAK - 1000), SOAK).status.lastKnownGood, undefined);
    const soaked = kataNodeStatus(rec(), first, at(SOAK), SOAK);
    assert.deepEqual(soaked.status.lastKnownGood, A);
    assert.equal(soaked.promoteAt, undefined);
    assert.equal(kataNodeStatus(rec(), soaked.status, at(SOAK + 1), SOAK).promoteAt, undefined, 'nothing more to wait for');
  });

  test('a failing or unfinished configuration never becomes known good; the previous one stays', () => {
    const good = { ...kataNodeStatus(rec(), undefined, T0, SOAK).status, lastKnownGood: A };
    const failing = rec({ phase: 'FailedToInstall', assigned: B, active: A, error: 'disk full' });
    const f = kataNodeStatus(failing, good, at(1000), SOAK);
    assert.deepEqual(f.status.lastKnownGood, A);
    assert.equal(kataNodeStatus(failing, f.status, at(10 * SOAK), SOAK).status.lastKnownGood, A);
    const waiting = rec({ phase: 'WaitingToInstall', assigned: B, active: A });
    assert.deepEqual(kataNodeStatus(waiting, good, at(10 * SOAK), SOAK).status.lastKnownGood, A, 'assigned is not active yet');
  });
});

describe('KataNode objects per pass', () => {
  const kc: KataConfig = { metadata: { name: 'example-kataconfig', uid: 'u1' } };
  const owner = {
    apiVersion: 'kataconfiguration.openshift.io/v1',
    kind: 'KataConfig',
    name: 'example-kataconfig',
    uid: 'u1',
    controller: true,
    blockOwnerDeletion: false,
  };
  const existing = (name: string, uid = 'u1'): KataNode => ({
    metadata: { name, ownerReferences: [{ ...owner, uid }] },
    status: kataNodeStatus(rec({ node: name }), undefined, T0, SOAK).status,
  });

  test('made for a new record (owned by the KataConfig), status only where it changed, deleted without a record', () => {
    const records = [rec({ node: 'worker-0' }), rec({ node: 'worker-1' }), rec({ node: 'worker-2', phase: 'Installing', active: B })];
    const plan = planKataNodes(kc, records, [existing('worker-0'), existing('worker-2'), existing('worker-9')], at(1000), SOAK);
    assert.deepEqual(
      plan.create.map((c) => [c.node, c.status.phase]),
      [[{ metadata: { name: 'worker-1', ownerReferences: [owner] } }, 'Installed']],
    );
    assert.deepEqual(
      plan.status.map((s) => [s.cached.metadata.name, s.status.phase, s.status.lastTransitionTime]),
      [['worker-2', 'Installing', '2026-11-22T10:00:01Z']],
      'worker-0 is unchanged: nothing to write',
    );
    assert.deepEqual(plan.adopt, []);
    assert.deepEqual(plan.delete, ['worker-9']);
  });

  test('one an earlier KataConfig made is adopted by the one in effect', () => {
    const plan = planKataNodes(kc, [rec()], [existing('worker-0', 'old')], at(1000), SOAK);
    assert.deepEqual(
      plan.adopt.map((k) => k.metadata.ownerReferences),
      [[owner]],
    );
  });

  test('a node waiting its turn with nothing new assigned gets no KataNode yet; given a configuration, it does', () => {
    const waiting = [
      rec({ node: 'worker-0', phase: 'WaitingToInstall', assigned: undefined, active: undefined }),
      // The Machine Config Operator's way: desiredConfig is the node's own configuration until its turn.
      rec({ node: 'worker-1', phase: 'WaitingToInstall', assigned: A, active: A }),
      rec({ node: 'worker-2', phase: 'WaitingToInstall', assigned: B, active: A }),
    ];
    const plan = planKataNodes(kc, waiting, [existing('worker-1')], at(1000), SOAK);
    assert.deepEqual(
      plan.create.map((c) => c.node.metadata.name),
      ['worker-2'],
    );
    assert.deepEqual(
      plan.status.map((s) => [s.cached.metadata.name, s.status.phase]),
      [['worker-1', 'WaitingToInstall']],
      'one that exists is kept up to date',
    );
  });

  test('a record and KataNode found with nothing to write are passed over until either changes', () => {
    const record = rec({ node: 'worker-0', lastKnownGood: A });
    const made = { ...existing('worker-0'), status: kataNodeStatus(record, undefined, T0, SOAK).status };
    assert.deepEqual(planKataNodes(kc, [record], [made], at(1000), SOAK).status, []);
    assert.deepEqual(planKataNodes(kc, [record], [made], at(2000), SOAK).status, []);
    const failed = rec({ node: 'worker-0', phase: 'FailedToInstall', error: 'boom', lastKnownGood: A });
    assert.deepEqual(
      planKataNodes(kc, [failed], [made], at(3000), SOAK).status.map((s) => s.status.phase),
      ['FailedToInstall'],
      'a new record is looked at',
    );
  });

  test('a transition a pending write already makes is planned as that write, with its time; another gets the time of the pass', () => {
    const waiting = rec({ node: 'worker-0', phase: 'WaitingToInstall', assigned: B, active: A });
    const cached: KataNode = { ...existing('worker-0'), status: kataNodeStatus(waiting, undefined, T0, SOAK).status };
    // A pass at 1 s planned worker-0 Installing; the write is on its way when the next pass comes at 2 s.
    const installing = rec({ node: 'worker-0', phase: 'Installing', assigned: B, active: A });
    const first = planKataNodes(kc, [installing], [cached], at(1000), SOAK).status[0]?.status;
    assert.equal(first?.lastTransitionTime, '2026-11-22T10:00:01Z');
    const pending = new Map([['worker-0', first as NonNullable<typeof first>]]);
    assert.deepEqual(
      planKataNodes(kc, [installing], [cached], at(2000), SOAK, pending).status.map((s) => s.status),
      [first],
      'the same write, not one that differs in lastTransitionTime alone',
    );
    // The node moved on before the write was made: a new transition, at the time of the pass.
    const installed = rec({ node: 'worker-0', phase: 'Installed', assigned: B, active: B });
    assert.deepEqual(
      planKataNodes(kc, [installed], [cached], at(3000), SOAK, pending).status.map((s) => [s.status.phase, s.status.lastTransitionTime]),
      [['Installed', '2026-11-22T10:00:03Z']],
    );
    // The node went back to what the cache shows: nothing to write, whatever was pending.
    assert.deepEqual(planKataNodes(kc, [waiting], [cached], at(3000), SOAK, pending).status, []);
  });

  test('the earliest pending promotion is reported, so the controller looks again then', () => {
    const plan = planKataNodes(kc, [rec({ node: 'worker-0' })], [existing('worker-0')], at(1000), SOAK);
    assert.equal(plan.promoteAt, T0.getTime() + SOAK);
  });
});

describe('platform-neutral classification over records', () => {
  test('each phase names its kataNodes list, in record order; failures carry the error', () => {
    const records: NodeRecord[] = [
      rec({ node: 'a', phase: 'Installed' }),
      rec({ node: 'b', phase: 'Installing' }),
      rec({ node: 'c', phase: 'FailedToInstall', error: 'disk full' }),
      rec({ node: 'd', phase: 'WaitingToUninstall' }),
      rec({ node: 'e', phase: 'FailedToUninstall', error: 'stuck' }),
    ];
    const c = classifyRecords(records, 3, true);
    assert.deepEqual(c.kataNodes, {
      nodeCount: 3,
      readyNodeCount: 1,
      installed: ['a'],
      installing: ['b'],
      failedToInstall: ['c'],
      waitingToUninstall: ['d'],
      failedToUninstall: ['e'],
    });
    assert.deepEqual(c.failures, [
      { node: 'c', reason: 'disk full' },
      { node: 'e', reason: 'stuck' },
    ]);
    assert.equal(c.settled, false);
  });

  test('settled: every selected node installed, nothing else listed, and the platform complete', () => {
    const installed = [rec({ node: 'a' }), rec({ node: 'b' })];
    assert.equal(classifyRecords(installed, 2, true).settled, true);
    assert.equal(classifyRecords(installed, 2, false).settled, false, 'the platform is not done');
    assert.equal(classifyRecords(installed, 3, true).settled, false, 'a selected node has no record yet');
    assert.equal(classifyRecords([], 0, false).settled, true, 'nothing selected, nothing moving');
    assert.deepEqual(classifyRecords([], 0, true).kataNodes, { nodeCount: 0, readyNodeCount: 0 });
  });
});
