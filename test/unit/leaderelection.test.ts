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
    dropIdleConnections: (): void => {
      calls.push('DROP-IDLE');
    },
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
    /** A JSON patch as the API server applies it: atomically to the stored Lease; a failed `test` refuses it (422). */
    patch: async (_rt: unknown, _name: string, ops: { op: string; path: string; value?: unknown }[]) => {
      calls.push('PATCH');
      if (!stored) throw new ApiError(404, 'NotFound', 'not found');
      const spec = { ...stored.spec } as Record<string, unknown>;
      for (const o of ops) {
        const field = o.path.replace('/spec/', '');
        if (o.op === 'test' && spec[field] !== o.value) throw new ApiError(422, 'Invalid', `test failed: ${o.path}`);
        if (o.op === 'add' || o.op === 'replace') spec[field] = o.value;
      }
      stored = { ...stored, spec, metadata: { ...stored.metadata, resourceVersion: String(++rv) } } as Lease;
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

/**
 * The lease server behind a gate: every request first waits for `gate(signal)` (a request that hangs, or
 * answers late), and rejects with the signal's reason when it aborts meanwhile.
 */
function gated(server: ReturnType<typeof leaseServer>, gate: (signal?: AbortSignal) => Promise<void>) {
  const c = server.client;
  return {
    dropIdleConnections: (): void => {
      server.calls.push('DROP-IDLE');
    },
    get: (_rt: unknown, _name: string, _ns: string, signal?: AbortSignal) => gate(signal).then(() => c.get()),
    create: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) => gate(opts?.signal).then(() => c.create(rt, lease)),
    update: (rt: unknown, lease: Lease, opts?: { signal?: AbortSignal }) => gate(opts?.signal).then(() => c.update(rt, lease)),
    patch: (rt: unknown, name: string, ops: { op: string; path: string; value?: unknown }[], opts?: { signal?: AbortSignal }) =>
      gate(opts?.signal).then(() => c.patch(rt, name, ops)),
  };
}

