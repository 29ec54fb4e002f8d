/**
 * The runtime applier over a recording client: server-side apply under the controller's field manager, no
 * write the cache already shows, one write per change however often a lagging cache replans it, deletes
 * pinned to a UID, and every error handed back to the work queue.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import {
  APPLIED_DIGEST_ANNOTATION,
  Applier,
  type ApplierOptions,
  appliedForm,
  type PlannedWrite,
  showsApplied,
  type Write,
} from '../../src/runtime/applier.ts';
import type { EventHandler } from '../../src/runtime/informer.ts';

const Things: ResourceType = { group: 'example.com', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };

interface Call {
  verb: string;
  name: string;
  body?: unknown;
  opts?: Record<string, unknown>;
}

/** Answers as a server would: each write a new resourceVersion; `fail` makes the next call throw. */
function recordingClient() {
  const calls: Call[] = [];
  let rv = 100;
  let fail: Error | undefined;
  const take = () => {
    const e = fail;
    fail = undefined;
    if (e) throw e;
  };
  const client = {
    patch: async (_rt: ResourceType, name: string, body: KubeObject, opts: Record<string, unknown>) => {
      calls.push({ verb: `patch:${opts.type}`, name, body, opts });
      take();
      return { ...body, metadata: { ...body.metadata, name, uid: 'u1', resourceVersion: String(++rv) } };
    },
    create: async (_rt: ResourceType, body: KubeObject) => {
      calls.push({ verb: 'create', name: body.metadata.name ?? '', body });
      take();
      return { ...body, metadata: { ...body.metadata, uid: 'u1', resourceVersion: String(++rv) } };
    },
    delete: async (_rt: ResourceType, name: string, opts: Record<string, unknown>) => {
      calls.push({ verb: 'delete', name, opts });
      take();
      return true;
    },
  } as unknown as KubeClient;
  return { client, calls, failNext: (e: Error) => (fail = e) };
}

/** An applier whose cache of Things the test feeds with events, as an informer would. */
function watchingApplier(opts: ApplierOptions) {
  const handlers: EventHandler<KubeObject>[] = [];
  const applier = new Applier(opts);
  applier.watch(Things, { addEventHandler: (h: EventHandler<KubeObject>) => handlers.push(h) });
  const event = (kind: 'add' | 'delete', o: KubeObject) => {
    for (const h of handlers) h[kind]?.(o);
  };
  return { applier, event };
}

const desired = (data: Record<string, string>): KubeObject & { data: Record<string, string> } => ({
  metadata: { name: 'one', namespace: 'ns', labels: { app: 'x' } },
  data,
});
/** The object as the server would have it after applying `d`: our fields, the digest, and defaults of its own. */
const stored = (d: KubeObject, rv = '7', extra: Record<string, unknown> = {}): KubeObject => {
  const a = appliedForm(Things, d);
  return { ...a, ...extra, metadata: { ...a.metadata, uid: 'u1', resourceVersion: rv, creationTimestamp: 'now' } } as KubeObject;
};

