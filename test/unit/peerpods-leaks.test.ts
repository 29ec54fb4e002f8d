import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CLUSTER_UID_TAG,
  deletionFailedConditionMessage,
  POD_NAME_TAG,
  POD_NAMESPACE_TAG,
  POD_UID_TAG,
} from '../../src/api/podvm-leaks.ts';
import { type LeakInput, type PodVM, planLeakedVMs } from '../../src/peerpods/leaks.ts';

const CLUSTER = '0b7c3a52-5d3e-4e7a-9d55-2f0c8b1f1a10';
const NOW = new Date('2026-11-25T12:00:00Z');
const GRACE = 10 * 60_000;
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();

const vm = (id: string, pod: { ns?: string; name?: string; uid?: string }, ageMs = GRACE + 1, cluster = CLUSTER): PodVM => ({
  id,
  createdAt: ago(ageMs),
  tags: {
    [CLUSTER_UID_TAG]: cluster,
    ...(pod.ns ? { [POD_NAMESPACE_TAG]: pod.ns } : {}),
    ...(pod.name ? { [POD_NAME_TAG]: pod.name } : {}),
    ...(pod.uid ? { [POD_UID_TAG]: pod.uid } : {}),
  },
});

/** Unless a test says otherwise, every VM was already seen without a pod a grace period ago. */
const input = (over: Partial<LeakInput>): LeakInput => ({
  clusterUID: CLUSTER,
  vms: [],
  pods: [],
  now: NOW,
  graceMs: GRACE,
  failures: [],
  inputs: 'digest-1',
  unownedSince: new Map((over.vms ?? []).map((v) => [v.id, NOW.getTime() - GRACE])),
  ...over,
});

const ids = (vms: readonly { id: string }[]) => vms.map((v) => v.id).sort();

describe('leaked pod VMs: the plan', () => {
  test('a VM of a live pod is never touched, however old', () => {
    const plan = planLeakedVMs(
      input({
        vms: [vm('i-1', { ns: 'app', name: 'web', uid: 'u1' }, 100 * GRACE)],
        pods: [{ namespace: 'app', name: 'web', uid: 'u1' }],
      }),
    );
    assert.deepEqual(plan, { delete: [], failed: [], young: [], owned: 1, unownedSince: new Map() });
  });

  test('a VM of a deleted pod past the grace period is deleted, also when a new pod took the name', () => {
    const plan = planLeakedVMs(
      input({
        vms: [vm('i-old', { ns: 'app', name: 'web', uid: 'u-old' }), vm('i-new', { ns: 'app', name: 'web', uid: 'u-new' })],
        pods: [{ namespace: 'app', name: 'web', uid: 'u-new' }],
      }),
    );
    assert.deepEqual(ids(plan.delete), ['i-old']);
    assert.equal(plan.owned, 1);
  });

  test("without a UID tag, namespace/name decide; without any pod tag, the VM is nobody's", () => {
    const plan = planLeakedVMs(
      input({
        vms: [vm('i-named', { ns: 'app', name: 'web' }), vm('i-gone', { ns: 'app', name: 'gone' }), vm('i-bare', {})],
        pods: [{ namespace: 'app', name: 'web', uid: 'u1' }],
      }),
    );
    assert.deepEqual(ids(plan.delete), ['i-bare', 'i-gone']);
  });

  test('a VM within the grace period (a create in flight) is left, and the plan says when to look again', () => {
    const plan = planLeakedVMs(
      input({ vms: [vm('i-young', { ns: 'app', name: 'new', uid: 'u9' }, GRACE - 60_000), vm('i-younger', {}, 1000)] }),
    );
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(ids(plan.young), ['i-young', 'i-younger']);
    assert.equal(plan.requeueAfterMs, 60_000);
  });

  test('an old VM first seen without its pod now (the adaptor may be deleting it) waits a grace period', () => {
    const old = vm('i-old', { ns: 'app', name: 'web', uid: 'u1' }, 100 * GRACE);
    const first = planLeakedVMs(input({ vms: [old], unownedSince: new Map() }));
    assert.deepEqual(first.delete, []);
    assert.deepEqual(ids(first.young), ['i-old']);
    assert.equal(first.requeueAfterMs, GRACE);
    assert.deepEqual([...first.unownedSince], [['i-old', NOW.getTime()]]);
    const later = new Date(NOW.getTime() + GRACE);
    assert.deepEqual(ids(planLeakedVMs(input({ vms: [old], now: later, unownedSince: first.unownedSince })).delete), ['i-old']);
    // Owned again (its pod back in the cache): forgotten.
    const owned = planLeakedVMs(
      input({ vms: [old], pods: [{ namespace: 'app', name: 'web', uid: 'u1' }], unownedSince: first.unownedSince }),
    );
    assert.equal(owned.unownedSince.size, 0);
  });

  test('exactly at the grace period the VM is collected', () => {
    assert.deepEqual(ids(planLeakedVMs(input({ vms: [vm('i-1', {}, GRACE)] })).delete), ['i-1']);
  });

  test('a VM without a readable creation time is never deleted on a guess', () => {
    const plan = planLeakedVMs(input({ vms: [{ ...vm('i-1', {}), createdAt: 'yesterday' }] }));
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(ids(plan.young), ['i-1']);
  });

  test("another cluster's VMs are never considered", () => {
    const plan = planLeakedVMs(input({ vms: [vm('i-other', {}, 100 * GRACE, 'another-cluster'), vm('i-untagged', {})] }));
    assert.deepEqual(ids(plan.delete), ['i-untagged']);
    const untagged = { id: 'i-x', createdAt: ago(100 * GRACE), tags: {} };
    assert.deepEqual(planLeakedVMs(input({ vms: [untagged] })).delete, []);
  });

  test('a failed deletion is not retried until peer-pods-cm or peer-pods-secret changes', () => {
    const failures = [{ id: 'i-1', error: 'UnauthorizedOperation', inputs: 'digest-1' }];
    const held = planLeakedVMs(input({ vms: [vm('i-1', {})], failures }));
    assert.deepEqual(held.delete, []);
    assert.deepEqual(held.failed, failures);
    const retried = planLeakedVMs(input({ vms: [vm('i-1', {})], failures, inputs: 'digest-2' }));
    assert.deepEqual(ids(retried.delete), ['i-1']);
    assert.deepEqual(retried.failed, []);
    // Gone from the cloud (deleted by hand): nothing is reported any more.
    assert.deepEqual(planLeakedVMs(input({ vms: [], failures })).failed, []);
  });

  test('the condition message names each VM, its error and the ways out', () => {
    const msg = deletionFailedConditionMessage([
      { id: 'i-1', error: 'UnauthorizedOperation' },
      { id: 'i-2', error: 'throttled' },
    ]);
    assert.match(msg, /^2 leaked pod VM\(s\) could not be deleted: i-1 \(UnauthorizedOperation\); i-2 \(throttled\)\./);
    assert.match(msg, /peer-pods-secret/);
    assert.match(msg, /by hand/);
  });
});
