/**
 * After the API server was unavailable (no answer, a 5xx, a 429), the first answer of any request wakes
 * what waits out a backoff: an informer's relist and the keys that failed for want of the server are
 * retried at once, and a watch open since before is reconnected (what cut the other request may have left
 * it silent). Nothing happens while all is well.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { Controller } from '../../src/runtime/controller.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';
import { openUntilAborted } from '../support/fake-client.ts';
import { waitFor } from '../support/wait.ts';

const Things: ResourceType = { group: 'example.com', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A recovery signal the test fires, as KubeClient.onRecovered would. */
function recoverySignal() {
  const listeners = new Set<() => void>();
  return {
    onRecovered: (fn: () => void) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    fire: () => {
      for (const fn of listeners) fn();
    },
  };
}

describe('the API server answering again', () => {
  test('retries at once a key that failed because the server did not answer, not one the server refused', async () => {
    const signal = recoverySignal();
    const calls: string[] = [];
    let down = true;
    const c = new Controller(
      {
        name: 'test',
        backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
        watches: [],
        reconcile: async (key) => {
          calls.push(key);
          if (key === 'refused') throw new ApiError(422, 'Invalid', 'spec.x: Invalid value');
          if (down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
          return undefined;
        },
      },
      silentLogger(),
      undefined,
      signal.onRecovered,
    );
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('unreachable');
    c.queue.add('refused');
    await waitFor(() => calls.length === 2);
    down = false;
    signal.fire();
    await waitFor(() => calls.filter((k) => k === 'unreachable').length === 2, { timeoutMs: 2000, message: 'retried at once' });
    await sleep(100);
    assert.deepEqual(calls.filter((k) => k === 'refused').length, 1, 'a refusal waits out its backoff');
    ac.abort();
    await run;
  });

  test("an informer's relist in backoff is retried at once, and a watch open since before is reconnected", async () => {
    const signal = recoverySignal();
    let lists = 0;
    let watches = 0;
    let failing = true;
    const client = {
      onRecovered: signal.onRecovered,
      list: async () => {
        lists++;
        if (failing) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return { metadata: { resourceVersion: '1' }, items: [] };
      },
      watch: (_rt: unknown, opts: { signal: AbortSignal }) => {
        watches++;
        return openUntilAborted(opts.signal);
      },
    } as unknown as KubeClient;
    const inf = new Informer(client, Things, { watchTimeoutSeconds: 600, backoff: { initialMs: 60_000, maxMs: 60_000 } });
    const ac = new AbortController();
    const run = inf.run(ac.signal);
    await waitFor(() => lists === 1);
    failing = false;
    signal.fire();
    await waitFor(() => inf.hasSynced, { timeoutMs: 2000, message: 'listed again at once, not a minute later' });
    await waitFor(() => watches === 1);
    signal.fire();
    await waitFor(() => watches === 2, { timeoutMs: 2000, message: 'the watch reconnected' });
    assert.equal(lists, 2, 'from its last version: nothing listed again');
    ac.abort();
    await run;
  });

  test('the backoff grown during an outage starts afresh when the server answers: a refusal just after its start is retried soon', async () => {
    const signal = recoverySignal();
    let lists = 0;
    let mode: 'down' | 'forbidden' | 'up' = 'down';
    const client = {
      onRecovered: signal.onRecovered,
      list: async () => {
        lists++;
        if (mode === 'down') throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        if (mode === 'forbidden') {
          mode = 'up';
          throw new ApiError(403, 'Forbidden', 'things.example.com is forbidden: User cannot list resource "things"');
        }
        return { metadata: { resourceVersion: '1' }, items: [] };
      },
      watch: (_rt: unknown, opts: { signal: AbortSignal }) => openUntilAborted(opts.signal),
    } as unknown as KubeClient;
    const inf = new Informer(client, Things, { watchTimeoutSeconds: 600, backoff: { initialMs: 50, maxMs: 60_000 } });
    const ac = new AbortController();
    const run = inf.run(ac.signal);
    try {
      // Seven failures: the next wait would be 6.4 s.
      await waitFor(() => lists === 7, { timeoutMs: 10_000 });
      mode = 'forbidden';
      signal.fire();
      await waitFor(() => inf.hasSynced, { timeoutMs: 2000, message: 'listed within a moment of the refusal, not 6 s later' });
      assert.equal(lists, 9, 'the refusal, then the list');
    } finally {
      ac.abort();
      await run;
    }
  });

  test('a relist asked for (an etcd restore) ends the watch and lists again, taking back what the restore took back', async () => {
    const relist = recoverySignal();
    let lists = 0;
    let watches = 0;
    let value = 'after';
    const client = {
      onRelistRequested: relist.onRecovered,
      list: async () => {
        lists++;
        return {
          metadata: { resourceVersion: String(lists) },
          items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: `${lists}` }, v: value }],
        };
      },
      watch: (_rt: unknown, opts: { signal: AbortSignal }) => {
        watches++;
        return openUntilAborted(opts.signal);
      },
    } as unknown as KubeClient;
    const inf = new Informer(client, Things, { watchTimeoutSeconds: 600 });
    const ac = new AbortController();
    const run = inf.run(ac.signal);
    try {
      await waitFor(() => watches === 1);
      assert.equal((inf.get('ns/a') as unknown as { v: string }).v, 'after');
      value = 'before';
      relist.fire();
      await waitFor(() => (inf.get('ns/a') as unknown as { v?: string } | undefined)?.v === 'before', {
        timeoutMs: 2000,
        message: 'listed again at once',
      });
      await waitFor(() => watches === 2, { timeoutMs: 2000, message: 'watching again after the list' });
      assert.equal(lists, 2);
    } finally {
      ac.abort();
      await run;
    }
  });

  test('while busy, a silent watch is reconnected, but not the watch of one object by name, which is silent nearly always', async () => {
    const watches = new Map<string, number>();
    const client = {
      list: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
      watch: (_rt: unknown, opts: { signal: AbortSignal; fieldSelector?: string }) => {
        const k = opts.fieldSelector ?? 'all';
        watches.set(k, (watches.get(k) ?? 0) + 1);
        return openUntilAborted(opts.signal);
      },
    } as unknown as KubeClient;
    const quietWhileBusy = { busy: () => true, afterMs: 100 };
    const all = new Informer(client, Things, { watchTimeoutSeconds: 600, quietWhileBusy });
    const one = new Informer(client, Things, { watchTimeoutSeconds: 600, quietWhileBusy, fieldSelector: 'metadata.name=x' });
    const ac = new AbortController();
    const runs = [all.run(ac.signal), one.run(ac.signal)];
    try {
      await waitFor(() => (watches.get('all') ?? 0) >= 4, { timeoutMs: 5000, message: 'the silent watch of the kind reconnected' });
      assert.equal(watches.get('metadata.name=x'), 1, 'the watch of one object was left alone');
    } finally {
      ac.abort();
      await Promise.all(runs);
    }
  });
});

