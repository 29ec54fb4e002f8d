/**
 * Durations are measured on the monotonic clock: a step of the wall clock (an NTP correction, a VM resumed,
 * an administrator's `date -s`) neither ends nor stretches a wait. Each test steps Date.now by an hour and
 * checks that the wait is as long as it was going to be.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { CLUSTER_UID_TAG } from '../../src/api/podvm-leaks.ts';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { planLeakedVMs } from '../../src/peerpods/leaks.ts';
import { Applier } from '../../src/runtime/applier.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { TokenBucket } from '../../src/runtime/queue.ts';
import { TTLCache } from '../../src/runtime/ttlcache.ts';
import { openUntilAborted } from '../support/fake-client.ts';

const HOUR = 3_600_000;
const realNow = Date.now;
let offset = 0;
/** Moves the wall clock (Date.now) by `ms` from here on; code that took Date.now as its clock sees it too. */
const stepWallClock = (ms: number) => {
  offset += ms;
};
beforeEach(() => {
  offset = 0;
  Date.now = () => realNow() + offset;
});
afterEach(() => {
  Date.now = realNow;
});

const Things: ResourceType = { group: 'example.com', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };

describe('a step of the wall clock', () => {
  test("does not end the applier's wait for a write its cache has not shown", async () => {
    let rv = 10;
    const client = {
      patch: async (_rt: ResourceType, name: string, body: KubeObject) => ({
        ...body,
        metadata: { ...body.metadata, name, uid: 'u1', resourceVersion: String(++rv) },
      }),
    } as unknown as KubeClient;
    const applier = new Applier({ client, fieldManager: 'test' });
    applier.watch(Things, { addEventHandler: () => {} });
    const cached = { metadata: { name: 'one', namespace: 'ns', uid: 'u1', resourceVersion: '10' } };
    const w = { op: 'apply' as const, resource: Things, object: { metadata: { name: 'one', namespace: 'ns' }, data: { a: '1' } } };
    assert.equal(await applier.write(w, cached), 'written');
    stepWallClock(HOUR);
    assert.equal(applier.awaits(Things, 'one', 'ns', cached), true, 'still awaited: only seconds have passed');
    assert.equal(await applier.write(w, cached), 'awaited', 'the same write is not made again');
  });

  test('does not make a healthy watch look silent while work is under way', async () => {
    let watches = 0;
    const client = {
      list: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
      // A healthy watch of a quiet kind: open, nothing to say, until it is ended.
      watch: (_rt: unknown, opts: { signal: AbortSignal }) => {
        watches++;
        return openUntilAborted(opts.signal);
      },
    } as unknown as KubeClient;
    const inf = new Informer(client, Things, {
      watchTimeoutSeconds: 600,
      quietWhileBusy: { busy: () => true, afterMs: 2000 },
      backoff: { initialMs: 100, maxMs: 500 },
    });
    const ac = new AbortController();
    const run = inf.run(ac.signal);
    await inf.waitForSync();
    await new Promise((r) => setTimeout(r, 50));
    stepWallClock(HOUR);
    // The silence check runs every afterMs / 4: a second sees it twice, both well inside the 2 s limit.
    await new Promise((r) => setTimeout(r, 1100));
    ac.abort();
    await run;
    assert.equal(watches, 1, 'the watch was never restarted');
  });

  test("stepped back, does not make the work queue's retry bucket wait for an hour", () => {
    const bucket = new TokenBucket({ qps: 10, burst: 1 });
    assert.equal(bucket.reserve(), 0);
    stepWallClock(-HOUR);
    assert.ok(bucket.reserve() <= 100, "at most one token's wait");
  });

  test('does not expire (or keep) a cached answer of the metrics authorizer', () => {
    const cache = new TTLCache<string>(10);
    cache.put('token', 'alice', 60_000);
    stepWallClock(HOUR);
    assert.equal(cache.fresh('token'), 'alice');
  });

  test('does not age a pod VM seen without its pod past the grace period (it may be a create in flight)', () => {
    const grace = 10 * 60_000;
    const now = new Date('2026-11-25T12:00:00Z');
    // Made a minute ago, its pod not cached yet; first seen so at elapsed 5,000 ms.
    const vm = {
      id: 'i-new',
      name: 'podvm-web-0a1b2c3d',
      createdAt: new Date(now.getTime() - 60_000).toISOString(),
      tags: { [CLUSTER_UID_TAG]: 'c1' },
    };
    const base = { clusterUID: 'c1', vms: [vm], pods: [], graceMs: grace, failures: [], inputs: 'd' };
    const first = planLeakedVMs({ ...base, now, elapsedMs: 5_000, unownedSince: new Map() });
    assert.deepEqual(first.delete, []);
    // The wall clock jumps an hour ahead; a second later, the same VM: still within its grace period.
    const second = planLeakedVMs({ ...base, now: new Date(now.getTime() + HOUR), elapsedMs: 6_000, unownedSince: first.unownedSince });
    assert.deepEqual(second.delete, [], 'not deleted: it has been seen without a pod for a second');
    assert.equal(second.young.length, 1);
  });
});
