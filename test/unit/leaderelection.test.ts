import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { Lease } from '../../src/kube/resources.ts';
import { type Operator, runRestartingOnLostLease } from '../../src/operator.ts';
import { LeaderElector } from '../../src/runtime/leaderelection.ts';
import { LeadershipLostError } from '../../src/runtime/manager.ts';
import { waitFor } from '../support/wait.ts';

/** One Lease kept as an API server would: a resourceVersion that every write moves, 409 for a stale one. */
function leaseServer() {
  let stored: Lease | undefined;
  let rv = 0;
  const calls: string[] = [];
  const client = {
    relistAll: () => calls.push('RELIST'),
    get: async () => {
      calls.push('GET');
      if (!stored) throw new ApiError(404, 'NotFound', 'not found');
      return structuredClone(stored);
    },
    create: async (_rt: unknown, lease: Lease) => {
      calls.push('POST');
      stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++rv) } };
      return structuredClone(stored);
    },
    update: async (_rt: unknown, lease: Lease) => {
      calls.push('PUT');
      if (lease.metadata.resourceVersion !== stored?.metadata.resourceVersion)
        throw new ApiError(409, 'Conflict', 'the object has been modified');
      stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++rv) } };
      return structuredClone(stored);
    },
  };
  /** Another replica takes the lease over. */
  const takeOver = (holder: string) => {
    stored = {
      ...(stored as Lease),
      spec: { ...stored?.spec, holderIdentity: holder },
      metadata: { ...stored?.metadata, resourceVersion: String(++rv) },
    };
  };
  return { client, calls, takeOver, holder: () => stored?.spec?.holderIdentity };
}

const config = { namespace: 'ns', name: 'lease', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** An elector over `client` that leads until the test ends: once it leads, itself and its outcome so far. */
async function leading(client: unknown, timings: Partial<typeof config>, t: { after: (fn: () => void) => void }) {
  const elector = new LeaderElector(client as KubeClient, { ...config, ...timings });
  const stop = new AbortController();
  t.after(() => stop.abort());
  let result: string | undefined;
  void elector
    .run(stop.signal, (leadSignal) => new Promise<void>((r) => leadSignal.addEventListener('abort', () => r(), { once: true })))
    .then((o) => {
      result = o;
    });
  await waitFor(() => elector.isLeader, { timeoutMs: 10_000, message: 'leading' });
  return { elector, outcome: () => result };
}

describe('leader election', () => {
  test('a leader renews its valid lease with one write; when someone else wrote since, it reads the lease and yields', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    // The elector uses get, create and update only.
    const elector = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(server.calls.splice(0), ['GET', 'POST'], 'the lease is made');
    (elector as unknown as { leading: boolean }).leading = true;

    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(server.calls.splice(0), ['PUT', 'PUT'], 'each renewal is one write of the lease as last written');
    assert.equal(server.holder(), 'me');

    // A renew deadline without a renewal: a standby may have taken over legitimately since.
    time.t.mono += config.renewDeadlineMs;
    server.takeOver('other');
    assert.equal(await elector.tryAcquireOrRenew(), false, 'a lease another holder renewed is not taken');
    assert.deepEqual(server.calls.splice(0), ['PUT', 'GET'], 'the write conflicts, the lease is read, and left alone');
    assert.equal(server.holder(), 'other');
    (elector as unknown as { leading: boolean }).leading = false;
    assert.equal(await elector.tryAcquireOrRenew(), false);
    assert.deepEqual(server.calls.splice(0), ['GET'], 'no longer holding it, it reads before any write');
  });

  test('etcd restored from a backup naming another holder: a leader that renewed within its renew deadline keeps the lease; a standby waits', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    const leader = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    const standby = new LeaderElector(server.client as unknown as KubeClient, { ...config, identity: 'standby' }, undefined, time.clocks);
    assert.equal(await leader.tryAcquireOrRenew(), true);
    (leader as unknown as { leading: boolean }).leading = true;
    assert.equal(await standby.tryAcquireOrRenew(), false);
    time.t.mono += 2_000;
    assert.equal(await leader.tryAcquireOrRenew(), true);
    // The restored Lease names the process that led when the backup was taken, long gone.
    server.takeOver('gone-since');
    time.t.mono += config.renewDeadlineMs - 1;
    server.calls.splice(0);
    assert.equal(await leader.tryAcquireOrRenew(), true, 'no standby can have taken it since the last renewal: the leader writes over it');
    // It also tells every cache to list again: what they hold may be what the restore took back.
    assert.deepEqual(server.calls.splice(0), ['PUT', 'GET', 'RELIST', 'PUT']);
    assert.equal(server.holder(), 'me');
    time.t.mono += config.leaseDurationMs;
    assert.equal(await standby.tryAcquireOrRenew(), false, 'the standby saw the record change: it keeps waiting');
    assert.equal(server.holder(), 'me');
  });
});