/** Waits `ms` (0: not at all), or rejects when `signal` aborts first; Infinity never answers. */
function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    if (ms <= 0) return resolve();
    const timer = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
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
  test('a leader renews with one request, a patch that holds only while the Lease names it; refused, it reads the lease and yields', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    const elector = new LeaderElector(server.client as unknown as KubeClient, config, undefined, time.clocks);
    const renew = () =>
      (elector as unknown as { renewByPatch: (s: AbortSignal) => Promise<boolean> }).renewByPatch(AbortSignal.timeout(10_000));
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(server.calls.splice(0), ['GET', 'POST'], 'the lease is made');
    (elector as unknown as { leading: boolean }).leading = true;

    assert.equal(await renew(), true);
    assert.equal(await renew(), true);
    assert.deepEqual(server.calls.splice(0), ['PATCH', 'PATCH'], 'each renewal is one write, never read first');
    assert.equal(server.holder(), 'me');

    // A renew deadline without a renewal: a standby may have taken over legitimately since.
    time.t.mono += config.renewDeadlineMs;
    server.takeOver('other');
    assert.equal(await renew(), false, 'a lease another holder renewed is not taken');
    assert.deepEqual(server.calls.splice(0), ['PATCH', 'GET'], 'the patch is refused, the lease is read, and left alone');
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
    const renew = () =>
      (leader as unknown as { renewByPatch: (s: AbortSignal) => Promise<boolean> }).renewByPatch(AbortSignal.timeout(10_000));
    time.t.mono += 2_000;
    assert.equal(await renew(), true);
    // The restored Lease names the process that led when the backup was taken, long gone.
    server.takeOver('gone-since');
    time.t.mono += config.renewDeadlineMs - 1;
    server.calls.splice(0);
    assert.equal(await renew(), true, 'no standby can have taken it since the last renewal: the leader writes over it');
    // It also tells every cache to list again: what they hold may be what the restore took back.
    assert.deepEqual(server.calls.splice(0), ['PATCH', 'GET', 'RELIST', 'PUT']);
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

describe('a standby judges expiry from what it saw, when it saw it', () => {
  test('a renewal seen in a late answer counts from the answer, not from when the read was sent', async (t) => {
    const time = steppedClocks();
    t.after(time.restore);
    const server = leaseServer();
    const other = new LeaderElector(server.client as unknown as KubeClient, { ...config, identity: 'other' }, undefined, time.clocks);
    assert.equal(await other.tryAcquireOrRenew(), true);
    // The standby's read is 8 s in flight; the holder renews 6 s after it was sent, before it lands.
    const state = { slow: true };
    const slowRead = {
      ...server.client,
      get: async () => {
        if (state.slow) {
          time.t.mono += 6_000;
          assert.equal(await other.tryAcquireOrRenew(), true);
          time.t.mono += 2_000;
        }
        return server.client.get();
      },
    };
    const sentAt = time.t.mono;
    const standby = new LeaderElector(slowRead as unknown as KubeClient, config, undefined, time.clocks);
    assert.equal(await standby.tryAcquireOrRenew(), false, 'the lease is held');
    state.slow = false;
    // The holder may lead until its renewal's sending plus the renew deadline: 16 s after the read was sent.
    time.t.mono = sentAt + 6_000 + config.renewDeadlineMs - 500;
    assert.equal(await standby.tryAcquireOrRenew(), false, 'the holder may still be leading: not taken');
    assert.equal(server.holder(), 'other');
    time.t.mono = sentAt + 8_000 + config.leaseDurationMs;
    assert.equal(await standby.tryAcquireOrRenew(), true, 'a lease duration after the answer that showed the renewal, it is taken');
  });

  test('a read hung on a dead connection is given up after twice the last answer (a retry period at least), not a renew deadline', async (t) => {
    const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
    const server = leaseServer();
    await new LeaderElector(server.client as unknown as KubeClient, { ...config, ...timings, identity: 'other' }).tryAcquireOrRenew();
    const state = { silent: 0, gaveUpAfter: [] as number[] };
    const client = gated(server, (signal) => {
      if (state.silent === 0) return Promise.resolve();
      state.silent--;
      const sent = performance.now();
      return wait(Number.POSITIVE_INFINITY, signal).catch((e) => {
        state.gaveUpAfter.push(performance.now() - sent);
        throw e;
      });
    });
    const standby = new LeaderElector(client as unknown as KubeClient, { ...config, ...timings });
    const stop = new AbortController();
    t.after(() => stop.abort());
    const outcome: { failed?: unknown } = {};
    standby
      .run(stop.signal, async () => {})
      .catch((e) => {
        outcome.failed = e;
      });
    await waitFor(() => server.calls.filter((c) => c === 'GET').length >= 2, { timeoutMs: 10_000, message: 'the standby reads the lease' });
    state.silent = 1;
    await waitFor(() => state.gaveUpAfter.length === 1, { timeoutMs: 10_000, message: 'the silent read given up' });
    assert.ok(
      (state.gaveUpAfter[0] ?? 0) < timings.renewDeadlineMs,
      `given up after ${Math.round(state.gaveUpAfter[0] ?? 0)} ms (renew deadline ${timings.renewDeadlineMs} ms)`,
    );
    // It goes on reading (the next wait is longer, in whole milliseconds), and it did not fail.
    const reads = server.calls.filter((c) => c === 'GET').length;
    await waitFor(() => server.calls.filter((c) => c === 'GET').length >= reads + 2 || outcome.failed !== undefined, {
      timeoutMs: 10_000,
      message: 'two more reads',
    });
    assert.equal(outcome.failed, undefined, 'the standby did not fail');
  });
});

describe('a request hung on a dead pooled connection is followed at once by one on a fresh connection', () => {
  // Long retry periods, so that "at once" and "a retry period later" are seconds apart on a loaded machine.
  const timings = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 4_000 };

  test('a standby gives a hung read up after a retry period, and reads again at once, not a retry period later', async (t) => {
    const server = leaseServer();
    await new LeaderElector(server.client as unknown as KubeClient, { ...config, ...timings, identity: 'other' }).tryAcquireOrRenew();
    const state = { silent: 0, gaveUpAt: 0, sentAt: 0, reads: [] as number[] };
    const client = gated(server, (signal) => {
      state.reads.push(performance.now());
      if (state.silent === 0) return Promise.resolve();
      state.silent--;
      state.sentAt = performance.now();
      return wait(Number.POSITIVE_INFINITY, signal).catch((e) => {
        state.gaveUpAt = performance.now();
        throw e;
      });
    });
    const standby = new LeaderElector(client as unknown as KubeClient, { ...config, ...timings });
    const stop = new AbortController();
    t.after(() => stop.abort());
    void standby.run(stop.signal, async () => {});
    await waitFor(() => state.reads.length >= 1, { timeoutMs: 20_000, message: 'the standby reads the lease' });
    state.silent = 1;
    await waitFor(() => state.gaveUpAt > 0 && state.reads.some((at) => at > state.gaveUpAt), {
      timeoutMs: 30_000,
      message: 'the hung read given up, and another read sent',
    });
    const waited = state.gaveUpAt - state.sentAt;
    assert.ok(waited < 1.5 * timings.retryPeriodMs, `given up after ${Math.round(waited)} ms (retry period ${timings.retryPeriodMs} ms)`);
    const next = (state.reads.find((at) => at > state.gaveUpAt) ?? 0) - state.gaveUpAt;
    assert.ok(next < timings.retryPeriodMs / 2, `the next read ${Math.round(next)} ms after (retry period ${timings.retryPeriodMs} ms)`);
  });

  test('a leader whose renewals hang closes the idle connections after a retry period and renews again at once', async (t) => {
    const server = leaseServer();
    const state = { dead: false, deadSince: 0 };
    const client = gated(server, (signal) => wait(state.dead ? Number.POSITIVE_INFINITY : 0, signal));
    const { elector, outcome } = await leading(client, timings, t);
    const landed: number[] = [];
    const patch = client.patch;
    client.patch = async (rt, name, ops, opts) => {
      const answer = await patch(rt, name, ops, opts);
      landed.push(performance.now());
      return answer;
    };
    client.dropIdleConnections = () => {
      server.calls.push('DROP-IDLE');
      state.dead = false;
    };
    // Just after a renewal: the next one, a retry period later, is the first to hang.
    const before = landed.length;
    await waitFor(() => landed.length > before, { timeoutMs: 20_000, message: 'a renewal' });
    state.dead = true;
    state.deadSince = performance.now();
    await waitFor(() => landed.some((at) => at > state.deadSince), { timeoutMs: 30_000, message: 'a renewal after the black hole' });
    // The hung renewal was sent a retry period after the black hole began; the one that landed, a retry
    // period after that at most (the suspicion), not two (the suspicion at twice a retry period).
    const after = (landed.find((at) => at > state.deadSince) ?? 0) - state.deadSince;
    assert.ok(after < 2.5 * timings.retryPeriodMs, `renewed ${Math.round(after)} ms after the black hole began`);
    assert.equal(outcome(), undefined, 'leadership not lost');
    assert.equal(elector.isLeader, true);
  });
});

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

