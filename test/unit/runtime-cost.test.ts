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
import { byLabels, lastCall, perObject, sameWhileEqual } from '../../src/runtime/memo.ts';
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

  test("an update that leaves an object's labels as they were keeps the cached labels object", () => {
    const informer = new Informer({} as KubeClient, Things);
    const event = (type: string, o: KubeObject) => (informer as unknown as { apply(t: string, o: KubeObject): void }).apply(type, o);
    event('ADDED', { metadata: { name: 'a', resourceVersion: '1', labels: { role: 'worker', zone: 'a' } } });
    const first = informer.get('a')?.metadata.labels;
    event('MODIFIED', { metadata: { name: 'a', resourceVersion: '2', labels: { zone: 'a', role: 'worker' }, annotations: { x: '1' } } });
    const kept = informer.get('a');
    assert.equal(kept?.metadata.labels, first, 'the same labels in another order: the same object');
    assert.equal(kept?.metadata.annotations?.x, '1', 'the rest is the new version');
    event('MODIFIED', { metadata: { name: 'a', resourceVersion: '3', labels: { role: 'worker', zone: 'b' } } });
    assert.deepEqual(informer.get('a')?.metadata.labels, { role: 'worker', zone: 'b' }, 'a changed label: the new labels');
    event('MODIFIED', { metadata: { name: 'a', resourceVersion: '4', labels: { role: 'worker', zone: 'b', extra: '' } } });
    assert.deepEqual(informer.get('a')?.metadata.labels, { role: 'worker', zone: 'b', extra: '' }, 'a label added: the new labels');
    event('MODIFIED', { metadata: { name: 'a', resourceVersion: '5', labels: { role: 'worker' } } });
    assert.deepEqual(informer.get('a')?.metadata.labels, { role: 'worker' }, 'labels removed: the new labels');
  });

  test("byLabels answers again only when an object's labels, name or deletion change, or another argument", () => {
    type O = {
      metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string; annotations?: Record<string, string> };
    };
    let calls = 0;
    const workers = byLabels((objects: readonly O[], role: string) => {
      calls++;
      return objects.filter((o) => o.metadata.labels?.role === role && !o.metadata.deletionTimestamp).map((o) => o.metadata.name);
    });
    const labels = { role: 'worker' };
    const a: O = { metadata: { name: 'a', labels } };
    const b: O = { metadata: { name: 'b', labels: { role: 'master' } } };
    assert.deepEqual(workers([a, b], 'worker'), ['a']);
    // A new list of new objects whose labels are the same objects (an annotation changed): not computed again.
    const a2: O = { metadata: { name: 'a', labels, annotations: { x: '1' } } };
    const b2: O = { ...b, metadata: { ...b.metadata, annotations: { y: '2' } } };
    assert.deepEqual(workers([a2, b2], 'worker'), ['a']);
    assert.equal(calls, 1, 'labels unchanged: answered from memory');
    assert.deepEqual(workers([a2, b2], 'master'), ['b'], 'another argument: computed again');
    assert.equal(calls, 2);
    assert.deepEqual(workers([a2, { metadata: { name: 'b', labels: { role: 'worker' } } }], 'master'), [], 'a label changed');
    assert.equal(calls, 3);
    const b3: O = { metadata: { name: 'b', labels: { role: 'worker' } } };
    assert.deepEqual(workers([a2, b3], 'worker'), ['a', 'b']);
    assert.deepEqual(workers([a2, { metadata: { ...b3.metadata, deletionTimestamp: 'now' } }], 'worker'), ['a'], 'deleted');
    assert.deepEqual(workers([a2], 'worker'), ['a'], 'one gone');
    assert.deepEqual(workers([{ metadata: { name: 'c', labels } }], 'worker'), ['c'], 'renamed: another object');
    assert.equal(calls, 7);
  });

  test('sameWhileEqual keeps the first of equal values, so identity memos hold across copies', () => {
    const same = sameWhileEqual<{ logLevel?: string } | undefined>();
    const spec = { logLevel: 'info' };
    assert.equal(same(spec), spec);
    assert.equal(same({ logLevel: 'info' }), spec, 'an equal copy: the first');
    const debug = { logLevel: 'debug' };
    assert.equal(same(debug), debug, 'changed: the new value');
    assert.equal(same(undefined), undefined);
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