/**
 * Simulated time: `mono` is what a monotonic clock reads; the wall clock is mono plus a step the test
 * changes (NTP or an admin setting the date). Date.now follows the wall clock while a test runs, so that
 * code reading it directly sees the steps too.
 */
function steppedClocks() {
  const t = { mono: 1_000, step: 0 };
  const realNow = Date.now;
  const wall = () => 1_800_000_000_000 + t.mono + t.step;
  Date.now = wall;
  return { t, clocks: { monotonic: () => t.mono, wall }, restore: () => (Date.now = realNow) };
}

const MINUTES = 60_000;

describe('leader election measures durations on the monotonic clock, whatever the wall clock does', () => {
  test('a standby does not take a valid lease early when the wall clock jumps forward', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    const other = new LeaderElector(server.client as unknown as KubeClient, { ...config, identity: 'other' }, undefined, time.clocks);
    assert.equal(await other.tryAcquireOrRenew(), true);
    const standby = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    assert.equal(await standby.tryAcquireOrRenew(), false, 'the lease is held');
    time.t.mono += 1_000;
    time.t.step += 5 * MINUTES;
    assert.equal(await standby.tryAcquireOrRenew(), false, 'one second after it saw the renewal, the lease is still valid');
    assert.equal(server.holder(), 'other');
  });

  test('a standby still takes an expired lease when the wall clock jumps back', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    const other = new LeaderElector(server.client as unknown as KubeClient, { ...config, identity: 'other' }, undefined, time.clocks);
    assert.equal(await other.tryAcquireOrRenew(), true);
    const standby = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    assert.equal(await standby.tryAcquireOrRenew(), false, 'the lease is held');
    time.t.step -= 5 * MINUTES;
    time.t.mono += config.leaseDurationMs - 1;
    assert.equal(await standby.tryAcquireOrRenew(), false, 'not yet a lease duration since it saw the renewal');
    time.t.mono += 1;
    assert.equal(await standby.tryAcquireOrRenew(), true, 'a lease duration after it saw the last renewal, it is expired');
    assert.equal(server.holder(), 'me');
  });

  test('the Lease carries wall-clock times for other readers', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    let written: Lease | undefined;
    const update = server.client.update;
    server.client.update = async (rt, lease) => (written = await update(rt, lease));
    const elector = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    time.t.step -= 5 * MINUTES;
    (elector as unknown as { leading: boolean }).leading = true;
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.equal(written?.spec?.renewTime, new Date(time.clocks.wall()).toISOString().replace('Z', '000Z'));
  });
});

describe('a leader that cannot renew gives up by its renew deadline, and answers at once', () => {
  // Real timers, short durations: the renew deadline must hold against a request that never answers.
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

  /** The lease server, but once `cut` every request hangs until its signal aborts (a partition). */
  function partitionableServer() {
    const server = leaseServer();
    const state = { cut: false };
    const hang = (signal?: AbortSignal) =>
      new Promise<never>((_, reject) => {
        if (signal?.aborted) reject(signal.reason);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    const client = {
      get: (_rt: unknown, _name: string, _ns: string, signal?: AbortSignal) => (state.cut ? hang(signal) : server.client.get()),
      create: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) =>
        state.cut ? hang(opts?.signal) : server.client.create(rt, lease),
      update: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) =>
        state.cut ? hang(opts?.signal) : server.client.update(rt, lease),
    };
    return { server, client, state };
  }

  for (const step of [0, 5 * MINUTES, -5 * MINUTES]) {
    test(`requests hang from a moment on (wall clock stepped by ${step / MINUTES} minutes): leadership is lost within the renew deadline`, async (t) => {
      const realNow = Date.now;
      t.after(() => (Date.now = realNow));
      const { client, state } = partitionableServer();
      let lastRenewal = 0;
      let lostAt = 0;
      const update = client.update;
      client.update = async (rt, lease, opts) => {
        const sentAt = performance.now();
        const answer = await update(rt, lease, opts);
        lastRenewal = sentAt;
        return answer;
      };
      const elector = new LeaderElector(client as unknown as KubeClient, { ...config, ...timings });
      const stop = new AbortController();
      t.after(() => stop.abort());
      const outcome = elector.run(stop.signal, async (leadSignal) => {
        await new Promise<void>((resolve) => leadSignal.addEventListener('abort', () => resolve(), { once: true }));
        lostAt = performance.now();
        // Lead work that does not stop promptly (a write hanging on a dead connection) must not delay the answer.
        await new Promise(() => {});
      });
      await waitFor(() => elector.isLeader && lastRenewal > 0, { timeoutMs: 10_000, message: 'leading, renewed once' });
      state.cut = true;
      const wallNow = Date.now();
      Date.now = () => wallNow + step;
      const answered = await Promise.race([outcome, new Promise((r) => setTimeout(() => r('no answer'), 20_000))]);
      assert.equal(answered, 'lost');
      assert.equal(elector.isLeader, false);
      // Its last renewal may have reached the server just as it was sent: a standby may take over a lease
      // duration after that, so leadership must end before. (The margin is a loaded machine's late timer.)
      const heldFor = lostAt - lastRenewal;
      assert.ok(heldFor < timings.leaseDurationMs, `led ${Math.round(heldFor)} ms after the last renewal was sent`);
    });
  }
});

