import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage, isConflict, isNotFound } from '../kube/errors.ts';
import { type Lease, Leases } from '../kube/resources.ts';
import { sleep } from './concurrency.ts';
import type { LeaseTimings } from './leasetimings.ts';

/** The Lease, who campaigns for it, and its timings (leasetimings.ts). */
export interface LeaderElectionConfig extends LeaseTimings {
  namespace: string;
  name: string;
  identity: string;
}

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
   * aborts at that moment and the answer comes once a release of the lease has been tried, without waiting
   * for the lead work, whose requests may hang on a dead connection; the caller must stop every writer, as
   * controller-runtime exits).
   */
  async run(signal: AbortSignal, lead: (leadSignal: AbortSignal) => Promise<void>): Promise<ElectionOutcome> {
    const { renewDeadlineMs, retryPeriodMs } = this.config;
    let renewedAt = 0;
    /** How long the last answered attempt took. */
    let answeredIn = 0;
    while (!signal.aborted) {
      const attemptAt = this.clocks.monotonic();
      // A read hung on a dead pooled connection is given up once it has waited twice as long as the last
      // answer took (a retry period at least), which also closes the pool's idle connections: otherwise a
      // standby saw the leader's last renewal a renew deadline late and took over that much later.
      // Whole milliseconds: AbortSignal.timeout throws on a fraction (an answer time is one).
      const giveUpIn = Math.ceil(Math.min(renewDeadlineMs, Math.max(retryPeriodMs, 2 * answeredIn)));
      const givenUp = AbortSignal.timeout(giveUpIn);
      const won = await this.tryAcquireOrRenew(AbortSignal.any([signal, givenUp]));
      // One given up waits twice as long next time: a server that answers slowly is still heard.
      answeredIn = this.clocks.monotonic() - attemptAt;
      if (won) {
        renewedAt = attemptAt;
        break;
      }
      // Given up, it has waited a retry period already, and its successor goes on a fresh connection: at
      // once, so that a standby blinded by dead connections sees the lease before the link worsens further.
      if (!givenUp.aborted) await sleep(retryPeriodMs, signal);
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
      // The lead work has been told to stop. A Lease that still names this replica (a renewal that landed
      // but was answered past the deadline, or a link healed just too late) is given up, as client-go does
      // with ReleaseOnCancel: a standby then takes over when it next reads, not a lease duration after it
      // saw that last renewal. One request, for at most two retry periods: cut off from the API server, the
      // replica must still exit soon, for the standby may be this replica's own next start.
      await this.release(2 * this.config.retryPeriodMs);
      return outcome;
    }
    await leadDone;
    await this.release(this.config.renewDeadlineMs);
    return outcome;
  }

  /**
   * Renews every retry period. As in client-go, leadership lasts while a renewal succeeded within the renew
   * deadline, counted from when that renewal was *sent* (it may have landed any time after): past it, every
   * request in flight is aborted and leadership is lost, so that this replica has stopped before any
   * standby, which waits a full lease duration from when it saw that renewal, can take over.
   *
   * Unlike client-go, renewals do not wait for each other: one starts every retry period, whether or not
   * the ones before have been answered, and each may wait as long as leadership lasts. An API server that answers in
   * seconds (under load) would otherwise leave room for fewer renewals than the deadline needs: answers
   * 5.5 s late, one after the other, cost the lease with a 10 s deadline although every write landed. They
   * cannot conflict with each other because each is a JSON patch that holds only while the Lease still
   * names this replica (renewByPatch). A renewal unanswered for twice as long as the last answer took (a
   * retry period at least) may be hung on a dead pooled connection (black-holed: no error, no answer): the
   * pool's idle connections, presumed dead too, are closed then, and the next renewal starts at once on a
   * fresh one.
   */
  private async renewWhileLeading(signal: AbortSignal, renewedAt: number): Promise<ElectionOutcome> {
    const { renewDeadlineMs, retryPeriodMs } = this.config;
    let lastRenewal = renewedAt;
    /** How long the last answered renewal took (0: none yet). */
    let answeredIn = 0;
    const left = () => lastRenewal + renewDeadlineMs - this.clocks.monotonic();
    const inFlight = new AbortController();
    const attempts = AbortSignal.any([signal, inFlight.signal]);
    let wake = () => {};
    let nextAt = renewedAt + retryPeriodMs;
    const attempt = async () => {
      const at = this.clocks.monotonic();
      // Not sooner than the next renewal would start anyway, so that a slow but live link is not flooded;
      // at once rather than a retry period later, which a link that turned slow meanwhile (a fresh TLS
      // connection then costs several of its round trips) could leave too late for the deadline.
      const suspect = setTimeout(
        () => {
          this.client.dropIdleConnections();
          nextAt = Math.min(nextAt, this.clocks.monotonic());
          wake();
        },
        Math.max(retryPeriodMs, 2 * answeredIn),
      );
      // No deadline of its own: the renew deadline moves with every answer, and when it passes every
      // attempt in flight is aborted (below).
      const renewed = await this.renewByPatch(attempts);
      clearTimeout(suspect);
      // Not renewed, and not for want of time: refused with an error (an API server restarting, etcd not
      // ready) or by a Lease that names another holder. The next one goes a quarter of a retry period later,
      // so that a server back just before the deadline is heard before it. A retry period later, a server back
      // 0.3 s before the deadline cost the lease after an etcd restore.
      if (!renewed && !attempts.aborted) nextAt = Math.min(nextAt, this.clocks.monotonic() + retryPeriodMs / 4);
      if (renewed) {
        lastRenewal = Math.max(lastRenewal, at);
        answeredIn = this.clocks.monotonic() - at;
        // Answered later than the next renewal was due: the next one goes now, over the connection that
        // has just proved alive and is free again. On a slow link the renewals due meanwhile found no free
        // connection and each opened one, whose handshake costs several round trips: without this, the
        // first renewal to land after this one could come after the deadline.
        if (answeredIn > retryPeriodMs) nextAt = Math.min(nextAt, this.clocks.monotonic());
      }
      wake();
    };
    try {
      while (!signal.aborted) {
        if (left() <= 0) return 'lost';
        if (this.clocks.monotonic() >= nextAt) {
          nextAt = this.clocks.monotonic() + retryPeriodMs;
          void attempt();
        }
        // Until the next attempt is due, the deadline, or an answer (which may have moved the deadline).
        const answered = new Promise<void>((r) => {
          wake = r;
        });
        await Promise.race([answered, sleep(Math.max(0, Math.min(nextAt - this.clocks.monotonic(), left())), signal)]);
      }
      return 'stopped';
    } finally {
      inFlight.abort(new Error('leadership ended'));
    }
  }

  /**
   * One renewal that cannot conflict with another of ours in flight: a JSON patch of renewTime guarded by a
   * test that the Lease still names this replica, which the API server applies atomically to the stored
   * Lease (no resourceVersion needed). Refused (the Lease gone, or naming another holder: a takeover, or
   * etcd restored from a backup), the Lease is read and judged as when campaigning.
   */
  private async renewByPatch(signal: AbortSignal): Promise<boolean> {
    const sentAt = this.clocks.monotonic();
    try {
      await this.patchWhileHolder([], signal);
      // An older renewal answered late must not move it back.
      this.renewedAt = Math.max(this.renewedAt, sentAt);
      return true;
    } catch (e) {
      if (signal.aborted) return false;
      this.log?.debug({ err: errorMessage(e) }, 'lease renewal refused; reading the lease');
      return this.tryAcquireOrRenew(signal);
    }
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
      await this.client.update(Leases, { ...lease, spec: spec(lease.spec) }, { signal });
      this.renewedAt = now;
    };
    try {
      let lease: Lease;
      try {
        lease = await this.client.get(Leases, name, namespace, signal);
      } catch (e) {
        if (!isNotFound(e)) throw e;
        await this.client.create(Leases, { metadata: { name, namespace }, spec: spec() }, { signal });
        this.renewedAt = now;
        this.observed = { record: identity, at: this.clocks.monotonic() };
        return true;
      }
      const holder = lease.spec?.holderIdentity ?? '';
      const record = JSON.stringify([holder, lease.spec?.renewTime, lease.spec?.leaseTransitions]);
      // Seen when the answer came, not when the read was sent: a renewal sent after this read was may have
      // landed before the read did, and the holder counts its deadline from its renewal's sending.
      const answeredAt = this.clocks.monotonic();
      if (this.observed?.record !== record) this.observed = { record, at: answeredAt };
      const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
      const expired = this.observed.at + durationMs <= answeredAt;
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
      await write(lease);
      return true;
    } catch (e) {
      if (!isConflict(e)) this.log?.warn({ err: errorMessage(e) }, 'lease acquire/renew failed');
      return false;
    }
  }

  /**
   * Gives the lease up so that a standby takes over at once instead of after leaseDuration: one JSON patch
   * that names no holder, applied only while the Lease names this replica (as a renewal is guarded), so it
   * can never take the lease from another holder. Refused (another holder, the Lease gone), it changes
   * nothing; unanswered within `withinMs`, it is abandoned.
   */
  private async release(withinMs: number): Promise<void> {
    try {
      await this.patchWhileHolder(
        [
          { op: 'add', path: '/spec/holderIdentity', value: null },
          { op: 'add', path: '/spec/leaseDurationSeconds', value: 1 },
        ],
        AbortSignal.timeout(withinMs),
      );
      this.log?.info('released the lease');
    } catch (e) {
      this.log?.warn({ err: errorMessage(e) }, 'lease not released');
    }
  }

  /**
   * A JSON patch of the Lease that the API server applies, atomically, only while the Lease names this
   * replica (a `test` of holderIdentity first), with renewTime set to now: a renewal, or with `ops` a release.
   */
  private async patchWhileHolder(ops: { op: 'add'; path: string; value: unknown }[], signal: AbortSignal): Promise<void> {
    const { namespace, name, identity } = this.config;
    await this.client.patch(
      Leases,
      name,
      [
        { op: 'test', path: '/spec/holderIdentity', value: identity },
        ...ops,
        { op: 'add', path: '/spec/renewTime', value: microTime(this.clocks.wall()) },
      ],
      { namespace, type: 'json', signal },
    );
  }
}