test('a silent watch is checked once work starts: a write of the process arms the check an idle informer does not keep', async () => {
  let watches = 0;
  let written: ((rt: { group: string; plural: string }, obj: unknown) => void) | undefined;
  const client = {
    list: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
    watch: (_rt: unknown, opts: { signal: AbortSignal }) => {
      watches++;
      return openUntilAborted(opts.signal);
    },
    onWritten: (listener: typeof written) => {
      written = listener;
      return () => {
        written = undefined;
      };
    },
  } as unknown as KubeClient;
  let busy = false;
  const inf = new Informer(client, Things, { watchTimeoutSeconds: 600, quietWhileBusy: { busy: () => busy, afterMs: 100 } });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  try {
    await waitFor(() => watches === 1 && written, { timeoutMs: 5000, message: 'the first watch' });
    // Busy from now on, but nothing has happened that would arm the check: the write does.
    busy = true;
    written?.({ group: 'other.example', plural: 'others' }, { metadata: { name: 'x' } });
    await waitFor(() => watches >= 3, { timeoutMs: 5000, message: 'the silent watch reconnected after the write, and again' });
  } finally {
    ac.abort();
    await run;
  }
  assert.equal(written, undefined, 'the informer stopped listening for writes');
});

test('a watch resumed for its silence that stays silent is allowed twice the silence each time, until an event comes', async () => {
  const started: number[] = [];
  let emit: ((ev: unknown) => void) | undefined;
  const client = {
    list: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
    watch: (_rt: unknown, opts: { signal: AbortSignal }, onEvent: (ev: unknown) => void) => {
      started.push(performance.now());
      emit = onEvent;
      return openUntilAborted(opts.signal);
    },
  } as unknown as KubeClient;
  // The reasons the informer logs for each reconnect say the silence it allowed.
  const reasons: string[] = [];
  const lines = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const reason = (JSON.parse(line) as { reason?: string }).reason;
        if (reason) reasons.push(reason);
      }
      done();
    },
  });
  const afterMs = 100;
  const inf = new Informer(client, Things, {
    watchTimeoutSeconds: 600,
    idleTimeoutMs: 60_000,
    quietWhileBusy: { busy: () => true, afterMs },
    log: createLogger({ level: 'debug', destination: lines }),
  });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  try {
    await waitFor(() => started.length >= 4, { timeoutMs: 10_000, message: 'three reconnects of the silent watch' });
    const at = (i: number) => started[i] ?? Number.NaN;
    // The check counts from when the informer last heard the watch, a few synchronous steps before the fake
    // is called: each gap is at least the silence allowed, less that slice (20 ms of slack for a GC pause).
    const [g1, g2, g3] = [at(1) - at(0), at(2) - at(1), at(3) - at(2)];
    assert.ok(g1 >= afterMs - 20 && g2 >= 2 * afterMs - 20 && g3 >= 4 * afterMs - 20, `gaps ${g1}, ${g2}, ${g3} ms`);
    // An event: the kind is not silent after all, and the next silence allowed is afterMs again.
    emit?.({ type: 'ADDED', object: { metadata: { name: 'x', resourceVersion: '2' } } });
    await waitFor(() => reasons.length >= 4, { timeoutMs: 10_000, message: 'the watch resumed after the event' });
    assert.deepEqual(
      reasons.slice(0, 4),
      ['0.1s', '0.2s', '0.4s', '0.1s'].map((s) => `silent for ${s} while work is under way`),
    );
  } finally {
    ac.abort();
    await run;
  }
});