describe('a leader that cannot renew gives up by its renew deadline, without waiting for its lead work', () => {
  // Real timers, short durations: the renew deadline must hold against a request that never answers.
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

  /** The lease server, but once `cut` every request hangs until its signal aborts (a partition). */
  function partitionableServer() {
    const server = leaseServer();
    const state = { cut: false };
    const client = gated(server, (signal) => wait(state.cut ? Number.POSITIVE_INFINITY : 0, signal));
    return { server, client, state };
  }

  for (const step of [0, 5 * MINUTES, -5 * MINUTES]) {
    test(`requests hang from a moment on (wall clock stepped by ${step / MINUTES} minutes): leadership is lost within the renew deadline`, async (t) => {
      const realNow = Date.now;
      t.after(() => (Date.now = realNow));
      const { client, state } = partitionableServer();
      let lastRenewal = 0;
      let lostAt = 0;
      const patch = client.patch;
      client.patch = async (rt, name, ops, opts) => {
        const sentAt = performance.now();
        const answer = await patch(rt, name, ops, opts);
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

describe('a leader whose renewals are refused with errors tries again sooner than a retry period', () => {
  // Long enough that a quarter of a retry period and a whole one are far apart on a loaded machine.
  const timings = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_600 };

  test('an API server refusing every request until just before the deadline (a restart): the leader keeps the lease', async (t) => {
    const server = leaseServer();
    const state = { refuseUntil: 0, lastRenewal: 0 };
    const client = {
      ...gated(server, () => Promise.resolve()),
      patch: async (rt: unknown, name: string, ops: { op: string; path: string; value?: unknown }[]) => {
        const sentAt = performance.now();
        if (sentAt < state.refuseUntil) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
        const answer = await server.client.patch(rt, name, ops);
        state.lastRenewal = sentAt;
        return answer;
      },
      get: async () => {
        if (performance.now() < state.refuseUntil) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
        return server.client.get();
      },
    };
    const { elector, outcome } = await leading(client, timings, t);
    await waitFor(() => state.lastRenewal > 0, { timeoutMs: 10_000, message: 'renewed once' });
    const renewed = state.lastRenewal;
    // Back 3.3 s after that renewal was sent: after the renewal a retry period later (3.2 s) and before
    // the renew deadline (4 s).
    state.refuseUntil = renewed + 3_300;
    await waitFor(() => state.lastRenewal > state.refuseUntil || outcome() !== undefined, {
      timeoutMs: 20_000,
      message: 'renewed after the server came back, or leadership ended',
    });
    assert.equal(outcome(), undefined, 'still leading');
    assert.equal(elector.isLeader, true);
    assert.ok(state.lastRenewal - renewed < timings.renewDeadlineMs, `renewed ${Math.round(state.lastRenewal - renewed)} ms after`);
  });
});

describe('a leader that lost its lease gives it up if the Lease still names it', () => {
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

  test('renewals that land but are answered past the deadline: leadership is lost, then the Lease released for the standby', async (t) => {
    const server = leaseServer();
    const state = { late: false };
    const client = {
      ...gated(server, () => Promise.resolve()),
      // Once late, a renewal reaches the store at once and its answer comes long after the renew deadline.
      patch: async (rt: unknown, name: string, ops: { op: string; path: string; value?: unknown }[], opts?: { signal?: AbortSignal }) => {
        const answer = await server.client.patch(rt, name, ops);
        await wait(state.late ? 60_000 : 0, opts?.signal);
        return answer;
      },
    };
    const { elector, outcome } = await leading(client, timings, t);
    state.late = true;
    await waitFor(() => outcome() !== undefined, { timeoutMs: 20_000, message: 'leadership ended' });
    assert.equal(outcome(), 'lost');
    assert.equal(elector.isLeader, false);
    assert.equal(server.holder(), null, 'released: a standby takes over when it next reads');
  });

  test('a Lease another replica took meanwhile is left as it is', async (t) => {
    const server = leaseServer();
    const state = { hang: false };
    const releasing = (ops: { op: string; path: string }[]) => ops.some((o) => o.op !== 'test' && o.path === '/spec/holderIdentity');
    const client = {
      ...gated(server, () => Promise.resolve()),
      // Renewals hang (a dead connection); a release is answered.
      patch: async (rt: unknown, name: string, ops: { op: string; path: string; value?: unknown }[], opts?: { signal?: AbortSignal }) => {
        await wait(state.hang && !releasing(ops) ? Number.POSITIVE_INFINITY : 0, opts?.signal);
        return server.client.patch(rt, name, ops);
      },
    };
    const { outcome } = await leading(client, timings, t);
    state.hang = true;
    server.takeOver('other');
    const before = server.calls.length;
    await waitFor(() => outcome() !== undefined, { timeoutMs: 20_000, message: 'leadership ended' });
    assert.equal(outcome(), 'lost');
    assert.equal(server.holder(), 'other', 'the release, guarded by a test of the holder, was refused');
    assert.ok(server.calls.slice(before).includes('PATCH'), 'a release was tried');
  });
});

describe('a renewal hung on a dead pooled connection does not cost the lease', () => {
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

  test('pooled connections black-holed (no error, no answer) until the idle ones are closed: the leader renews on fresh ones and keeps leading', async (t) => {
    const server = leaseServer();
    const state = { dead: false };
    const client = gated(server, (signal) => wait(state.dead ? Number.POSITIVE_INFINITY : 0, signal));
    const { elector, outcome } = await leading(client, timings, t);
    client.dropIdleConnections = () => {
      server.calls.push('DROP-IDLE');
      state.dead = false;
    };
    const writes = () => server.calls.filter((c) => c === 'PATCH').length;
    const before = writes();
    state.dead = true;
    await waitFor(() => server.calls.includes('DROP-IDLE') && writes() > before + 2, {
      timeoutMs: 10_000,
      message: 'the idle connections closed, renewals answered again',
    });
    assert.equal(outcome(), undefined, 'leadership not lost');
    assert.equal(elector.isLeader, true);
  });
});

for (const late of [0.46, 0.7]) {
  describe(`a slow API server (every answer ${late * 100}% of the renew deadline late) does not cost the lease`, () => {
    const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
    // The chaos run's apiSlow fault: up to 3.1 s each way, 6.2 s of a 10 s renew deadline. Answered one after
    // the other, renewals that late cannot keep the lease: 0.7 fails unless they overlap.
    const lateMs = late * timings.renewDeadlineMs;

    test('renewals overlap, each one lands, and the leader keeps leading', async (t) => {
      const server = leaseServer();
      const state = { slow: false };
      const client = gated(server, (signal) => wait(state.slow ? lateMs : 0, signal));
      const { elector, outcome } = await leading(client, timings, t);
      state.slow = true;
      const writes = () => server.calls.filter((c) => c === 'PATCH').length;
      const before = writes();
      await waitFor(() => writes() >= before + 10 || outcome() !== undefined, {
        timeoutMs: 20_000,
        message: 'ten renewals, or an outcome',
      });
      assert.equal(outcome(), undefined, 'leadership not lost');
      assert.equal(elector.isLeader, true);
      assert.equal(server.holder(), 'me');
    });
  });
}

describe('a slow link, where a fresh connection costs twice an answer (its TLS handshake), does not cost the lease', () => {
  // A link 45% of the renew deadline slow each round trip: a request over a connection already open is
  // answered after that; one that finds none free opens another, whose handshake doubles it. Before the link
  // turned slow one connection was enough, so the renewals due while the first is in flight each open one.
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 400 };
  const lateMs = 0.45 * timings.renewDeadlineMs;

  test('a renewal answered after its successor was due is followed at once, over the connection now free', async (t) => {
    const server = leaseServer();
    const link = { slow: false, free: 1 };
    const client = gated(server, async (signal) => {
      if (!link.slow) return;
      const warm = link.free > 0;
      if (warm) link.free--;
      try {
        await wait(warm ? lateMs : 2 * lateMs, signal);
      } finally {
        link.free++;
      }
    });
    // Closing idle connections: those free now are gone.
    client.dropIdleConnections = () => {
      server.calls.push('DROP-IDLE');
      link.free = 0;
    };
    const { elector, outcome } = await leading(client, timings, t);
    link.slow = true;
    const writes = () => server.calls.filter((c) => c === 'PATCH').length;
    const before = writes();
    await waitFor(() => writes() >= before + 10 || outcome() !== undefined, { timeoutMs: 30_000, message: 'ten renewals, or an outcome' });
    assert.equal(outcome(), undefined, 'leadership not lost');
    assert.equal(elector.isLeader, true);
    assert.equal(server.holder(), 'me');
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
