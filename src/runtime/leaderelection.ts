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
  /** A leader that could not renew for this long gives up leadership. */
  renewDeadlineMs: number;
  /** Between attempts to acquire or renew. */
  retryPeriodMs: number;
}

export const defaultLeaderElection = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/**
 * Lease-based leader election, as client-go does it. Whether another holder's lease expired is judged by
 * when *we* last saw its record change, never by comparing our clock with the holder's timestamps.
 */
export class LeaderElector {
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  /** The Lease as our last write left it, and when: a leader renews it in one request while it is valid. */
  private held: { lease: Lease; at: number } | undefined;

  private readonly client: KubeClient;
  private readonly config: LeaderElectionConfig;
  private readonly log: Logger | undefined;

  constructor(client: KubeClient, config: LeaderElectionConfig, log?: Logger) {
    this.client = client;
    this.config = config;
    this.log = log;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until leadership is won, runs `lead(signal)` while it holds the lease, and answers when
   * leadership ends: the outer signal aborted (the lease is then released for a fast hand-over) or
   * renewal failed past the deadline (the lead signal aborts at once; the lease is left to expire).
   */
  async run(signal: AbortSignal, lead: (leadSignal: AbortSignal) => Promise<void>): Promise<'stopped' | 'lost'> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await sleep(this.config.retryPeriodMs, signal);
    }
    if (signal.aborted) return 'stopped';
    this.leading = true;
    this.log?.info({ lease: `${this.config.namespace}/${this.config.name}`, identity: this.config.identity }, 'became leader');
    const leadController = new AbortController();
    const leadDone = lead(leadController.signal).catch((e) => this.log?.error({ err: errorMessage(e) }, 'leader work failed'));
    let outcome: 'stopped' | 'lost' = 'stopped';
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await sleep(this.config.retryPeriodMs, signal);
      if (signal.aborted) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = Date.now();
      } else if (Date.now() - lastRenew >= this.config.renewDeadlineMs) {
        outcome = 'lost';
        break;
      }
    }
    this.leading = false;
    leadController.abort(new Error(outcome === 'lost' ? 'leadership lost' : 'stopping'));
    await leadDone;
    if (outcome === 'lost') this.log?.warn('could not renew the lease in time; stopped leading');
    else await this.release();
    return outcome;
  }

  /** One attempt; answers whether we hold the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.config;
    const now = Date.now();
    const spec = (prev?: Lease['spec']): Lease['spec'] => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: prev?.holderIdentity === identity && prev.acquireTime ? prev.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (prev?.holderIdentity && prev.holderIdentity !== identity ? 1 : 0),
    });
    const write = (lease: Lease) =>
      this.client.update(Leases, { ...lease, spec: spec(lease.spec) }, { signal: AbortSignal.timeout(this.config.renewDeadlineMs) });
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
        if (!isConflict(e)) this.log?.debug({ err: errorMessage(e) }, 'lease renewal from the last write failed; reading it');
      }
    }
    try {
      let lease: Lease;
      try {
        lease = await this.client.get(Leases, name, namespace, AbortSignal.timeout(this.config.renewDeadlineMs));
      } catch (e) {
        if (!isNotFound(e)) throw e;
        const created = await this.client.create(Leases, { metadata: { name, namespace }, spec: spec() });
        this.observed = { record: identity, at: Date.now() };
        this.held = { lease: created, at: now };
        return true;
      }
      const holder = lease.spec?.holderIdentity ?? '';
      const record = JSON.stringify([holder, lease.spec?.renewTime, lease.spec?.leaseTransitions]);
      if (this.observed?.record !== record) this.observed = { record, at: now };
      const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
      const expired = this.observed.at + durationMs <= now;
      if (holder && holder !== identity && !expired) return false;
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
      const lease = await this.client.get(Leases, this.config.name, this.config.namespace);
      if (lease.spec?.holderIdentity !== this.config.identity) return;
      await this.client.update(Leases, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime(Date.now()) },
      });
      this.log?.info('released the lease');
    } catch (e) {
      this.log?.warn({ err: errorMessage(e) }, 'could not release the lease');
    }
  }
}