describe('a renewal that hangs on a dead connection is given up in time for another', () => {
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

  test('one silent request (a black-holed pooled connection): the leader renews on the next attempt and keeps leading', async (t) => {
    const server = leaseServer();
    const state = { hangs: 0 };
    const hang = (signal?: AbortSignal) =>
      new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const silent = () => state.hangs > 0 && state.hangs-- > 0;
    const client = {
      get: (_rt: unknown, _name: string, _ns: string, signal?: AbortSignal) => (silent() ? hang(signal) : server.client.get()),
      create: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) =>
        silent() ? hang(opts?.signal) : server.client.create(rt, lease),
      update: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) =>
        silent() ? hang(opts?.signal) : server.client.update(rt, lease),
    };
    const { elector, outcome } = await leading(client, timings, t);
    state.hangs = 1;
    const writes = () => server.calls.filter((c) => c === 'PUT').length;
    const before = writes();
    // Three renew deadlines: a lost leadership would have answered by now.
    await new Promise((r) => setTimeout(r, 3 * timings.renewDeadlineMs));
    assert.equal(state.hangs, 0, 'the silent request was made');
    assert.equal(outcome(), undefined, 'leadership not lost');
    assert.equal(elector.isLeader, true);
    assert.ok(writes() > before + 1, 'renewing again after the silent request');
  });
});

describe('a slow API server (every answer late by nearly half the renew deadline) does not cost the lease', () => {
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
  // The chaos run's apiSlow fault: 2.3 s each way, 4.6 s of a 10 s renew deadline.
  const lateMs = 0.46 * timings.renewDeadlineMs;

  test('the leader renews every answer, back to back, and keeps leading', async (t) => {
    const server = leaseServer();
    const state = { slow: false };
    const late = async <T>(answer: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
      if (state.slow)
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, lateMs);
          signal?.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              reject(signal.reason);
            },
            { once: true },
          );
        });
      return answer();
    };
    const client = {
      get: (_rt: unknown, _name: string, _ns: string, signal?: AbortSignal) => late(() => server.client.get(), signal),
      create: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) => late(() => server.client.create(rt, lease), opts?.signal),
      update: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) => late(() => server.client.update(rt, lease), opts?.signal),
    };
    const { elector, outcome } = await leading(client, timings, t);
    state.slow = true;
    const writes = () => server.calls.filter((c) => c === 'PUT').length;
    const before = writes();
    // Three renew deadlines: a lost leadership would have answered by now.
    await new Promise((r) => setTimeout(r, 3 * timings.renewDeadlineMs));
    assert.equal(outcome(), undefined, 'leadership not lost');
    assert.equal(elector.isLeader, true);
    assert.ok(writes() >= before + 4, `renewed through the slow answers (${writes() - before} renewals)`);
  });
});

describe('an operator that lost its lease is restarted, not left to campaign again', () => {
  const fakeOperator = (run: Operator['run']) => ({ run }) as Operator;

  test('osc start runs a new operator in its place, and stops when told', async () => {
    const stop = new AbortController();
    const runs: string[] = [];
    const first = fakeOperator(async () => {
      runs.push('first');
      throw new LeadershipLostError('ns', 'lease');
    });
    const second = fakeOperator(async (signal) => {
      runs.push('second');
      stop.abort();
      assert.equal(signal.aborted, true);
    });
    const restarted: Operator[] = [];
    await runRestartingOnLostLease(first, stop.signal, async (previous, lost) => {
      assert.equal(previous, first);
      assert.match(lost.message, /leader election lost: the lease ns\/lease could not be renewed/);
      restarted.push(second);
      return second;
    });
    assert.deepEqual(runs, ['first', 'second']);
    assert.equal(restarted.length, 1);
  });

  test('any other failure is not restarted', async () => {
    const failed = fakeOperator(async () => {
      throw new Error('no API server');
    });
    await assert.rejects(
      runRestartingOnLostLease(failed, new AbortController().signal, async () => assert.fail('restarted')),
      /no API server/,
    );
  });
});
