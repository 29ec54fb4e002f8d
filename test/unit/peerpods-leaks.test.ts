import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CLUSTER_UID_TAG, deletionFailedConditionMessage, leakedVMDeletedMessage } from '../../src/api/podvm-leaks.ts';
import { type LeakInput, type PodVM, planLeakedVMs, podPartOfVMName, podVMNamePart } from '../../src/peerpods/leaks.ts';

const CLUSTER = '0b7c3a52-5d3e-4e7a-9d55-2f0c8b1f1a10';
const NOW = new Date('2026-11-25T12:00:00Z');
const GRACE = 10 * 60_000;
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();

/** A pod VM as the adaptor names it (podvm-<pod>-<sandbox>), for a pod name (default: some pod long gone). */
const vm = (id: string, pod = 'gone', ageMs = GRACE + 1, cluster = CLUSTER, sandbox = '3f9a0c1e'): PodVM => ({
  id,
  name: `podvm-${podVMNamePart(pod)}-${sandbox}`,
  createdAt: ago(ageMs),
  tags: { Name: `podvm-${podVMNamePart(pod)}-${sandbox}`, [CLUSTER_UID_TAG]: cluster },
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
        vms: [vm('i-1', 'web', 100 * GRACE)],
        pods: [{ namespace: 'app', name: 'web', uid: 'u1' }],
      }),
    );
    assert.deepEqual(plan, { delete: [], failed: [], young: [], owned: 1, unownedSince: new Map() });
  });

  test('a VM of a deleted pod past the grace period is deleted; a pod of that name in any namespace keeps it', () => {
    const plan = planLeakedVMs(
      input({
        vms: [
          vm('i-gone', 'gone'),
          vm('i-web', 'web', GRACE + 1, CLUSTER, 'aaaaaaaa'),
          vm('i-web2', 'web', GRACE + 1, CLUSTER, 'bbbbbbbb'),
        ],
        pods: [{ namespace: 'other', name: 'web', uid: 'u-new' }],
      }),
    );
    assert.deepEqual(ids(plan.delete), ['i-gone']);
    // The adaptor's name holds no namespace: a pod of the same name anywhere may be the VM's owner.
    assert.equal(plan.owned, 2);
  });

  test("the adaptor's pod VM names: sanitized, cut to fit 63 characters, and read back", () => {
    assert.equal(podVMNamePart('Web.Frontend_1'), 'web-frontend-1');
    const long = 'a'.repeat(80);
    const name = `podvm-${podVMNamePart(long)}-0123abcd`;
    assert.equal(name.length, 63);
    assert.equal(podPartOfVMName(name), 'a'.repeat(48));
    assert.equal(podPartOfVMName('podvm-web-2-9f8e7d6c'), 'web-2');
    for (const other of ['web-1', 'podvm-', 'podvm-x', 'worker-0', 'podvm-web-short'])
      assert.equal(podPartOfVMName(other), undefined, other);
    // A pod whose long name was cut still owns its VM.
    const plan = planLeakedVMs(input({ vms: [{ ...vm('i-long'), name }], pods: [{ namespace: 'a', name: long, uid: 'u' }] }));
    assert.equal(plan.owned, 1);
  });

  test('a VM tagged with the cluster but not named as the adaptor names pod VMs is never touched', () => {
    const plan = planLeakedVMs(
      input({
        vms: [
          { ...vm('i-node'), name: 'cluster-worker-0' },
          { ...vm('i-anon'), name: '' },
        ],
      }),
    );
    assert.deepEqual(plan, { delete: [], failed: [], young: [], owned: 0, unownedSince: new Map() });
  });

  test('a VM within the grace period (a create in flight) is left, and the plan says when to look again', () => {
    const plan = planLeakedVMs(input({ vms: [vm('i-young', 'new', GRACE - 60_000), vm('i-younger', 'newer', 1000)] }));
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(ids(plan.young), ['i-young', 'i-younger']);
    assert.equal(plan.requeueAfterMs, 60_000);
  });

  test('an old VM first seen without its pod now (the adaptor may be deleting it) waits a grace period', () => {
    const old = vm('i-old', 'web', 100 * GRACE);
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
    assert.deepEqual(ids(planLeakedVMs(input({ vms: [vm('i-1', 'gone', GRACE)] })).delete), ['i-1']);
  });

  test('a VM without a readable creation time is never deleted on a guess', () => {
    const plan = planLeakedVMs(input({ vms: [{ ...vm('i-1'), createdAt: 'yesterday' }] }));
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(ids(plan.young), ['i-1']);
  });

  test("another cluster's VMs are never considered", () => {
    const plan = planLeakedVMs(input({ vms: [vm('i-other', 'gone', 100 * GRACE, 'another-cluster'), vm('i-ours')] }));
    assert.deepEqual(ids(plan.delete), ['i-ours']);
    const untagged = { ...vm('i-x', 'gone', 100 * GRACE), tags: { Name: 'podvm-gone-3f9a0c1e' } };
    assert.deepEqual(planLeakedVMs(input({ vms: [untagged] })).delete, []);
  });

  test('a failed deletion is not retried until peer-pods-cm or peer-pods-secret changes', () => {
    const failures = [{ id: 'i-1', error: 'UnauthorizedOperation', inputs: 'digest-1' }];
    const held = planLeakedVMs(input({ vms: [vm('i-1')], failures }));
    assert.deepEqual(held.delete, []);
    assert.deepEqual(held.failed, failures);
    const retried = planLeakedVMs(input({ vms: [vm('i-1')], failures, inputs: 'digest-2' }));
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
    assert.equal(
      leakedVMDeletedMessage('i-1', 'podvm-web-3f9a0c1e', 700),
      'deleted pod VM i-1, made for a pod named web 700s ago, which no peer pod uses any more',
    );
  });
});