describe('runtime applier', () => {
  test('applies by server-side apply, forced, under the controller field manager, with the digest annotation', async () => {
    const { client, calls } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'osc-example' });
    const outcome = await applier.write({ op: 'apply', resource: Things, object: desired({ a: '1' }) }, undefined);
    assert.equal(outcome, 'written');
    assert.equal(calls.length, 1);
    assert.equal(calls[0]?.verb, 'patch:apply');
    assert.equal(calls[0]?.opts?.fieldManager, 'osc-example');
    assert.equal(calls[0]?.opts?.force, true);
    const body = calls[0]?.body as KubeObject;
    assert.equal(body.apiVersion, 'example.com/v1');
    assert.equal(body.kind, 'Thing');
    assert.match(body.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] ?? '', /^[0-9a-f]{16}$/);
  });

  test('no write when the cache shows what would be applied; a hand edit or a changed plan is written', async () => {
    const { client, calls } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'osc-example' });
    const want = desired({ a: '1' });
    // Server defaults and other managers' fields do not count.
    const cached = stored(want, '7', { extra: 'defaulted' });
    assert.ok(showsApplied(cached, Things, want));
    assert.equal(await applier.write({ op: 'apply', resource: Things, object: want }, cached), 'unchanged');
    assert.equal(calls.length, 0);
    const edited = { ...cached, data: { a: 'edited' } } as KubeObject;
    assert.equal(await applier.write({ op: 'apply', resource: Things, object: want }, edited), 'written');
    // A key the plan no longer names changes the digest: applied, so that the server removes it.
    const fewer = { ...want, metadata: { ...want.metadata, labels: {} } };
    assert.equal(showsApplied(cached, Things, fewer), false);
    assert.equal(await applier.write({ op: 'apply', resource: Things, object: fewer }, cached), 'written');
    assert.equal(calls.length, 2);
  });

  test("rewriteOn 'plan': a hand edit stays until the plan changes", async () => {
    const { client, calls } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'osc-example' });
    const want = desired({ a: '1' });
    const edited = { ...stored(want, '7'), data: { a: 'edited' } } as KubeObject;
    assert.equal(await applier.write({ op: 'apply', resource: Things, object: want, rewriteOn: 'plan' }, edited), 'unchanged');
    assert.equal(calls.length, 0, 'the edit stays');
    const changed = desired({ a: '2' });
    assert.equal(await applier.write({ op: 'apply', resource: Things, object: changed, rewriteOn: 'plan' }, edited), 'written');
    assert.equal(calls.length, 1, 'a changed plan is applied');
  });

  test('a write the cache has not shown yet is not made again; a new version in the cache ends the wait', async () => {
    const { client, calls } = recordingClient();
    const { applier } = watchingApplier({ client, fieldManager: 'osc-example' });
    const w: Write = { op: 'apply', resource: Things, object: desired({ a: '1' }) };
    assert.equal(await applier.write(w, undefined), 'written');
    assert.ok(applier.awaits(Things, 'one', 'ns', undefined), 'the cache still shows no object');
    assert.equal(await applier.write(w, undefined), 'awaited');
    assert.equal(calls.length, 1);
    // Something else wanted meanwhile: written at once.
    assert.equal(await applier.write({ ...w, object: desired({ a: '2' }) }, undefined), 'written');
    // The cache shows the object: nothing awaited; it is what the plan wants, so nothing is written.
    const now = stored(desired({ a: '2' }), '8');
    assert.equal(applier.awaits(Things, 'one', 'ns', now), false);
    assert.equal(await applier.write({ ...w, object: desired({ a: '2' }) }, now), 'unchanged');
    assert.equal(calls.length, 2);
    assert.equal(applier.pending, 0);
  });

  test('an awaited write is made again once its record expires', async () => {
    const { client, calls } = recordingClient();
    let t = 0;
    const { applier } = watchingApplier({ client, fieldManager: 'm', expectationTtlMs: 1000, now: () => t });
    const w: Write = { op: 'patch', resource: Things, name: 'one', namespace: 'ns', patch: { metadata: { annotations: { k: 'v' } } } };
    const cached = stored(desired({}), '7');
    await applier.write(w, cached);
    assert.equal(await applier.write(w, cached), 'awaited');
    t = 1000;
    assert.equal(await applier.write(w, cached), 'written');
    assert.equal(calls.length, 2);
    assert.equal(calls[0]?.verb, 'patch:merge');
  });

  test('a write whose record ends unshown wakes the controller; one its cache shows does not', async () => {
    const { client } = recordingClient();
    let t = 0;
    const { applier, event } = watchingApplier({ client, fieldManager: 'm', expectationTtlMs: 1000, now: () => t });
    let woken = 0;
    applier.onUnshownExpired(() => woken++);
    const patch = (k: string): Write => ({
      op: 'patch',
      resource: Things,
      name: 'one',
      namespace: 'ns',
      patch: { metadata: { annotations: { k } } },
    });
    const cached = stored(desired({}), '7');
    // Shown: the cache's event ends the record; its time passing tells nobody.
    const written = await applier.write(patch('a'), cached);
    assert.equal(written, 'written');
    event('add', stored(desired({}), '8'));
    t = 1000;
    applier.expireUnshown();
    assert.equal(woken, 0, 'a write its cache showed wakes nothing');
    // Taken back before the cache showed it (an etcd restore: the cache still shows version 7, as before).
    assert.equal(await applier.write(patch('b'), cached), 'written');
    assert.equal(await applier.write(patch('b'), cached), 'awaited', 'planned again meanwhile: skipped');
    t = 1999;
    applier.expireUnshown();
    assert.equal(woken, 0, 'not before its time');
    t = 2000;
    applier.expireUnshown();
    assert.equal(woken, 1, 'its time passed unshown: the controller is woken');
    assert.equal(await applier.write(patch('b'), cached), 'written', 'and the next pass makes the write again');
  });

  test('after an etcd restore (the caches told to list again) no write is awaited, and the controller is woken', async () => {
    const { client } = recordingClient();
    const relist: (() => void)[] = [];
    (client as unknown as { onRelistRequested: (fn: () => void) => void }).onRelistRequested = (fn) => relist.push(fn);
    const { applier, event } = watchingApplier({ client, fieldManager: 'm' });
    let woken = 0;
    applier.onUnshownExpired(() => woken++);
    const w: PlannedWrite = { op: 'create', resource: Things, object: desired({ a: '1' }) };
    assert.equal(await applier.write(w, undefined), 'written');
    assert.equal(await applier.write(w, undefined), 'awaited');
    for (const fn of relist) fn();
    assert.equal(woken, 1, 'the controller is woken');
    assert.equal(await applier.write(w, undefined), 'written', 'the create is made again: the restore may have taken it back');
    event('add', stored(desired({ a: '1' }), '999'));
    assert.equal(applier.pending, 0, 'shown');
    for (const fn of relist) fn();
    assert.equal(woken, 1, 'a relist with nothing awaited wakes nothing');
  });

  test('a create answered AlreadyExists ends its record without waking anyone: the object is there', async () => {
    const { client, failNext } = recordingClient();
    let t = 0;
    const { applier } = watchingApplier({ client, fieldManager: 'm', expectationTtlMs: 1000, now: () => t });
    let woken = 0;
    applier.onUnshownExpired(() => woken++);
    failNext(new ApiError(409, 'AlreadyExists', 'exists'));
    assert.equal(await applier.write({ op: 'create', resource: Things, object: desired({ a: '1' }) }, undefined), 'unchanged');
    assert.equal(applier.pending, 1, 'remembered');
    t = 1000;
    applier.expireUnshown();
    assert.equal(applier.pending, 0, 'the record ended');
    assert.equal(woken, 0, 'no pass is asked for: a cache that never shows it would bring one every 30 s');
  });

  test("the applier's own timer wakes the controller when a write's record ends unshown", async () => {
    const { client } = recordingClient();
    const { applier } = watchingApplier({ client, fieldManager: 'm', expectationTtlMs: 50 });
    const woken = new Promise<void>((resolve) => applier.onUnshownExpired(resolve));
    await applier.write({ op: 'create', resource: Things, object: desired({ a: '1' }) }, undefined);
    await woken;
    assert.equal(applier.pending, 0, 'the record ended');
  });

  test('deletes only the object the cache showed (UID precondition), once, and nothing that is gone or going', async () => {
    const { client, calls } = recordingClient();
    const { applier } = watchingApplier({ client, fieldManager: 'm' });
    const w: Write = { op: 'delete', resource: Things, name: 'one', namespace: 'ns' };
    assert.equal(await applier.write(w, undefined), 'unchanged');
    assert.equal(await applier.write(w, { metadata: { name: 'one', deletionTimestamp: 'then' } }), 'unchanged');
    const cached = stored(desired({}), '7');
    assert.equal(await applier.write(w, cached), 'written');
    assert.deepEqual(calls[0]?.opts?.preconditions, { uid: 'u1' });
    assert.equal(await applier.write(w, cached), 'awaited', 'the cache still shows it: not deleted twice');
    assert.equal(calls.length, 1);
  });

  test('an object made, shown, then deleted by someone else is made again: the cache event ended the wait', async () => {
    const { client, calls } = recordingClient();
    const { applier, event } = watchingApplier({ client, fieldManager: 'm' });
    const w: Write = { op: 'apply', resource: Things, object: desired({ a: '1' }) };
    assert.equal(await applier.write(w, undefined), 'written');
    const made = stored(desired({ a: '1' }), '8');
    event('add', made);
    event('delete', made);
    // The cache shows no object, as before the create; the events in between say it is not our create's lag.
    assert.equal(await applier.write(w, undefined), 'written');
    assert.equal(calls.length, 2);
  });

  test('a kind the controller does not cache: nothing remembered, every pass writes what it plans', async () => {
    const { client, calls } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'm' });
    const w: Write = { op: 'apply', resource: Things, object: desired({ a: '1' }) };
    await applier.write(w, undefined);
    assert.equal(await applier.write(w, undefined), 'written');
    assert.equal(calls.length, 2);
    assert.equal(applier.pending, 0);
  });

  test('a patch of an object gone meanwhile is no error; a conflict or a server error is thrown to the work queue', async () => {
    const { client, failNext } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'm' });
    const cached = stored(desired({}), '7');
    const patch: Write = { op: 'patch', resource: Things, name: 'one', namespace: 'ns', patch: { data: { a: '1' } } };
    failNext(new ApiError(404, 'NotFound', 'gone'));
    assert.equal(await applier.write(patch, cached), 'gone');
    failNext(new ApiError(409, 'Conflict', 'the object has been modified'));
    await assert.rejects(applier.write(patch, cached), /modified/);
    failNext(new ApiError(409, 'Conflict', 'uid precondition'));
    await assert.rejects(applier.write({ op: 'delete', resource: Things, name: 'one', namespace: 'ns' }, cached), /precondition/);
    failNext(new ApiError(503, 'ServiceUnavailable', 'try again'));
    await assert.rejects(applier.write({ op: 'apply', resource: Things, object: desired({ a: '1' }) }, undefined), /try again/);
    // Nothing failed is remembered: the retry writes.
    assert.equal(applier.pending, 0);
  });

  test('run: the writes in order, each against its cached copy', async () => {
    const { client, calls } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'm' });
    const cached = stored(desired({ a: '1' }), '7');
    const outcomes = await applier.run(
      [
        { op: 'apply', resource: Things, object: desired({ a: '1' }) },
        { op: 'apply', resource: Things, object: { ...desired({}), metadata: { name: 'two', namespace: 'ns' } } },
        { op: 'delete', resource: Things, name: 'one', namespace: 'ns' },
      ],
      (_rt, name) => (name === 'one' ? cached : undefined),
    );
    assert.deepEqual(outcomes, ['unchanged', 'written', 'written']);
    assert.deepEqual(
      calls.map((c) => `${c.verb} ${c.name}`),
      ['patch:apply two', 'delete one'],
    );
  });

  test('an object made, then its status: until the cache shows the status write, the plan reads it as written', async () => {
    const { client, calls } = recordingClient();
    const { applier, event } = watchingApplier({ client, fieldManager: 'm' });
    const share = { fieldManager: 'm', owned: (st: { phase?: string } | undefined) => ({ ...st }) };
    const status: Write | PlannedWrite = {
      op: 'status',
      resource: Things,
      name: 'one',
      namespace: 'ns',
      status: { phase: 'Ready' },
      share,
    };
    assert.equal(await applier.write({ op: 'create', resource: Things, object: desired({}) }, undefined), 'written');
    assert.equal(await applier.write(status, undefined), 'written', 'written over the create the server answered');
    // The cache shows the create (the version before the status write): still behind.
    const created = { ...desired({}), metadata: { ...desired({}).metadata, uid: 'u1', resourceVersion: '101' } };
    event('add', created);
    assert.equal((applier.latest(Things, 'one', 'ns', created) as { status?: unknown }).status !== undefined, true);
    assert.equal(await applier.write(status, created), 'awaited', 'not written again');
    assert.deepEqual(applier.latestList(Things, [created]).length, 1);
    // The status write's version arrives: the cache is the truth again.
    const shown = { ...created, metadata: { ...created.metadata, resourceVersion: '102' }, status: { phase: 'Ready' } };
    event('add', shown);
    assert.equal(applier.pending, 0);
    assert.equal(await applier.write(status, shown), 'unchanged');
    assert.deepEqual(
      calls.map((c) => c.verb),
      ['create', 'patch:apply'],
    );
  });

  test('a patch that says what it shows: not made when the cache shows it, and a repeat with other keys is awaited', async () => {
    const { client, calls } = recordingClient();
    const { applier } = watchingApplier({ client, fieldManager: 'm' });
    const cached = stored(desired({}), '7');
    const patch = (since: string): PlannedWrite => ({
      op: 'patch',
      resource: Things,
      name: 'one',
      namespace: 'ns',
      patch: { metadata: { labels: { kata: 'true', gone: null }, annotations: { since } } },
      shows: { metadata: { labels: { kata: 'true', gone: null } } },
    });
    assert.equal(await applier.write(patch('1'), cached), 'written');
    assert.equal(await applier.write(patch('2'), cached), 'awaited', 'the same labels, another time: a repeat');
    const labelled = { ...cached, metadata: { ...cached.metadata, resourceVersion: '9', labels: { app: 'x', kata: 'true' } } };
    assert.equal(await applier.write(patch('3'), labelled), 'unchanged');
    assert.equal(calls.length, 1);
  });

  test('a create: nothing when the cache shows the object, AlreadyExists is no error, remembered until no pass plans it', async () => {
    const { client, calls, failNext } = recordingClient();
    const applier = new Applier({ client, fieldManager: 'm' });
    const create: PlannedWrite = { op: 'create', resource: Things, object: desired({}) };
    assert.equal(await applier.write(create, stored(desired({}))), 'unchanged');
    failNext(new ApiError(409, 'AlreadyExists', 'exists'));
    assert.equal(await applier.write(create, undefined), 'unchanged');
    assert.equal(await applier.write(create, undefined), 'awaited', 'a kind not cached: the create is remembered');
    applier.settleCreates([create]);
    assert.equal(await applier.write(create, undefined), 'awaited');
    applier.settleCreates([]);
    assert.equal(await applier.write(create, undefined), 'written', 'no longer planned, then planned again: made again');
    assert.equal(calls.length, 2);
  });

  test('a delete the caller decided on a live read is made, though a create answered AlreadyExists is remembered', async () => {
    const { client, calls, failNext } = recordingClient();
    const { applier } = watchingApplier({ client, fieldManager: 'm' });
    const create: PlannedWrite = { op: 'create', resource: Things, object: desired({}) };
    failNext(new ApiError(409, 'AlreadyExists', 'exists'));
    assert.equal(await applier.write(create, undefined), 'unchanged');
    // The cache still lacks it (its watch is down); a live read found it, so the delete goes to the server.
    const del: PlannedWrite = { op: 'delete', resource: Things, name: 'one', namespace: 'ns', uid: 'u1', uncached: true };
    assert.equal(await applier.write(del, undefined), 'written');
    assert.deepEqual(
      calls.map((c) => c.verb),
      ['create', 'delete'],
    );
    assert.deepEqual(calls[1]?.opts?.preconditions, { uid: 'u1' });
  });
});