test('a watch the server ends with an error event (a 500, not 410) lists again, and watches from the new list', async () => {
  let lists = 0;
  const watchedFrom: string[] = [];
  const client = {
    list: async () => {
      lists++;
      return { metadata: { resourceVersion: String(100 * lists) }, items: [] };
    },
    watch: async (_rt: unknown, opts: { signal: AbortSignal; resourceVersion?: string }, onEvent: (ev: unknown) => void) => {
      watchedFrom.push(opts.resourceVersion ?? '');
      if (watchedFrom.length === 1) {
        // As kube-apiserver without its watch cache says of an event whose previous value etcd compacted.
        onEvent({
          type: 'ERROR',
          object: { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd event received with PrevKv=nil' },
        });
        return;
      }
      await openUntilAborted(opts.signal);
    },
  } as unknown as KubeClient;
  const inf = new Informer(client, Things, { watchTimeoutSeconds: 600, backoff: { initialMs: 1, maxMs: 1 } });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  try {
    await waitFor(() => watchedFrom.length === 2, { timeoutMs: 2000, message: 'a second watch' });
    assert.equal(lists, 2, 'listed again before the second watch');
    assert.deepEqual(watchedFrom, ['100', '200'], 'the second watch starts from the new list, past the event');
    assert.equal(inf.stats.relistsOnError, 1);
  } finally {
    ac.abort();
    await run;
  }
});
