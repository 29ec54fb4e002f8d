import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { ExponentialBackoff, TokenBucket, WorkQueue } from '../../src/runtime/queue.ts';

/** Lets pending promise callbacks run (fake timers do not touch the microtask queue). */
const flush = () => new Promise<void>((r) => setImmediate(r));

describe('WorkQueue', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  test('deduplicates a key added many times while it waits', async () => {
    const q = new WorkQueue<string>();
    for (let i = 0; i < 100; i++) q.add('a');
    q.add('b');
    assert.equal(q.length, 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
    assert.equal(q.length, 0);
  });

  test('never hands out a key that is being processed; re-queues it on done()', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    const first = await q.get();
    assert.equal(first, 'a');
    q.add('a'); // arrives while a worker holds 'a'
    q.add('a');
    assert.equal(q.length, 0, 'a key in processing must not be queued');
    let second: string | undefined;
    void q.get().then((k) => {
      second = k;
    });
    await flush();
    assert.equal(second, undefined, 'a second worker must not get the same key concurrently');
    q.done('a');
    await flush();
    assert.equal(second, 'a', 'the add during processing is delivered once after done()');
    q.done('a');
    assert.equal(q.length, 0);
  });

  test('hands keys to waiting workers in order', async () => {
    const q = new WorkQueue<string>();
    const got: (string | undefined)[] = [];
    const w1 = q.get().then((k) => got.push(k));
    const w2 = q.get().then((k) => got.push(k));
    q.add('x');
    q.add('y');
    await Promise.all([w1, w2]);
    assert.deepEqual(got, ['x', 'y']);
  });

  test('addRateLimited backs off exponentially per key and forget() resets it', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 10, maxDelayMs: 1000 });
    const delays: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const t0 = Date.now();
      q.addRateLimited('k');
      assert.equal(q.length, 0, 'not queued before its delay');
      const next = q.get();
      // advance in 1 ms steps to find exactly when the key becomes available
      let key: string | undefined;
      void next.then((k) => {
        key = k;
      });
      while (key === undefined) {
        mock.timers.tick(1);
        await flush();
      }
      delays.push(Date.now() - t0);
      q.done('k');
    }
    assert.deepEqual(delays, [10, 20, 40, 80, 160]);
    assert.equal(q.retries('k'), 5);
    q.forget('k');
    assert.equal(q.retries('k'), 0);
    const t0 = Date.now();
    q.addRateLimited('k');
    mock.timers.tick(10);
    assert.equal(await q.get(), 'k');
    assert.equal(Date.now() - t0, 10, 'after forget the delay starts from the base again');
  });

  test('backoff is capped at the maximum', () => {
    const b = new ExponentialBackoff<string>({ baseDelayMs: 100, maxDelayMs: 1000 });
    const seq = Array.from({ length: 8 }, () => b.when('k'));
    assert.deepEqual(seq, [100, 200, 400, 800, 1000, 1000, 1000, 1000]);
    assert.equal(b.when('other'), 100, 'keys back off independently');
  });

  test('addAfter delays the add, and keeps only the earliest pending delay for a key', async () => {
    const q = new WorkQueue<string>();
    q.addAfter('a', 1000);
    q.addAfter('a', 300); // earlier wins
    q.addAfter('a', 5000); // later is dropped
    mock.timers.tick(299);
    assert.equal(q.length, 0);
    mock.timers.tick(1);
    assert.equal(q.length, 1);
    assert.equal(await q.get(), 'a');
    q.done('a');
    mock.timers.tick(10_000);
    assert.equal(q.length, 0, 'the dropped delays did not fire later');
  });

  test('addAfter with a zero delay adds at once', () => {
    const q = new WorkQueue<string>();
    q.addAfter('a', 0);
    assert.equal(q.length, 1);
  });

  test('shutDown releases waiting workers and ignores later adds', async () => {
    const q = new WorkQueue<string>();
    const waiting = q.get();
    q.addAfter('late', 100);
    q.shutDown();
    assert.equal(await waiting, undefined);
    q.add('x');
    mock.timers.tick(1000);
    assert.equal(q.length, 0);
    assert.equal(await q.get(), undefined);
  });

  test('reports depth, adds and retries to its observer', async () => {
    const depths: number[] = [];
    let adds = 0;
    let retries = 0;
    const q = new WorkQueue<string>(
      { baseDelayMs: 1, maxDelayMs: 1 },
      { depth: (n) => depths.push(n), add: () => adds++, retry: () => retries++ },
    );
    q.add('a');
    q.add('a');
    q.add('b');
    await q.get();
    q.addRateLimited('c');
    mock.timers.tick(1);
    assert.equal(adds, 3, 'a deduplicated add is not counted');
    assert.equal(retries, 1);
    assert.deepEqual(depths, [1, 2, 1, 2]);
  });
});

describe('TokenBucket (the overall retry limit)', () => {
  test('a burst passes at once, then retries are spaced at the rate', () => {
    let now = 0;
    const b = new TokenBucket({ qps: 10, burst: 3 }, () => now);
    assert.deepEqual([b.reserve(), b.reserve(), b.reserve()], [0, 0, 0]);
    assert.equal(b.reserve(), 100, 'the 4th waits for one token at 10/s');
    assert.equal(b.reserve(), 200, 'and the 5th for two');
    now += 1000; // 10 tokens' worth of time repays the debt of 2 and refills to the burst of 3
    assert.deepEqual([b.reserve(), b.reserve(), b.reserve(), b.reserve()], [0, 0, 0, 100]);
  });

  test('many failing keys together cannot retry faster than the bucket, whatever their own backoff', () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    try {
      const q = new WorkQueue<string>({ baseDelayMs: 1, maxDelayMs: 1 }, {}, { qps: 10, burst: 2 });
      for (const k of ['a', 'b', 'c', 'd']) q.addRateLimited(k);
      assert.equal(q.length, 0);
      mock.timers.tick(1);
      assert.equal(q.length, 2, 'the burst');
      mock.timers.tick(99);
      assert.equal(q.length, 3, 'one more after 100 ms');
      mock.timers.tick(100);
      assert.equal(q.length, 4);
    } finally {
      mock.timers.reset();
    }
  });
});
