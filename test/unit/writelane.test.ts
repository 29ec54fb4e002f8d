import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WriteLane } from '../../src/runtime/writelane.ts';

/** A write function whose calls are held until the test lets them go. */
function heldWrites<V>() {
  const calls: { key: string; value: V; finish: (e?: Error) => void }[] = [];
  const waiters: (() => void)[] = [];
  const write = (key: string, value: V) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ key, value, finish: (e) => (e ? reject(e) : resolve()) });
      for (const w of waiters.splice(0)) w();
    });
  const callCount = async (n: number) => {
    while (calls.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { calls, write, callCount };
}

describe('WriteLane', () => {
  test('the latest value of a key wins over one not yet written; one write per key at a time', async () => {
    const w = heldWrites<string>();
    const lane = new WriteLane<string>({ write: w.write, inFlight: 4 });
    const signal = new AbortController().signal;
    lane.submit('a', 'a1', signal);
    await w.callCount(1);
    lane.submit('a', 'a2', signal);
    lane.submit('a', 'a3', signal);
    assert.equal(w.calls.length, 1, 'a second write of a waits for the first');
    w.calls[0]?.finish();
    await w.callCount(2);
    assert.deepEqual(
      w.calls.map((c) => c.value),
      ['a1', 'a3'],
    );
    w.calls[1]?.finish();
    await lane.idle();
    assert.equal(lane.size, 0);
  });

  test('at most inFlight writes at once, in the order submitted', async () => {
    const w = heldWrites<number>();
    const lane = new WriteLane<number>({ write: w.write, inFlight: 2 });
    const signal = new AbortController().signal;
    for (const k of ['a', 'b', 'c', 'd']) lane.submit(k, 1, signal);
    await w.callCount(2);
    assert.deepEqual(
      w.calls.map((c) => c.key),
      ['a', 'b'],
    );
    assert.equal(lane.size, 4);
    w.calls[1]?.finish();
    await w.callCount(3);
    assert.equal(w.calls[2]?.key, 'c');
    for (const c of w.calls) c.finish();
    await w.callCount(4);
    w.calls[3]?.finish();
    await lane.idle();
  });

  test('a failed write is tried again, merged under a value submitted meanwhile', async () => {
    const w = heldWrites<string>();
    const lane = new WriteLane<string>({
      write: w.write,
      inFlight: 1,
      retryMs: 1,
      merge: (pending, next) => `${pending}+${next}`,
    });
    const signal = new AbortController().signal;
    lane.submit('a', 'create', signal);
    await w.callCount(1);
    w.calls[0]?.finish(new Error('500'));
    await w.callCount(2);
    assert.equal(w.calls[1]?.value, 'create', 'retried alone');
    lane.submit('a', 'status', signal);
    w.calls[1]?.finish(new Error('500'));
    await w.callCount(3);
    assert.equal(w.calls[2]?.value, 'create+status', 'the failed value merged under the newer one');
    w.calls[2]?.finish();
    await lane.idle();
    assert.equal(lane.has('a'), false);
  });

  test('clear drops what has not started and waits for what is in flight; an aborted signal drops everything', async () => {
    const w = heldWrites<number>();
    const lane = new WriteLane<number>({ write: w.write, inFlight: 1 });
    const ac = new AbortController();
    lane.submit('a', 1, ac.signal);
    lane.submit('b', 1, ac.signal);
    await w.callCount(1);
    let cleared = false;
    const clearing = lane.clear().then(() => {
      cleared = true;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(cleared, false, 'a write in flight is waited for');
    w.calls[0]?.finish();
    await clearing;
    assert.deepEqual(
      w.calls.map((c) => c.key),
      ['a'],
      'b never started',
    );
    ac.abort();
    lane.submit('c', 1, ac.signal);
    await lane.idle();
    assert.equal(w.calls.length, 1, 'nothing is written once the signal has aborted');
  });
});
