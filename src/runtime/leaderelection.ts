import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage, isConflict, isNotFound } from '../kube/errors.ts';
import { type Lease, Leases } from '../kube/resources.ts';
import { sleep } from './concurrency.ts';

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease is valid without renewal; non-leaders wait this long before taking over. */
  leaseDurationMs: number;
  /**
   * A leader that could not renew for this long gives up leadership. Shorter than the lease duration, so
   * that it has stopped before a standby may judge the lease expired.
   */
  renewDeadlineMs: number;
  /** Between attempts to acquire or renew. */
  retryPeriodMs: number;
}

export const defaultLeaderElection = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/**
 * The two clocks leader election reads. Every duration (renew deadline, expiry of an observed lease) is
 * measured on the monotonic one, which no NTP step or manual `date` change moves; the wall clock only
 * stamps the Lease's acquireTime and renewTime, which are for humans and other tools to read.
 */
export interface ElectionClocks {
  /** Milliseconds from an arbitrary origin, never going back. */
  monotonic(): number;
  /** Milliseconds since the epoch. */
  wall(): number;
}

export const systemClocks: ElectionClocks = { monotonic: () => performance.now(), wall: () => Date.now() };

/** What `run` answers: the outer signal stopped it, or the lease could not be renewed in time. */
export type ElectionOutcome = 'stopped' | 'lost';

const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/**
 * Lease-based leader election, as client-go does it. Whether another holder's lease expired is judged by
 * when *we* last saw its record change, on our monotonic clock, never by comparing a clock with the
 * holder's timestamps.
 */
export class LeaderElector {
  /** The holder's record as last read, and when (monotonic) it was first seen that way. */
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  /** The Lease as our last write left it, and when (monotonic): a leader renews it in one request while it is valid. */
  private held: { lease: Lease; at: number } | undefined;
  /** When (monotonic) our last successful write of the lease was sent. */
  private renewedAt = Number.NEGATIVE_INFINITY;

  private readonly client: KubeClient;
  private readonly config: LeaderElectionConfig;
  private readonly log: Logger | undefined;
  private readonly clocks: ElectionClocks;

