/**
 * What keeps a controller's pass cheap and its writes few: a key's reconciles spaced by the work queue
 * (minGapMs, and a reconcile's own paceMs), the versions the applier's own writes made (so its own status
 * write wakes nothing), an informer's snapshot that stays the same array while nothing changes, caches of
 * pure functions keyed by immutable inputs, and the string-map comparison every node event goes through.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sameStrings } from '../../src/api/meta.ts';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { Applier } from '../../src/runtime/applier.ts';
import { Controller } from '../../src/runtime/controller.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/log.ts';
import { lastCall, perObject } from '../../src/runtime/memo.ts';
import { waitFor } from '../support/wait.ts';

const Things: ResourceType = { group: 'example.com', version: 'v1', plural: 'things', kind: 'Thing', namespaced: false };

describe('a controller pass, cheap and spaced', () => {
  test("a key's reconciles start at least minGapMs apart, or its reconcile's paceMs when longer; adds meanwhile make one reconcile", async () => {
    const starts: number[] = [];
    let pace: number | undefined;
    const c = new Controller(
      {
        name: 'paced',
        minGapMs: 150,
        watches: [],
        reconcile: async () => {
          starts.push(performance.now());
          return pace === undefined ? undefined : { paceMs: pace };
        },
      },
      silentLogger(),
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('k');
    await waitFor(() => starts.length === 1, { message: 'the first reconcile' });
    for (let i = 0; i < 5; i++) c.queue.add('k');
    await waitFor(() => starts.length === 2, { message: 'the second reconcile' });
    // Less a millisecond: libuv's timers run on a loop clock of whole milliseconds, taken before this one.
    assert.ok((starts[1] as number) - (starts[0] as number) >= 148, `${(starts[1] as number) - (starts[0] as number)} ms apart`);
    pace = 400;
    c.queue.add('k');
    await waitFor(() => starts.length === 3, { message: 'the third reconcile' });
    c.queue.add('k');
    await waitFor(() => starts.length === 4, { message: 'the fourth reconcile' });
    assert.ok(
      (starts[3] as number) - (starts[2] as number) >= 398,
      `paced by the reconcile: ${(starts[3] as number) - (starts[2] as number)} ms`,
    );
    ac.abort();
    await run;
    assert.equal(starts.length, 4, 'five adds while waiting made one reconcile');
  });

  test("the applier tells the versions its own writes made from anyone else's", async () => {
    let rv = 10;
    const client = {
      patch: async (_rt: ResourceType, name: string, body: KubeObject) => ({
        ...body,
        metadata: { ...body.metadata, name, resourceVersion: String(++rv) },
      }),
    } as unknown as KubeClient;
    const applier = new Applier({ client, fieldManager: 'osc-test' });
    applier.ownWrites(Things);
    const cached = { metadata: { name: 'one', uid: 'u', resourceVersion: '10' }, status: { a: 1 } };
    const share = { fieldManager: 'osc-test', owned: (s: unknown) => s as { a: number } };
    const written = await applier.applyStatus(Things as ResourceType<typeof cached>, cached, { a: 2 }, share);
    assert.ok(written);
    assert.equal(applier.madeVersion(Things, written), true);
    assert.equal(applier.madeVersion(Things, { metadata: { name: 'one', resourceVersion: '99' } }), false, "someone else's");
    assert.equal(applier.madeVersion(Things, cached), false, 'the version before');
  });

  test("an informer's snapshot is the same array until its cache changes", () => {
    const informer = new Informer({} as KubeClient, Things);
    // What a watch event does to the cache (the informer's own path for list and watch alike).
    const event = (type: string, o: KubeObject) => (informer as unknown as { apply(t: string, o: KubeObject): void }).apply(type, o);
    event('ADDED', { metadata: { name: 'a', resourceVersion: '1' } });
    const first = informer.snapshot();
    assert.equal(informer.snapshot(), first, 'nothing changed: the same array');
    event('MODIFIED', { metadata: { name: 'a', resourceVersion: '2' } });
    const second = informer.snapshot();
    assert.notEqual(second, first);
    assert.equal(second[0]?.metadata.resourceVersion, '2');
    event('DELETED', { metadata: { name: 'a', resourceVersion: '2' } });
    assert.deepEqual(informer.snapshot(), []);
  });

  test('caches of pure functions answer what the function does, computing once per input', () => {
    let calls = 0;
    const sum = lastCall((xs: readonly number[]) => {
      calls++;
      return xs.reduce((a, b) => a + b, 0);
    });
    const xs = [1, 2, 3];
    assert.equal(sum(xs), 6);
    assert.equal(sum(xs), 6);
    assert.equal(calls, 1);
    assert.equal(sum([1, 2, 3]), 6, 'another array: computed again');
    assert.equal(calls, 2);
    let made = 0;
    const size = perObject((o: { items: string[] }) => {
      made++;
      return new Set(o.items).size;
    });
    const o = { items: ['a', 'b', 'a'] };
    assert.equal(size(o), 2);
    assert.equal(size(o), 2);
    assert.equal(made, 1);
  });

  test('sameStrings: the same keys and values, whatever their order', () => {
    assert.equal(sameStrings({ a: '1', b: '' }, { b: '', a: '1' }), true);
    assert.equal(sameStrings(undefined, {}), true);
    assert.equal(sameStrings({ a: '1' }, { a: '2' }), false);
    assert.equal(sameStrings({ a: '1' }, { a: '1', b: '' }), false);
    assert.equal(sameStrings({ a: '1', b: '' }, { a: '1' }), false);
    assert.equal(sameStrings({ a: '' }, undefined), false);
  });
});
