import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { ApiError } from '../../src/kube/errors.ts';
import { CONFLICT_RETRY_MS, Controller, MAX_FAST_CONFLICT_RETRIES } from '../../src/runtime/controller.ts';
import { silentLogger } from '../../src/runtime/log.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';

const flush = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
};

describe('Controller', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  test('runs many workers but never two reconciles of the same key at once', async () => {
    const running = new Map<string, number>();
    let maxSameKey = 0;
    let maxTotal = 0;
    let total = 0;
    const calls: string[] = [];
    const release: (() => void)[] = [];
    const c = new Controller(
      {
        name: 'test',
        workers: 4,
        watches: [],
        reconcile: async (key) => {
          calls.push(key);
          running.set(key, (running.get(key) ?? 0) + 1);
          total++;
          maxSameKey = Math.max(maxSameKey, running.get(key) ?? 0);
          maxTotal = Math.max(maxTotal, total);
          await new Promise<void>((r) => release.push(r));
          running.set(key, (running.get(key) ?? 0) - 1);
          total--;
          return undefined;
        },
      },
      silentLogger(),
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    for (const k of ['a', 'b', 'a', 'c', 'a']) c.queue.add(k);
    await flush();
    assert.equal(maxTotal, 3, 'three distinct keys run in parallel');
    c.queue.add('a'); // arrives while 'a' runs
    c.queue.add('a');
    await flush();
    while (release.length) {
      release.shift()?.();
      await flush();
    }
    assert.equal(maxSameKey, 1);
    assert.deepEqual(calls.filter((k) => k === 'a').length, 2, "'a' ran once more for the adds made while it was running");
    ac.abort();
    await run;
  });

  test('retries a failing key with backoff, then forgets it after success', async () => {
    let attempts = 0;
    const metrics = new RuntimeMetrics(undefined, { processMetrics: false });
    const c = new Controller(
      {
        name: 'flaky',
        backoff: { baseDelayMs: 100, maxDelayMs: 10_000 },
        watches: [],
        reconcile: async () => {
          attempts++;
          if (attempts < 3) throw new Error('boom');
          return undefined;
        },
      },
      silentLogger(),
      metrics,
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('k');
    await flush();
    assert.equal(attempts, 1);
    mock.timers.tick(99);
    await flush();
    assert.equal(attempts, 1, 'first retry waits the base delay');
    mock.timers.tick(1);
    await flush();
    assert.equal(attempts, 2);
    mock.timers.tick(199);
    await flush();
    assert.equal(attempts, 2, 'second retry waits twice as long');
    mock.timers.tick(1);
    await flush();
    assert.equal(attempts, 3);
    assert.equal(c.queue.retries('k'), 0, 'success forgets the failures');
    const errors = await metrics.reconcileErrors.get();
    assert.equal(errors.values[0]?.value, 2);
    ac.abort();
    await run;
  });

  test('a 409 conflict is retried after a short fixed delay, without growing the backoff', async () => {
    let calls = 0;
    const c = new Controller(
      {
        name: 'conflicts',
        backoff: { baseDelayMs: 100, maxDelayMs: 10_000 },
        watches: [],
        reconcile: async () => {
          calls++;
          if (calls <= 5) throw new ApiError(409, 'Conflict', 'the object has been modified');
          return undefined;
        },
      },
      silentLogger(),
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('k');
    await flush();
    for (let i = 1; i <= 5; i++) {
      assert.equal(calls, i);
      mock.timers.tick(CONFLICT_RETRY_MS);
      await flush();
    }
    assert.equal(calls, 6, 'five conflicts in a row cost 5 x CONFLICT_RETRY_MS, not an exponential backoff');
    assert.equal(c.queue.retries('k'), 0);
    ac.abort();
    await run;
  });

  test('a conflict that never resolves does not spin: past the fast retries it backs off exponentially', async () => {
    let calls = 0;
    const c = new Controller(
      {
        name: 'fight',
        backoff: { baseDelayMs: 1000, maxDelayMs: 60_000 },
        watches: [],
        reconcile: async () => {
          calls++;
          throw new ApiError(409, 'Conflict', 'the object has been modified');
        },
      },
      silentLogger(),
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('k');
    await flush();
    for (let i = 0; i < MAX_FAST_CONFLICT_RETRIES; i++) {
      mock.timers.tick(CONFLICT_RETRY_MS);
      await flush();
    }
    assert.equal(calls, MAX_FAST_CONFLICT_RETRIES + 1);
    // Now the key's own backoff: 1 s, then 2 s, then 4 s.
    for (const [wait, expected] of [
      [999, MAX_FAST_CONFLICT_RETRIES + 1],
      [1, MAX_FAST_CONFLICT_RETRIES + 2],
      [1999, MAX_FAST_CONFLICT_RETRIES + 2],
      [1, MAX_FAST_CONFLICT_RETRIES + 3],
      [3999, MAX_FAST_CONFLICT_RETRIES + 3],
      [1, MAX_FAST_CONFLICT_RETRIES + 4],
    ] as const) {
      mock.timers.tick(wait);
      await flush();
      assert.equal(calls, expected, `after ${wait} ms more`);
    }
    assert.equal(c.queue.retries('k'), 4, 'the fourth backoff is already scheduled');
    ac.abort();
    await run;
  });

  test('requeueAfter reconciles the key again after the delay', async () => {
    let calls = 0;
    const c = new Controller(
      {
        name: 'periodic',
        watches: [],
        reconcile: async () => {
          calls++;
          return calls === 1 ? { requeueAfterMs: 5000 } : undefined;
        },
      },
      silentLogger(),
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('k');
    await flush();
    assert.equal(calls, 1);
    mock.timers.tick(4999);
    await flush();
    assert.equal(calls, 1);
    mock.timers.tick(1);
    await flush();
    assert.equal(calls, 2);
    ac.abort();
    await run;
  });
});