  constructor(client: KubeClient, config: LeaderElectionConfig, log?: Logger, clocks: ElectionClocks = systemClocks) {
    if (config.renewDeadlineMs >= config.leaseDurationMs)
      throw new Error(
        `leader election: the renew deadline (${config.renewDeadlineMs} ms) must be shorter than the lease duration (${config.leaseDurationMs} ms), or a leader could still be working when a standby takes over`,
      );
    this.client = client;
    this.config = config;
    this.log = log;
    this.clocks = clocks;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until leadership is won, runs `lead(signal)` while it holds the lease, and answers when
   * leadership ends: the outer signal aborted (the lead work is awaited, then the lease released for a
   * fast hand-over), or the lease was not renewed within the renew deadline ('lost': the lead signal
   * aborts at that moment and the answer comes at once, without waiting for the lead work, whose requests
   * may hang on a dead connection; the caller must stop every writer, as controller-runtime exits).
   */
  async run(signal: AbortSignal, lead: (leadSignal: AbortSignal) => Promise<void>): Promise<ElectionOutcome> {
    let renewedAt = 0;
    while (!signal.aborted) {
      const attemptAt = this.clocks.monotonic();
      if (await this.tryAcquireOrRenew(AbortSignal.any([signal, AbortSignal.timeout(this.config.renewDeadlineMs)]))) {
        renewedAt = attemptAt;
        break;
      }
      await sleep(this.config.retryPeriodMs, signal);
    }
    if (signal.aborted) return 'stopped';
    this.leading = true;
    this.log?.info({ lease: `${this.config.namespace}/${this.config.name}`, identity: this.config.identity }, 'became leader');
    const leadController = new AbortController();
    const leadDone = lead(leadController.signal).catch((e) => this.log?.error({ err: errorMessage(e) }, 'leader work failed'));
    const outcome = await this.renewWhileLeading(signal, renewedAt);
    this.leading = false;
    leadController.abort(new Error(outcome === 'lost' ? 'leadership lost' : 'stopping'));
    if (outcome === 'lost') {
      this.log?.error(
        { lease: `${this.config.namespace}/${this.config.name}`, renewDeadlineMs: this.config.renewDeadlineMs },
        'leader election lost: the lease could not be renewed within the renew deadline',
      );
      return outcome;
    }
    await leadDone;
    await this.release();
    return outcome;
  }

  /**
   * Renews every retry period. As in client-go, all attempts after a renewal share one deadline: the
   * renewal's start (it may have landed any time after that) plus the renew deadline. A request still
   * hanging then is aborted and leadership is lost, so that this replica has stopped before any standby,
   * which waits a full lease duration from when it saw that renewal, can take over. Unlike client-go, an
   * attempt that hangs is given up while another still fits (below).
   */
  private async renewWhileLeading(signal: AbortSignal, renewedAt: number): Promise<ElectionOutcome> {
    const { renewDeadlineMs, retryPeriodMs } = this.config;
    let lastRenewal = renewedAt;
    let lastAttempt = renewedAt;
    /** How long the last renewal that succeeded took to be answered (0: none timed yet). */
    let answeredIn = 0;
    let retryNow = false;
    while (!signal.aborted) {
      const left = () => lastRenewal + renewDeadlineMs - this.clocks.monotonic();
      // Attempts start a retry period apart, counted from the start of the one before: an API server that
      // answers in seconds leaves the next renewal as much of the deadline as a fast one does.
      if (!retryNow) await sleep(Math.max(0, Math.min(lastAttempt + retryPeriodMs - this.clocks.monotonic(), left())), signal);
      if (signal.aborted) break;
      if (left() <= 0) return 'lost';
      const attemptAt = this.clocks.monotonic();
      lastAttempt = attemptAt;
      // One attempt does not get all that is left while a second still fits: a renewal hung on a dead pooled
      // connection (black-holed: no error, no answer) is given up a retry period before the deadline, which
      // also closes the pool's idle connections (transport.ts), and tried again at once on a fresh one.
      // Without this a leader lost its lease to a single silent connection while the API server was fine.
      // But a server that answers slowly (seconds, as under load) is given all that is left when what a
      // second attempt would leave could not hold an answer as slow as its last one.
      const early = left() - retryPeriodMs;
      const budget = left() > 2 * retryPeriodMs && early >= 1.5 * answeredIn ? early : left();
      const renewed = await this.tryAcquireOrRenew(AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, Math.ceil(budget)))]));
      if (renewed) {
        lastRenewal = attemptAt;
        answeredIn = this.clocks.monotonic() - attemptAt;
      } else if (left() <= 0) return 'lost';
      retryNow = !renewed && this.clocks.monotonic() - attemptAt >= budget;
    }
    return 'stopped';
  }

  /** One attempt; answers whether we hold the lease afterwards. Its requests end when `signal` aborts. */
  async tryAcquireOrRenew(signal: AbortSignal = AbortSignal.timeout(this.config.renewDeadlineMs)): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.config;
    const now = this.clocks.monotonic();
    const wallNow = this.clocks.wall();
    const spec = (prev?: Lease['spec']): Lease['spec'] => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: prev?.holderIdentity === identity && prev.acquireTime ? prev.acquireTime : microTime(wallNow),
      renewTime: microTime(wallNow),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (prev?.holderIdentity && prev.holderIdentity !== identity ? 1 : 0),
    });
    const write = async (lease: Lease) => {
      const written = await this.client.update(Leases, { ...lease, spec: spec(lease.spec) }, { signal });
      this.renewedAt = now;
      return written;
    };
    // As client-go does: a leader whose lease is still valid renews the Lease it last wrote, without reading
    // it first (half the requests while idle). Its resourceVersion makes the write fail if anyone else wrote
    // since, and the full check below runs then.
    const held = this.held;
    this.held = undefined;
    if (this.leading && held && now - held.at < leaseDurationMs) {
      try {
        this.held = { lease: await write(held.lease), at: now };
        return true;
      } catch (e) {
        if (signal.aborted) return false;
        if (!isConflict(e)) this.log?.debug({ err: errorMessage(e) }, 'lease renewal from the last write failed; reading it');
      }
    }
    try {
      let lease: Lease;
      try {
        lease = await this.client.get(Leases, name, namespace, signal);
      } catch (e) {
        if (!isNotFound(e)) throw e;
        const created = await this.client.create(Leases, { metadata: { name, namespace }, spec: spec() }, { signal });
        this.renewedAt = now;
        this.observed = { record: identity, at: this.clocks.monotonic() };
        this.held = { lease: created, at: now };
        return true;
      }
      const holder = lease.spec?.holderIdentity ?? '';
      const record = JSON.stringify([holder, lease.spec?.renewTime, lease.spec?.leaseTransitions]);
      if (this.observed?.record !== record) this.observed = { record, at: now };
      const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
      const expired = this.observed.at + durationMs <= now;
      // A leader whose last renewal was sent less than a renew deadline before this read answered knows that
      // no standby can have taken the lease since: a standby waits a lease duration after it sees a renewal.
      // Another holder's record is then the store gone back (etcd restored from a backup that named a holder
      // since gone) or a hand edit, not an election: the leader keeps leading and writes its record over it,
      // guarded by the resourceVersion it just read. Yielding instead would leave the cluster without a leader
      // until that record, which nobody renews, expires.
      const rolledBack = this.leading && this.clocks.monotonic() - this.renewedAt < this.config.renewDeadlineMs;
      if (holder && holder !== identity && !expired && !rolledBack) return false;
      if (holder && holder !== identity && !expired) {
        this.log?.warn(
          { holder },
          'the lease names another holder although this leader renewed it within its renew deadline (etcd restored from a backup?); writing it again',
        );
        // Every cache may hold what the restore took back (KubeClient.relistAll).
        this.client.relistAll();
      }
      this.held = { lease: await write(lease), at: now };
      return true;
    } catch (e) {
      if (!isConflict(e)) this.log?.warn({ err: errorMessage(e) }, 'lease acquire/renew failed');
      return false;
    }
  }

  /** Gives the lease up so that a standby takes over at once instead of after leaseDuration. */
  private async release(): Promise<void> {
    try {
      const signal = AbortSignal.timeout(this.config.renewDeadlineMs);
      const lease = await this.client.get(Leases, this.config.name, this.config.namespace, signal);
      if (lease.spec?.holderIdentity !== this.config.identity) return;
      await this.client.update(
        Leases,
        { ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime(this.clocks.wall()) } },
        { signal },
      );
      this.log?.info('released the lease');
    } catch (e) {
      this.log?.warn({ err: errorMessage(e) }, 'could not release the lease');
    }
  }
}
